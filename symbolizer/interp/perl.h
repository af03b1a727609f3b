/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Perl processes, from detection to named frames: the reader of
 * EMBER_RUNTIME_PERL behind the interpreters' registry (interp.h).
 *
 * Detection: when a process's maps are read (at exec, and when its samples
 * show the unwinder lacked tables), the files it maps that could hold the
 * interpreter (its executable: Debian's perl holds it; files named *perl*,
 * such as libperl.so) and glibc (libc.so: where pthread keys' values lie)
 * are looked at once per file (perl_elf.h, cached by device and inode). A
 * process with a Perl ember can walk gets a row for the eBPF walker
 * (bpf/perl.h), sent to the collector, which checks and loads it; one ember
 * cannot walk (a build without threads, another version, another C
 * library) is said once in the log; a process that stops being one (exec,
 * exit) loses its row.
 *
 * Frames: a sample's Perl frames (CV or COP, line, checksum) are named by
 * reading the process's memory through the broker's /proc/PID/mem
 * descriptor (perl_frames.h) at sample time, before a string eval's COPs or
 * an anonymous sub's CV are freed, into a cache keyed by process, address
 * and checksum, dropped at the process's exec and exit and bounded in
 * entries and bytes. A checksum that differs from the structure's now means
 * it was freed and its memory reused: the frame stays unnamed rather than
 * misnamed.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PERL_H
#define EMBER_SYMBOLIZER_INTERP_PERL_H

#include "symbolizer/interp/interp_ops.h"

#define EMBER_PERL_MAX_FILES     1024
#define EMBER_PERL_MAX_TRACKED   EMBER_INTERP_MAX_PROCS
#define EMBER_PERL_CACHE_ENTRIES 65536
#define EMBER_PERL_CACHE_BYTES   (16u << 20)
#define EMBER_PERL_FILE_RETRY_NS (30ull * 1000000000ull) /* a file that could not be opened */

/* The Perl reader (interp_ops.h), listed in interp.c's registry. */
extern const struct ember_interp_ops ember_perl_ops;

#endif
