/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flat statistics per function, as `pprof -top` shows them: self (samples
 * whose leaf is the function) and total (samples with the function anywhere
 * on the stack, counted once however often it recurses), for both slots of a
 * frame tree. `ember top` prints them; `ember diff` ranks the changes.
 */
#ifndef EMBER_SYMBOLIZER_PROFILE_TOP_H
#define EMBER_SYMBOLIZER_PROFILE_TOP_H

#include <stdio.h>

#include "symbolizer/profile/flame_tree.h"

struct ember_func_stat {
	uint32_t name; /* tree string */
	uint8_t kind;  /* of the first frame seen with this name */
	uint8_t reserved[3];
	uint64_t self[EMBER_FLAME_SLOTS];
	uint64_t total[EMBER_FLAME_SLOTS];
};

enum ember_top_order {
	EMBER_TOP_BY_SELF,
	EMBER_TOP_BY_TOTAL,
	EMBER_TOP_BY_CHANGE, /* |change of self share|, then |change of total share| */
};

/*
 * Computes one entry per function name (the "all" and process nodes are not
 * functions) in a malloc'd array sorted by order. The tree must be finished.
 */
int ember_top_compute(const struct ember_flame *t, enum ember_top_order order,
                      struct ember_func_stat **out, size_t *n);

/* share of slot: value / slot total (0 when the slot is empty). */
double ember_top_share(const struct ember_flame *t, int slot, uint64_t value);

struct ember_top_opts {
	size_t limit; /* rows printed */
	enum ember_top_order order;
};

/*
 * Prints the header (samples, duration, lost) and a table of the first
 * limit functions of slot 0, like `pprof -top`.
 */
int ember_top_print(const struct ember_flame *t, const struct ember_profile *p,
                    const struct ember_top_opts *o, FILE *out);

#endif
