/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ruby processes, from detection to named frames: the reader of
 * EMBER_RUNTIME_RUBY behind the interpreters' registry (interp.h).
 *
 * Detection: when a process's maps are read (at exec, and when its samples
 * show the unwinder lacked tables), the files it maps that could hold the
 * interpreter (its executable, files named *ruby*) and the dynamic linker
 * are looked at once per file (ruby_elf.h, cached by device and inode). A
 * process with a Ruby ember can walk and glibc's thread vector gets a row
 * for the eBPF walker (bpf/ruby.h), sent to the collector, which checks and
 * loads it; a process that stops being one (exec, exit) loses it.
 *
 * Frames: a sample's Ruby frames (iseq body or method entry, instruction
 * index, checksum) are resolved by reading the process's memory through the
 * broker's /proc/PID/mem descriptor (ruby_frames.h) at sample time, into a
 * cache keyed by process, address and checksum, dropped at the process's
 * exec and exit and bounded in entries and bytes. A checksum that differs
 * from the structure's now means it was freed and its memory reused: the
 * frame stays unnamed rather than misnamed.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_RUBY_H
#define EMBER_SYMBOLIZER_INTERP_RUBY_H

#include "symbolizer/interp/interp_ops.h"

#define EMBER_RB_MAX_FILES      1024
#define EMBER_RB_MAX_TRACKED    EMBER_INTERP_MAX_PROCS
#define EMBER_RB_CACHE_ENTRIES  65536
#define EMBER_RB_CACHE_BYTES    (32u << 20)
#define EMBER_RB_FILE_RETRY_NS  (30ull * 1000000000ull) /* a file that could not be opened */
#define EMBER_RB_CLASS_RETRY_NS (100ull * 1000000ull)   /* a class that could not be read, */
#define EMBER_RB_CLASS_TRIES    8                       /* after this many tries at once */

/* The Ruby reader (interp_ops.h), listed in interp.c's registry. */
extern const struct ember_interp_ops ember_ruby_ops;

#endif
