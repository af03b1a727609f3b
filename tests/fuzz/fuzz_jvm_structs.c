// SPDX-License-Identifier: Apache-2.0
/*
 * HotSpot's self-description tables on hostile memory: the input is a JVM's
 * memory from address 0x10000 on. Its first ten 8-byte words stand where
 * libjvm's variables about the tables are (gHotSpotVMStructs, the struct
 * entries' stride and name, value and address offsets, gHotSpotVMTypes, the
 * type entries' stride, name and size offsets); both tables are read from
 * wherever those say, matched against the pairs the JVM reader asks for.
 */
#include <stdint.h>
#include <stdlib.h>

#include "symbolizer/interp/jvm_structs.h"
#include "tests/fuzz/fuzz_mem.h"

#define BASE FUZZ_MEM_BASE

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct ember_jvm_table_vars vars = {
	    BASE,      BASE + 8,  BASE + 16, BASE + 24, BASE + 32,
	    BASE + 40, BASE + 48, BASE + 56, BASE + 64, BASE + 72,
	};
	static const struct ember_jvm_want want[] = {
	    {"CodeBlob", "_name"},  {"CodeBlob", "_frame_size"}, {"CodeCache", "_heaps"},
	    {"nmethod", "_method"}, {"CodeBlob", NULL},          {"nmethod", NULL},
	};
	struct ember_jvm_found found[sizeof(want) / sizeof(want[0])];
	struct fuzz_mem m = {data, size};
	struct ember_jvm_table structs, types;
	size_t n = sizeof(want) / sizeof(want[0]);

	if (ember_jvm_tables_locate(&vars, fuzz_mem_read, &m, &structs, &types))
		return 0;
	if (!ember_jvm_table_read(&structs, fuzz_mem_read, &m, want, n, found))
		for (size_t i = 0; i < n; i++)
			if (found[i].found && !want[i].field)
				abort(); /* a size from the structs table */
	if (!ember_jvm_table_read(&types, fuzz_mem_read, &m, want, n, found))
		for (size_t i = 0; i < n; i++)
			if (found[i].found && (want[i].field || found[i].is_address))
				abort(); /* a field or an address from the types table */
	return 0;
}
