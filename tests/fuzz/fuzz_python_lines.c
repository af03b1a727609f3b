// SPDX-License-Identifier: Apache-2.0
/*
 * CPython's line tables: the input is one table; its first byte picks the
 * format (co_lnotab, the 3.10 co_linetable, the 3.11+ location table) and
 * every byte offset up to twice the table's length is looked up.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/interp/python_lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *table;
	int32_t line;

	if (size < 1)
		return 0;
	/* A copy of exactly the table's bytes: a read past them is a finding. */
	table = malloc(size - 1 ? size - 1 : 1);
	if (!table)
		return 0;
	memcpy(table, data + 1, size - 1);
	for (int64_t off = -2; off < 2 * (int64_t)size + 4; off += 2)
		ember_py_line(EMBER_PY_LINES_LNOTAB + data[0] % 3, table, size - 1,
		              (int32_t)(data[0] * 1000), off, &line);
	free(table);
	return 0;
}
