/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPython processes, from detection to named frames: the reader of
 * EMBER_RUNTIME_PYTHON behind the interpreters' registry (interp.h).
 *
 * Detection: when a process's maps are read (at exec, and when its samples
 * show the unwinder lacked tables), the files it maps that could hold an
 * interpreter (its executable, files named *python*) and its C library are
 * looked at once per file (python_elf.h, cached by device and inode). A
 * process with a CPython ember can walk and glibc's key slots gets a row
 * for the eBPF walker (bpf/python.h), sent to the collector, which checks
 * and loads it; a process that stops being one (exec, exit) loses it.
 *
 * Frames: a sample's Python frames (code object address, instruction
 * offset, checksum) are resolved by reading the code object through the
 * broker's /proc/PID/mem descriptor (python_code.h), into a cache keyed by
 * process, address and checksum, dropped at the process's exec and exit
 * and bounded in entries and bytes. A checksum that differs from the
 * object's now means it was freed and its memory reused: the frame stays
 * unnamed rather than misnamed. Lines come from the cached line table.
 *
 * Every byte read from a process is hostile (see python_code.h); every
 * file too (python_elf.h). Reads are bounded in size; the descriptor reads
 * only what the process maps.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PYTHON_H
#define EMBER_SYMBOLIZER_INTERP_PYTHON_H

#include "symbolizer/interp/interp_ops.h"

#define EMBER_PY_MAX_FILES     4096
#define EMBER_PY_MAX_TRACKED   EMBER_PY_MAX_PROCS
#define EMBER_PY_CACHE_ENTRIES 65536
#define EMBER_PY_CACHE_BYTES   (32u << 20)
#define EMBER_PY_FILE_RETRY_NS (30ull * 1000000000ull) /* a file that could not be opened */

/* The CPython reader (interp_ops.h), listed in interp.c's registry. */
extern const struct ember_interp_ops ember_python_ops;

#endif
