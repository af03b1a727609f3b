// SPDX-License-Identifier: Apache-2.0
/*
 * The PHP frame reader on hostile memory: the input is a process's memory
 * from address 0x10000 on, laid out as PHP 8.2 (the only layout). Functions
 * (with their names, classes and files) are read at each of the input's
 * first 2 KiB of 8-aligned addresses, strings at each of its first 1 KiB.
 */
#include <stdint.h>
#include <stdlib.h>

#include "symbolizer/interp/php_frames.h"
#include "tests/fuzz/fuzz_mem.h"

#define BASE FUZZ_MEM_BASE

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_mem m = {data, size};
	struct ember_php_layout l;
	struct ember_php_func f;
	char *s;

	if (ember_php_layout_for(8, 2, &l))
		abort();
	for (uint64_t at = 0; at < size && at < 2048; at += 8)
		if (!ember_php_read_func(&l, fuzz_mem_read, &m, BASE + at, &f))
			ember_php_func_free(&f);
	for (uint64_t at = 0; at < size && at < 1024; at++)
		if (!ember_php_read_string(&l, fuzz_mem_read, &m, BASE + at, EMBER_PHP_MAX_STRING,
		                           &s))
			free(s);
	return 0;
}
