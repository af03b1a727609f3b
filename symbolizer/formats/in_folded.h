/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads folded stacks ("comm;outermost;...;leaf COUNT" per line, as ember,
 * flamegraph.pl's stackcollapse scripts and many profilers write them) into
 * a profile. The input is untrusted: lines that do not parse, are longer
 * than EMBER_FOLDED_MAX_LINE or deeper than EMBER_FOLDED_MAX_DEPTH are
 * skipped and counted in the statistic "report.bad_lines".
 *
 * The first field is the process name. Frames may carry the kind suffixes of
 * the stackcollapse scripts: "_[k]" kernel, "_[j]" JIT, "_[i]" inlined.
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_IN_FOLDED_H
#define EMBER_SYMBOLIZER_FORMATS_IN_FOLDED_H

#include <stddef.h>

#include "symbolizer/profile/profile.h"

#define EMBER_FOLDED_MAX_LINE  (1u << 20)
#define EMBER_FOLDED_MAX_DEPTH 4096
/* One line's count; also keeps the sum of all counts far from overflowing. */
#define EMBER_FOLDED_MAX_COUNT (1ull << 48)

/* Adds the stacks in buf (len bytes) to p, an initialised profile. */
int ember_read_folded(struct ember_profile *p, const char *buf, size_t len);

#endif
