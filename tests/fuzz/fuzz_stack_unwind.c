// SPDX-License-Identifier: Apache-2.0
/*
 * The stack-copy unwinder (symbolizer/unwind/stack_unwind.c): registers, a
 * table of rows and the copied stack all come from the input, as they come
 * from a profiled process and the files it maps. Layout: a flags byte (bit 0:
 * the pc is exact; bit 1: addresses from 0x20000 have a mapping whose table
 * is missing), pc, sp and fp (8 bytes each), a row count (mod 33), the rows
 * (8 bytes each, sorted here), then the stack bytes, copied into a buffer of
 * their exact size so that any read past them is caught. With bit 7 of the
 * row count byte, the stack is a copy as the sampler sends it (records.h): a
 * 16-bit word count, then the kept words and bitmaps, expanded first into a
 * buffer of exactly the stack's size; with bit 6, the frame's rdi and rbx
 * are known (pc ^ fp, and sp + 8 * (pc & 63): near the stack, where a CFA_BX
 * row's CFA is). Beyond not
 * crashing: the walk stays within its frame budget and its steps.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/unwind/cfi.h"
#include "symbolizer/unwind/stack_unwind.h"

#define TABLE_START 0x1000u
#define TABLE_END   0x11000u
#define MISSING     0x20000u
#define MAX_FRAMES  128

struct table {
	struct ember_unwind_rows rows;
	uint8_t flags;
	uint32_t lookups;
};

static int lookup(void *ctx, uint64_t pc, struct ember_unwind_row *row)
{
	struct table *t = ctx;
	const struct ember_unwind_row *r;

	t->lookups++;
	if (pc >= TABLE_START && pc < TABLE_END) {
		r = ember_unwind_rows_find(&t->rows, pc);
		*row = r ? *r : (struct ember_unwind_row){.kind = EMBER_ROW_GAP};
		return 0;
	}
	return (t->flags & 2) && pc >= MISSING ? -ENODATA : -ENOENT;
}

static int row_cmp(const void *a, const void *b)
{
	const struct ember_unwind_row *x = a, *y = b;

	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_unwind_row rows[32];
	struct ember_stack_regs regs;
	struct ember_stack_walk w = {0};
	struct table t = {{rows, 0}, 0, 0};
	uint64_t frames[MAX_FRAMES], r[3];
	uint8_t *stack, *sent;
	size_t len;
	uint32_t words;
	bool sparse;
	int got;

	if (size < 26)
		return 0;
	t.flags = data[0];
	memcpy(r, data + 1, sizeof(r));
	regs = (struct ember_stack_regs){.pc = r[0],
	                                 .sp = r[1],
	                                 .fp = r[2],
	                                 .exact = t.flags & 1,
	                                 .has_di = data[25] & 0x40,
	                                 .has_bx = data[25] & 0x40,
	                                 .di = r[0] ^ r[2],
	                                 .bx = r[1] + 8 * (r[0] & 63)};
	sparse = data[25] & 0x80;
	t.rows.count = (data[25] & 0x3f) % 33;
	data += 26;
	size -= 26;
	if (t.rows.count * 8 > size)
		t.rows.count = size / 8;
	memcpy(rows, data, t.rows.count * 8);
	qsort(rows, t.rows.count, sizeof(rows[0]), row_cmp);
	data += t.rows.count * 8;
	size -= t.rows.count * 8;
	if (sparse) {
		if (size < 2)
			return 0;
		words = (data[0] | (uint32_t)data[1] << 8) % (EMBER_MAX_STACK_COPY / 8 + 1);
		data += 2;
		size -= 2;
		sent = malloc(size ? size : 1);
		stack = malloc(words ? 8 * (size_t)words : 1);
		if (!sent || !stack) {
			free(sent);
			free(stack);
			return 0;
		}
		memcpy(sent, data, size);
		got = ember_stack_copy_expand(words, sent, size, stack, 8 * (size_t)words);
		free(sent);
		if (got < 0) {
			free(stack);
			return 0;
		}
		if ((size_t)got != 8 * (size_t)words)
			abort();
		len = (size_t)got;
	} else {
		len = size;
		stack = malloc(len ? len : 1);
		if (!stack)
			return 0;
		memcpy(stack, data, len);
	}
	w.frames = frames;
	w.max = (t.flags >> 2) % (MAX_FRAMES + 1);
	ember_stack_unwind(&regs, stack, len, lookup, &t, &w);
	if (w.n > w.max || w.stop >= EMBER_UNWIND_STOP_MAX || t.lookups > w.max + 1u)
		abort();
	free(stack);
	return 0;
}
