// SPDX-License-Identifier: Apache-2.0
/*
 * HotSpot's compressed line number tables and UNSIGNED5 numbers on hostile
 * bytes: the input's first byte picks the encoding (byte 0 left out or
 * not) and the bytecode index looked up; the rest is the table, which must
 * never be read past, and whose length, when it has one, lies in it.
 */
#include <stdint.h>
#include <stdlib.h>

#include "symbolizer/interp/jvm_lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_jvm_stream s;
	unsigned int x;
	int32_t line;
	size_t len;

	if (size < 1)
		return 0;
	x = data[0] & 1;
	ember_jvm_line_of(data + 1, size - 1, x, data[0] >> 1, &line);
	ember_jvm_line_of(data + 1, size - 1, x, UINT32_MAX, &line);
	len = ember_jvm_lines_len(data + 1, size - 1, x);
	if (len > size - 1)
		abort();
	s = (struct ember_jvm_stream){data + 1, data + size, x, false};
	while (!s.bad)
		ember_jvm_read_sint(&s);
	if (s.p > data + size)
		abort();
	return 0;
}
