/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names PHP frames from a process's memory: a zend_function (what the eBPF
 * walker records, bpf/php.h) gives its name as PHP's own backtraces write
 * it, "Shop\Cart::handle" for a method (its class's name, "::", its name),
 * "{closure}" or "Shop\Cart::{closure}" for a closure, "str_repeat" for a
 * function, internal or not; file-scope code (a script, an included file,
 * eval'd code) has no function name and is named by its file, as Excimer
 * names it. User code also gives its file and first line, and every
 * function the checksum the walker computed, which tells a function freed
 * and reused since the sample.
 *
 * Memory comes through a read callback (the process's /proc/PID/mem in the
 * symbolizer, a buffer in tests and fuzzing). Everything read is hostile: a
 * function's type, a class's type and a string's type must be what PHP
 * writes (-EBADMSG otherwise), strings are capped; memory that cannot be
 * read is -EFAULT.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PHP_FRAMES_H
#define EMBER_SYMBOLIZER_INTERP_PHP_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/php_layout.h"

#define EMBER_PHP_MAX_STRING 4096 /* bytes of a function, class or file name */

/* Reads len bytes at addr into buf: 0, or a negative errno. */
typedef int (*ember_php_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

struct ember_php_func {
	uint32_t checksum;  /* what the walker computes from the function's window */
	uint8_t type;       /* EMBER_PHP_FUNC_* */
	int32_t line_start; /* user code's first line; 0 for an internal function */
	char *name;
	char *file; /* user code's; NULL for an internal function */
};

/*
 * Reads and names the zend_function at addr. Returns 0, -EFAULT when memory
 * cannot be read, -EBADMSG when it is not a function of this layout, -ENOMEM.
 * On success out owns memory: ember_php_func_free.
 */
int ember_php_read_func(const struct ember_php_layout *l, ember_php_read_fn read, void *ctx,
                        uint64_t addr, struct ember_php_func *out);
void ember_php_func_free(struct ember_php_func *f);

/*
 * The zend_string at addr, at most max (<= EMBER_PHP_MAX_STRING) bytes, in a
 * malloc'd C string (each NUL byte as '?'). 0, -EFAULT, -EBADMSG (not a
 * string, longer than max), -ENOMEM.
 */
int ember_php_read_string(const struct ember_php_layout *l, ember_php_read_fn read, void *ctx,
                          uint64_t addr, size_t max, char **out);

#endif
