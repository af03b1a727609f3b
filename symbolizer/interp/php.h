/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PHP processes, from detection to named frames: the reader of
 * EMBER_RUNTIME_PHP behind the interpreters' registry (interp.h).
 *
 * Detection: when a process's maps are read (at exec, and when its samples
 * show the unwinder lacked tables), the files it maps that could hold the
 * engine (its executable: php, php-fpm, php-cgi; files named *php*, such as
 * libphp.so) are looked at once per file (php_elf.h, cached by device and
 * inode). A process with a PHP ember can walk gets a row for the eBPF
 * walker (bpf/php.h), sent to the collector, which checks and loads it; one
 * ember cannot walk (a thread-safe build, another version) is said once in
 * the log; a process that stops being one (exec, exit) loses its row.
 *
 * Frames: a sample's PHP frames (zend_function, line, checksum) are named by
 * reading the process's memory through the broker's /proc/PID/mem
 * descriptor (php_frames.h) at sample time, before php-fpm frees a request's
 * functions, into a cache keyed by process, function and checksum, dropped
 * at the process's exec and exit and bounded in entries and bytes. A checksum that
 * differs from the function's now means it was freed and its memory
 * reused: the frame stays unnamed rather than misnamed.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PHP_H
#define EMBER_SYMBOLIZER_INTERP_PHP_H

#include "symbolizer/interp/interp_ops.h"

#define EMBER_PHP_MAX_FILES     1024
#define EMBER_PHP_MAX_TRACKED   EMBER_INTERP_MAX_PROCS
#define EMBER_PHP_CACHE_ENTRIES 65536
#define EMBER_PHP_CACHE_BYTES   (16u << 20)
#define EMBER_PHP_FILE_RETRY_NS (30ull * 1000000000ull) /* a file that could not be opened */

/* The PHP reader (interp_ops.h), listed in interp.c's registry. */
extern const struct ember_interp_ops ember_php_ops;

#endif
