// SPDX-License-Identifier: Apache-2.0
/*
 * The code-object reader on hostile memory: the input is a process's memory
 * from address 0x10000 on; its first byte picks the layout (3.6 to 3.12
 * from the table, or a 3.13 layout from _Py_DebugOffsets at the start of the
 * input). Code objects are read at the input's first addresses, with and
 * without type checks (the types at fixed addresses inside the input), and
 * the lines of the tables read are looked up.
 */
#include <stdint.h>
#include <stdlib.h>

#include "symbolizer/interp/python_code.h"
#include "symbolizer/interp/python_lines.h"
#include "tests/fuzz/fuzz_mem.h"

#define BASE FUZZ_MEM_BASE

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_mem m = {data, size};
	struct ember_py_layout l;
	struct ember_py_types checked = {BASE + 8, BASE + 16, BASE + 24}, none = {0};

	if (size < 2)
		return 0;
	if (data[0] % 8 == 7) {
		if (ember_py_layout_from_debug(data + 1, size - 1, &l))
			return 0;
	} else if (ember_py_layout_for(3, 6 + data[0] % 8, &l)) {
		return 0;
	}
	for (uint64_t at = BASE; at < BASE + size && at < BASE + 4096; at += 8) {
		for (int t = 0; t < 2; t++) {
			struct ember_py_code c;
			int32_t line;

			if (ember_py_read_code(&l, t ? &checked : &none, fuzz_mem_read, &m, at, &c))
				continue;
			for (int64_t off = -2; off < 64; off += 2)
				ember_py_line(l.lines, c.linetable, c.linetable_len, c.firstlineno,
				              off, &line);
			ember_py_code_free(&c);
		}
	}
	return 0;
}
