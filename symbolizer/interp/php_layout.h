/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the Zend engine keeps what a profiler reads: the executor globals'
 * current call frame; a call frame's (zend_execute_data) opline, function,
 * call info and caller; a function's (zend_function) type, name, class,
 * file, lines, opcodes and handler; a class's name; a string's length and
 * bytes; an opline's line. A table per version (x86-64, non-thread-safe
 * builds), written from the runtime's headers and checked against the
 * machine code of the build named beside each row.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PHP_LAYOUT_H
#define EMBER_SYMBOLIZER_INTERP_PHP_LAYOUT_H

#include <stdint.h>

#include "bpf/php.h"

struct ember_php_layout {
	uint8_t major, minor;
	uint16_t eg_current_ex; /* executor_globals.current_execute_data */
	/* The walk (copied into struct ember_php_proc). */
	uint8_t ex_read, ex_opline, ex_func, ex_call_info, ex_prev;
	uint8_t fn_read, fn_type, fn_name, fn_scope, fn_handler;
	uint8_t fn_opcodes, fn_last, fn_filename, fn_lines;
	uint8_t op_size, op_lineno;
	/* What only the symbolizer reads. */
	uint16_t class_read, class_type, class_name; /* zend_class_entry */
	/* zend_string: gc.u.type_info, h (the text's hash), len, val */
	uint16_t string_info, string_hash, string_len, string_val;
};

/* The layout of PHP major.minor from the built-in table: 0 or -ENOTSUP. */
int ember_php_layout_for(unsigned int major, unsigned int minor, struct ember_php_layout *out);

#endif
