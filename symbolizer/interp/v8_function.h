/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What V8 knows of a function and its script, read from the process's heap
 * (v8_heap.h): the name V8 gives the function (its own, else the name V8
 * inferred for it, else "(anonymous)"), where it starts and ends in its
 * script, and the script's name and line ends, so that a position becomes a
 * line.
 *
 * A compiled function keeps its name and positions in its ScopeInfo, whose
 * slots after the context locals are optional by flags: the readers tell
 * them by their types (a name is a String, an index or a position a Smi)
 * and take a position pair only when both are Smis in order, so that no
 * flag layout of a V8 version is assumed.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_V8_FUNCTION_H
#define EMBER_SYMBOLIZER_INTERP_V8_FUNCTION_H

#include <stdint.h>

#include "symbolizer/interp/v8_heap.h"

#define EMBER_V8_MAX_NAME      512         /* bytes of a function's name kept */
#define EMBER_V8_MAX_PATH      1024        /* bytes of a script's name kept */
#define EMBER_V8_MAX_LINES     (1u << 20)  /* line ends of a script kept */
#define EMBER_V8_MAX_SOURCE    (16u << 20) /* UTF-16 units of a source scanned for lines */
#define EMBER_V8_MAX_LOCALS    4096        /* a ScopeInfo's context locals */
#define EMBER_V8_INLINED_NAMES 75          /* locals whose names sit inline, not hashed */

/* A function: its SharedFunctionInfo's name, script and positions. */
struct ember_v8_function {
	char *name;         /* malloc'd */
	uint64_t script;    /* tagged; 0: none (a builtin) */
	int32_t start, end; /* offsets in the script; -1: not known */
};

/* A script: its name and where its lines end. */
struct ember_v8_script {
	char *name;    /* malloc'd; "" for a script without one */
	int32_t *ends; /* malloc'd: offsets of its line terminators, ascending */
	uint32_t nends;
};

/* Reads the function whose SharedFunctionInfo is at sfi (untagged): 0, -ENOMEM, or why not
 * (-EINVAL: not a SharedFunctionInfo now; -EFAULT). */
int ember_v8_function_read(const struct ember_v8_heap *h, uint64_t sfi,
                           struct ember_v8_function *out);
void ember_v8_function_free(struct ember_v8_function *f);

/* Reads the script at tagged: its name, and its line ends (V8's own when it computed them,
 * else counted from the source as V8 counts them). 0, -ENOMEM, or why not. */
int ember_v8_script_read(const struct ember_v8_heap *h, uint64_t tagged,
                         struct ember_v8_script *out);
void ember_v8_script_free(struct ember_v8_script *s);

/* The 1-based line of offset in the script; 0 for a negative offset. */
int32_t ember_v8_script_line(const struct ember_v8_script *s, int32_t offset);

#endif
