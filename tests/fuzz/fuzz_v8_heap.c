// SPDX-License-Identifier: Apache-2.0
/*
 * V8's heap readers on hostile memory: the input is a process's memory from
 * address 0x10000 on, read with the layout of Node 20's V8 (11.3; bytecode
 * sizes made up). At each of its first 2 KiB of addresses: a
 * SharedFunctionInfo (name, script, positions), a Script (name, line ends:
 * ascending), a Code (its function, position table, inlined functions; the
 * functions at every pc offset, at most the scopes asked for, each with a
 * function; a baseline Code's bytecode offsets, inside its bytecodes), a
 * function's bytecode position table, a string (UTF-8, within its buffer);
 * the Code found for the input's last byte by looking back for a header (it
 * holds that byte); the position table decoder and the line counter on the
 * input's bytes themselves.
 */
#include <stdlib.h>
#include <string.h>

#include "symbolizer/interp/v8_code.h"
#include "symbolizer/interp/v8_function.h"
#include "tests/fuzz/fuzz_mem.h"

#define BASE FUZZ_MEM_BASE

static struct ember_v8_layout node20 = {
    .smi_shift_size = 31,
    .heap_object_tag_mask = 3,
    .first_nonstring_type = 128,
    .string_encoding_mask = 8,
    .string_representation_mask = 7,
    .one_byte_string_tag = 8,
    .seq_string_tag = 0,
    .cons_string_tag = 1,
    .sliced_string_tag = 3,
    .thin_string_tag = 5,
    .map_instance_type = 12,
    .type_sfi = 262,
    .type_script = 167,
    .type_scope_info = 261,
    .type_bytecode_array = 191,
    .type_code = 245,
    .type_fixed_array = 175,
    .type_trusted_fixed_array = 175,
    .type_byte_array = 190,
    .type_trusted_byte_array = 190,
    .fp_marker = -8,
    .fp_function = -16,
    .fp_bytecode_array = -32,
    .fp_bytecode_offset = -40,
    .fn_shared = 24,
    .fn_code = 48,
    .sfi_name_or_scope_info = 16,
    .sfi_function_data = 8,
    .sfi_script = 32,
    .script_name = 16,
    .script_source = 8,
    .script_line_ends = 56,
    .code_instruction_start = 40,
    .code_instruction_size = 56,
    .code_flags = 48,
    .code_kind_mask = 15,
    .code_kind_shift = 0,
    .code_kind_baseline = 11,
    .code_deopt_data = 16,
    .code_position_table = 24,
    .bytecode_data = 54,
    .bytecode_position_table = 32,
    .fixed_array_length = 8,
    .fixed_array_data = 16,
    .string_length = 12,
    .seq_chars = 16,
    .cons_first = 16,
    .cons_second = 24,
    .thin_actual = 16,
    .sliced_parent = 16,
    .sliced_offset = 24,
    .scope_info_first_vars = 3,
    .scope_info_ncontext_locals = 2,
    .deopt_sfi_index = 6,
    .deopt_literals_index = 2,
    .deopt_inlining_index = 7,
    .code_start_inline = 0,
    .version = {11, 3, 244},
};

static void read_code(const struct ember_v8_heap *h, uint64_t at)
{
	struct ember_v8_scope sc[4];
	struct ember_v8_code c;

	if (ember_v8_code_read(h, at, &c))
		return;
	for (uint32_t off = 0; off <= 64 && c.baseline; off++)
		if (ember_v8_baseline_offset(h->l, &c, off * (c.size / 64 + 1)) >=
		        (int32_t)c.nbytes &&
		    c.nbytes)
			abort();
	for (uint32_t off = 0; off <= 64; off++) {
		int n = ember_v8_code_scopes(&c, off * (c.size / 64 + 1), sc, 4);

		if (n < 0 || n > 4)
			abort();
		for (int i = 0; i < n && c.sfi; i++)
			if (i == n - 1 && sc[i].sfi != c.sfi)
				abort();
	}
	ember_v8_code_free(&c);
}

static void read_script(const struct ember_v8_heap *h, uint64_t at)
{
	struct ember_v8_script s;

	if (ember_v8_script_read(h, at + 1, &s))
		return;
	for (uint32_t i = 1; i < s.nends; i++)
		if (s.ends[i] <= s.ends[i - 1])
			abort();
	ember_v8_script_line(&s, 100);
	ember_v8_script_free(&s);
}

/* Bytecode sizes of 1 to 4 bytes, baseline code's kind (11) in its flags. */
static void init_sizes(void)
{
	node20.nbytecodes = 200;
	for (int scale = 0; scale < 3; scale++)
		for (int op = 0; op < 200; op++)
			node20.bytecode_sizes[scale][op] = (uint8_t)(1 + (op + scale) % 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_mem m = {data, size};
	const struct ember_v8_heap h = {&node20, fuzz_mem_read, &m};
	struct ember_v8_code found;
	uint64_t map;
	int32_t ends[64];
	size_t nends = 0;
	uint16_t units[256];
	uint64_t raw;
	int cr = 0;

	if (!node20.nbytecodes)
		init_sizes();

	for (uint64_t at = BASE; at < BASE + size && at < BASE + 2048; at += 8) {
		struct ember_v8_function f;
		uint8_t *table;
		uint32_t len;
		char s[64];

		if (!ember_v8_function_read(&h, at, &f)) {
			if (!f.name)
				abort();
			ember_v8_function_free(&f);
		}
		read_script(&h, at);
		read_code(&h, at);
		if (!ember_v8_bytecode_table(&h, at, &table, &len))
			free(table);
		if (!ember_v8_string(&h, at + 1, s, sizeof(s)) && strlen(s) >= sizeof(s))
			abort();
	}
	/* A Code found by a pc, the map its header has taken from the input's first word. */
	if (size >= 8) {
		memcpy(&map, data, sizeof(map));
		if (!ember_v8_code_at(&h, map, BASE + size - 1, &found)) {
			if (BASE + size - 1 < found.start ||
			    BASE + size - 1 >= found.start + found.size)
				abort();
			ember_v8_code_free(&found);
		}
	}
	ember_v8_position_at(data, size, (uint32_t)size, &raw);
	for (size_t i = 0; i < size / 2 && i < 256; i++)
		units[i] = (uint16_t)(data[2 * i] | data[2 * i + 1] << 8);
	ember_v8_line_ends_add(units, size / 2 < 256 ? size / 2 : 256, 0, ends, &nends, 64, &cr);
	for (size_t i = 1; i < nends; i++)
		if (ends[i] <= ends[i - 1])
			abort();
	return 0;
}
