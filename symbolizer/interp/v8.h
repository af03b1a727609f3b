/* SPDX-License-Identifier: Apache-2.0 */
/*
 * V8's reader (Node.js): finds node or libnode among a process's mappings,
 * reads the layout V8 describes in it (v8_elf.h) and sends the row its eBPF
 * walker (bpf/v8.bpf.h) steps through JavaScript frames with: the builtins
 * in the file, their copy in the code range (where the running V8 says it
 * uses them from), and the code range (the process's anonymous executable
 * mappings). It names the frames the walker recorded: an interpreted frame
 * by its function and its bytecode's line; a compiled frame by the
 * functions at its pc (the innermost inlined one first, from the Code's
 * deoptimization data) and their lines; a frame known only by its function,
 * by the function and its first line. Functions and Code objects are read
 * at sample time (warm): V8's garbage collector moves and frees them, and a
 * frame whose object changed since the sample (its checksum) is unnamed.
 *
 * Statistics: v8.processes, v8.frames_{named,interpreted,compiled,function,
 * inlined,stale,unreadable}, markers, reads.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_V8_H
#define EMBER_SYMBOLIZER_INTERP_V8_H

#include "symbolizer/interp/interp_ops.h"

#define EMBER_V8_MAX_FILES     64
#define EMBER_V8_MAX_TRACKED   EMBER_INTERP_MAX_PROCS
#define EMBER_V8_CACHE_ENTRIES 65536
#define EMBER_V8_CACHE_BYTES   (64u << 20)
#define EMBER_V8_FILE_RETRY_NS (30ull * 1000000000ull) /* a file that could not be opened */
#define EMBER_V8_CODE_RANGE    (1024ull << 20)         /* the code range's span the row takes */

extern const struct ember_interp_ops ember_v8_ops;

#endif
