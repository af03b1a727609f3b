// SPDX-License-Identifier: Apache-2.0
/*
 * The Ruby frame reader on hostile memory: the input is a process's memory
 * from address 0x10000 on, laid out as Ruby 3.1 (the only layout), its
 * first byte's bit 0 saying whether the symbol table lies at +0x40 and bit
 * 1 whether the hidden ivars' ids are known or to be learnt. Iseq bodies
 * and Strings are read at each of the input's first 4 KiB of addresses, and
 * the lines of each body read looked up; method entries, C functions,
 * classes and symbols at the first 2 KiB.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "symbolizer/interp/ruby_frames.h"
#include "tests/fuzz/fuzz_mem.h"

#define BASE FUZZ_MEM_BASE

static void read_iseq(const struct ember_rb_layout *l, struct fuzz_mem *m, uint64_t at)
{
	struct ember_rb_iseq is;
	char *name;
	int32_t line;

	if (ember_rb_read_iseq(l, fuzz_mem_read, m, at, &is))
		return;
	/* Positions spread over the whole iseq, and past it. */
	for (uint64_t k = 0; k <= 64; k++)
		ember_rb_iseq_line(&is, (uint32_t)(k * (is.iseq_size + 1) / 64), &line);
	if (!ember_rb_iseq_name(&is, "Shop::Cart", (at & 8) != 0, &name))
		free(name);
	ember_rb_iseq_free(&is);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_mem m = {data, size};
	struct ember_rb_layout l;
	struct ember_rb_symbols syms;

	if (size < 1 || ember_rb_layout_for(3, 1, &l))
		return 0;
	ember_rb_symbols_init(&l, data[0] & 1 ? BASE + 0x40 : 0, &syms);
	if (data[0] & 2) {
		syms.classpath = 41;
		syms.tmp_classpath = 42;
	}
	for (uint64_t at = BASE; at < BASE + size && at < BASE + 4096; at += 8) {
		char *s;
		bool singleton;
		struct ember_rb_cfunc c;

		read_iseq(&l, &m, at);
		if (!ember_rb_read_string(&l, fuzz_mem_read, &m, at, EMBER_RB_MAX_STRING, &s))
			free(s);
		if (at >= BASE + 2048)
			continue;
		if (!ember_rb_read_cfunc(&l, fuzz_mem_read, &m, &syms, at, &c))
			ember_rb_cfunc_free(&c);
		if (!ember_rb_class_path(&l, fuzz_mem_read, &m, &syms, at, &s, &singleton))
			free(s);
		if (!ember_rb_method_class(&l, fuzz_mem_read, &m, &syms, at, &s, &singleton))
			free(s);
		if (!ember_rb_id_name(&l, fuzz_mem_read, &m, syms.table, (at - BASE) / 8, &s))
			free(s);
	}
	return 0;
}
