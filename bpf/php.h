/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PHP (the Zend engine) frames, shared by the eBPF walker (php.bpf.h), the
 * collector (which checks every row before loading it) and the symbolizer
 * (which builds the rows and reads the frames back).
 *
 * The symbolizer works out, for one PHP process (a non-thread-safe build:
 * its executor globals are a plain global), where the interpreter loop lies
 * (execute_ex), where the engine keeps the current call frame
 * (executor_globals.current_execute_data) and where each field sits (struct
 * ember_php_proc). When the native unwinder reaches the loop, the walker
 * follows the call frames (zend_execute_data) from the current one outwards
 * through prev_execute_data, down to the frame that call of the loop started
 * with (user code whose call info has ZEND_CALL_TOP: called from C), and
 * records each as the two words of an interpreted frame (interp.h):
 *
 *   word 0: tag | zend_function type << 48 | zend_function address
 *   word 1: (u32)line << 32 | checksum of the function
 *
 * The type is the function's (EMBER_PHP_FUNC_*). User code's line is its
 * current opline's (0: unknown), its checksum (ember_interp_checksum) mixes
 * its opcodes, its file name (the zend_string's address and the hash of its
 * text) and first and last lines; an internal (C) function's mixes its name,
 * class and handler. They let the symbolizer tell a function freed and reused
 * since the sample: php-fpm frees a request's functions at its end, without
 * opcache, and the next request, of another script of the same shape, makes
 * its own at the same addresses, its file name too; only the text differs.
 *
 * Every row field is a number from the symbolizer, every frame word comes
 * from the profiled process: both are untrusted. A wrong row can only make
 * wrong frames; the verifier bounds every read.
 */
#ifndef EMBER_BPF_PHP_H
#define EMBER_BPF_PHP_H

#include "interp.h"

#define EMBER_PHP_WINDOW    192         /* bytes of one structure read at once */
#define EMBER_PHP_MAX_LOOP  (16u << 20) /* bytes of the interpreter loop */
#define EMBER_PHP_ADDR_BITS 48          /* word 0: type << 48 | address */

/* zend_function.type (zend_compile.h): user code is any type with the low bit clear. */
#define EMBER_PHP_FUNC_INTERNAL 1
#define EMBER_PHP_FUNC_USER     2
#define EMBER_PHP_FUNC_EVAL     4

/* The call info bit (in execute_data's This.u1.type_info) of a frame called from C: its
 * call of the interpreter loop started with it (zend_compile.h, 7.0 to 8.5). */
#define EMBER_PHP_CALL_TOP (1u << 17)

/*
 * One PHP process. Offsets named ex_* index a zend_execute_data, fn_* a
 * zend_function (common part, op_array or internal_function), op_* a
 * zend_op; each structure is read as one window of at most EMBER_PHP_WINDOW
 * bytes (the *_read sizes).
 */
struct ember_php_proc {
	__u64 loop_start, loop_end; /* execute_ex: [start, end) */
	__u64 current_ex;           /* &executor_globals.current_execute_data */
	__u8 ex_read, ex_opline, ex_func, ex_call_info, ex_prev;
	__u8 fn_read, fn_type, fn_name, fn_scope, fn_handler; /* fn_handler: internal functions' */
	__u8 fn_opcodes, fn_last, fn_filename, fn_lines;      /* fn_lines: line_start, line_end */
	__u8 op_size, op_lineno;
	__u8 str_hash; /* zend_string's h: the file name's, in user code's checksum */
	__u8 version;  /* major << 4 | minor, for statistics */
	__u8 reserved[6];
};

_Static_assert(sizeof(struct ember_php_proc) <= EMBER_INTERP_MAX_ROW, "a row fits a message");

#endif
