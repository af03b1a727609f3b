// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/php_layout.h"

#include <errno.h>
#include <string.h>

/*
 * PHP 8.2: offsets from 8.2's zend_globals.h, zend_compile.h and zend_types.h
 * (as the OpenTelemetry profiler's table gives them), checked against
 * Debian 12's php8.2 8.2.36 (/usr/bin/php8.2, NTS): zend_get_executed_lineno
 * reads executor_globals+0x1e8 (current_execute_data), a frame's func at
 * +0x18 and prev_execute_data at +0x30, tests func->type (byte 0) against 1
 * (internal), reads opline (+0) ->lineno (+0x18) or else op_array.opcodes
 * (+0x58)[0].lineno; zend_get_executed_filename_ex reads op_array.filename
 * at +0x98; get_active_function_name reads common.function_name at +8 and a
 * zend_string's bytes at +0x18; get_active_class_name reads common.scope at
 * +0x10 and the class's name at +8. The call info is This.u1.type_info
 * (+0x28); op_array.last (+0x50), line_start and line_end (+0xa0, +0xa4)
 * follow 8.2's struct _zend_op_array; internal_function.handler is at +0x48.
 */
static const struct ember_php_layout table[] = {
    {.major = 8,
     .minor = 2,
     .eg_current_ex = 0x1e8,
     .ex_read = 0x38,
     .ex_opline = 0,
     .ex_func = 0x18,
     .ex_call_info = 0x28,
     .ex_prev = 0x30,
     .fn_read = 0xa8,
     .fn_type = 0,
     .fn_name = 8,
     .fn_scope = 0x10,
     .fn_handler = 0x48,
     .fn_opcodes = 0x58,
     .fn_last = 0x50,
     .fn_filename = 0x98,
     .fn_lines = 0xa0,
     .op_size = 32,
     .op_lineno = 0x18,
     .class_read = 0x10,
     .class_type = 0,
     .class_name = 8,
     .string_info = 4,
     .string_hash = 8,
     .string_len = 0x10,
     .string_val = 0x18},
};

int ember_php_layout_for(unsigned int major, unsigned int minor, struct ember_php_layout *out)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].major == major && table[i].minor == minor) {
			*out = table[i];
			return 0;
		}
	memset(out, 0, sizeof(*out));
	return -ENOTSUP;
}
