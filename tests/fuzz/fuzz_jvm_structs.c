// SPDX-License-Identifier: Apache-2.0
/*
 * HotSpot's self-description tables on hostile memory: the input is a JVM's
 * memory from address 0x10000 on. Its first fourteen 8-byte words stand where
 * libjvm's variables about the tables are (gHotSpotVMStructs, the struct
 * entries' stride and name, value and address offsets; gHotSpotVMTypes, the
 * type entries' stride, name and size offsets; gHotSpotVMIntConstants, its
 * entries' stride, name and value offsets); the three tables are read from
 * wherever those say, matched against the pairs the JVM reader asks for.
 */
#include <stdint.h>
#include <stdlib.h>

#include "symbolizer/interp/jvm_structs.h"
#include "tests/fuzz/fuzz_mem.h"

#define BASE FUZZ_MEM_BASE

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct ember_jvm_table_vars sv = {BASE,      BASE + 8,  BASE + 16,
	                                               BASE + 24, BASE + 32, BASE + 40};
	static const struct ember_jvm_table_vars tv = {BASE + 48, BASE + 56, BASE + 64,
	                                               0,         BASE + 72, 0};
	static const struct ember_jvm_table_vars iv = {BASE + 80, BASE + 88,  BASE + 96,
	                                               0,         BASE + 104, 0};
	static const struct ember_jvm_want want[] = {
	    {"CodeBlob", "_name"},
	    {"CodeBlob", "_frame_size"},
	    {"CodeCache", "_heaps"},
	    {"nmethod", "_method"},
	    {"CodeBlob", NULL},
	    {"nmethod", NULL},
	    {"frame::interpreter_frame_method_offset", NULL},
	};
	struct ember_jvm_found found[sizeof(want) / sizeof(want[0])];
	struct fuzz_mem m = {data, size};
	struct ember_jvm_table structs, other;
	size_t n = sizeof(want) / sizeof(want[0]);

	if (!ember_jvm_table_locate(&sv, 8, fuzz_mem_read, &m, &structs) &&
	    !ember_jvm_table_read(&structs, fuzz_mem_read, &m, want, n, found))
		for (size_t i = 0; i < n; i++)
			if (found[i].found && !want[i].field)
				abort(); /* a size from the structs table */
	for (int k = 0; k < 2; k++) {
		if (ember_jvm_table_locate(k ? &iv : &tv, k ? 4 : 8, fuzz_mem_read, &m, &other) ||
		    ember_jvm_table_read(&other, fuzz_mem_read, &m, want, n, found))
			continue;
		for (size_t i = 0; i < n; i++)
			if (found[i].found &&
			    (want[i].field || found[i].is_address ||
			     (k && (int64_t)found[i].value != (int32_t)found[i].value)))
				abort(); /* a field, an address or a wide int from another table */
	}
	return 0;
}
