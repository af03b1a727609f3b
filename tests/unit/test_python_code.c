// SPDX-License-Identifier: Apache-2.0
/*
 * The code-object reader on a fake process memory laid out as CPython 3.12
 * and 3.9 lay out their objects: names in every string kind, the checksum
 * the eBPF walker computes, and hostile objects (wrong types, huge
 * lengths, legacy strings, pointers nowhere, "ascii" strings that are not).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "symbolizer/interp/python_code.h"

#define MEM_BASE   0x10000ull
#define MEM_SIZE   0x10000
#define CODE_TYPE  0xc0de0000ull
#define STR_TYPE   0x57200000ull
#define BYTES_TYPE 0xb7e50000ull

struct mem {
	uint8_t bytes[MEM_SIZE];
	uint64_t reads;
};

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct mem *m = ctx;

	m->reads++;
	if (addr < MEM_BASE || addr - MEM_BASE > MEM_SIZE || len > MEM_SIZE - (addr - MEM_BASE))
		return -EFAULT;
	memcpy(buf, m->bytes + (addr - MEM_BASE), len);
	return 0;
}

static void put64(struct mem *m, uint64_t addr, uint64_t v)
{
	memcpy(m->bytes + (addr - MEM_BASE), &v, 8);
}

static void put32(struct mem *m, uint64_t addr, uint32_t v)
{
	memcpy(m->bytes + (addr - MEM_BASE), &v, 4);
}

/* A compact str at addr: kind 1 (ascii when ascii), 2 or 4. */
static void put_str(struct mem *m, const struct ember_py_layout *l, uint64_t addr,
                    const uint32_t *cps, size_t n, unsigned int kind, bool ascii)
{
	uint64_t data = addr + (ascii ? l->str_ascii_data : l->str_compact_data);

	put64(m, addr + l->ob_type, STR_TYPE);
	put64(m, addr + l->str_length, n);
	put32(m, addr + l->str_state, (kind << 2) | (1u << 5) | (ascii ? 1u << 6 : 0));
	for (size_t i = 0; i < n; i++) {
		if (kind == 1)
			m->bytes[data - MEM_BASE + i] = (uint8_t)cps[i];
		else if (kind == 2)
			memcpy(m->bytes + (data - MEM_BASE + 2 * i), &(uint16_t){(uint16_t)cps[i]},
			       2);
		else
			put32(m, data + 4 * i, cps[i]);
	}
}

static void put_ascii(struct mem *m, const struct ember_py_layout *l, uint64_t addr, const char *s)
{
	uint32_t cps[256];
	size_t n = strlen(s);

	for (size_t i = 0; i < n; i++)
		cps[i] = (unsigned char)s[i];
	put_str(m, l, addr, cps, n, 1, true);
}

#define CODE  0x11000ull
#define NAME  0x12000ull
#define QUAL  0x12400ull
#define FILE_ 0x12800ull
#define TABLE 0x13000ull

static const struct ember_py_types types = {CODE_TYPE, STR_TYPE, BYTES_TYPE};

static struct mem *fake_code(const struct ember_py_layout *l)
{
	struct mem *m = calloc(1, sizeof(*m));
	static const uint8_t table[] = {0x80 | 13 << 3 | 3, 0x04};

	put64(m, CODE + l->ob_type, CODE_TYPE);
	put32(m, CODE + l->code_argcount, 2);
	put32(m, CODE + l->code_firstlineno, 40);
	put64(m, CODE + l->code_name, NAME);
	put64(m, CODE + l->code_filename, FILE_);
	put64(m, CODE + l->code_linetable, TABLE);
	if (l->code_qualname)
		put64(m, CODE + l->code_qualname, QUAL);
	if (l->code_nunits)
		put64(m, CODE + l->code_nunits, 4);
	put_ascii(m, l, NAME, "handle");
	put_ascii(m, l, QUAL, "Server.handle");
	put_ascii(m, l, FILE_, "/srv/app/server.py");
	put64(m, TABLE + l->ob_type, BYTES_TYPE);
	put64(m, TABLE + l->bytes_size, sizeof(table));
	memcpy(m->bytes + (TABLE - MEM_BASE + l->bytes_data), table, sizeof(table));
	return m;
}

static struct ember_py_layout layout(unsigned int minor)
{
	struct ember_py_layout l;

	ck_assert_int_eq(ember_py_layout_for(3, minor, &l), 0);
	return l;
}

START_TEST(test_reads_a_code_object)
{
	struct ember_py_layout l = layout(12);
	struct mem *m = fake_code(&l);
	struct ember_py_code c;

	ck_assert_int_eq(ember_py_read_code(&l, &types, mem_read, m, CODE, &c), 0);
	ck_assert_str_eq(c.name, "Server.handle");
	ck_assert_str_eq(c.file, "/srv/app/server.py");
	ck_assert_int_eq(c.firstlineno, 40);
	ck_assert_uint_eq(c.nunits, 4);
	ck_assert_uint_eq(c.linetable_len, 2);
	ck_assert_int_eq(c.linetable_error, 0);
	/* What the walker computes from the same four fields. */
	ck_assert_uint_eq(c.checksum, ember_py_checksum(2, 40, NAME, FILE_));
	ember_py_code_free(&c);

	/* Before 3.11 there is no qualified name: the name. */
	free(m);
	l = layout(9);
	m = fake_code(&l);
	ck_assert_int_eq(ember_py_read_code(&l, &types, mem_read, m, CODE, &c), 0);
	ck_assert_str_eq(c.name, "handle");
	ck_assert_uint_eq(c.nunits, 0);
	ember_py_code_free(&c);
	free(m);
}
END_TEST

START_TEST(test_checksum_differs_for_other_objects)
{
	ck_assert_uint_ne(ember_py_checksum(2, 40, NAME, FILE_),
	                  ember_py_checksum(2, 41, NAME, FILE_));
	ck_assert_uint_ne(ember_py_checksum(2, 40, NAME, FILE_),
	                  ember_py_checksum(2, 40, QUAL, FILE_));
	ck_assert_uint_ne(ember_py_checksum(2, 40, NAME, FILE_),
	                  ember_py_checksum(1, 40, NAME, FILE_));
	ck_assert_uint_ne(ember_py_checksum(0, 0, 0, 0), 0);
}
END_TEST

START_TEST(test_string_kinds)
{
	struct ember_py_layout l = layout(12);
	struct mem *m = fake_code(&l);
	static const uint32_t latin1[] = {'c', 0xe9, 'l', 'e', 'r', 'y'}; /* céléry */
	static const uint32_t ucs2[] = {0x4e2d, 0x6587, '_', 'f'};        /* 中文_f */
	static const uint32_t ucs4[] = {'f', 0x1f600, 0xd800, 0};         /* lone surrogate, NUL */
	char *s;

	put_str(m, &l, NAME, latin1, 6, 1, false);
	ck_assert_int_eq(ember_py_read_str(&l, &types, mem_read, m, NAME, 100, &s), 0);
	ck_assert_str_eq(s, "c\xc3\xa9lery");
	free(s);
	put_str(m, &l, NAME, ucs2, 4, 2, false);
	ck_assert_int_eq(ember_py_read_str(&l, &types, mem_read, m, NAME, 100, &s), 0);
	ck_assert_str_eq(s, "\xe4\xb8\xad\xe6\x96\x87_f");
	free(s);
	put_str(m, &l, NAME, ucs4, 4, 4, false);
	ck_assert_int_eq(ember_py_read_str(&l, &types, mem_read, m, NAME, 100, &s), 0);
	ck_assert_str_eq(s, "f\xf0\x9f\x98\x80\xef\xbf\xbd\xef\xbf\xbd");
	free(s);
	free(m);
}
END_TEST

START_TEST(test_hostile_objects)
{
	struct ember_py_layout l = layout(12);
	struct mem *m = fake_code(&l);
	struct ember_py_code c;
	char *s;

	/* Not a code object. */
	put64(m, CODE + l.ob_type, STR_TYPE);
	ck_assert_int_eq(ember_py_read_code(&l, &types, mem_read, m, CODE, &c), -EBADMSG);
	put64(m, CODE + l.ob_type, CODE_TYPE);
	/* Pointers nowhere, misaligned, kernel. */
	ck_assert_int_eq(ember_py_read_code(&l, &types, mem_read, m, 0x900000, &c), -EFAULT);
	ck_assert_int_eq(ember_py_read_code(&l, &types, mem_read, m, CODE + 1, &c), -EBADMSG);
	ck_assert_int_eq(ember_py_read_code(&l, &types, mem_read, m, 0xffff800000000000ull, &c),
	                 -EBADMSG);
	ck_assert_int_eq(ember_py_read_code(&l, &types, mem_read, m, 0, &c), -EBADMSG);
	/* A name longer than any name may be. */
	put64(m, QUAL + l.str_length, EMBER_PY_MAX_NAME + 1);
	ck_assert_int_eq(ember_py_read_code(&l, &types, mem_read, m, CODE, &c), -EBADMSG);
	put64(m, QUAL + l.str_length, (uint64_t)-5);
	ck_assert_int_eq(ember_py_read_code(&l, &types, mem_read, m, CODE, &c), -EBADMSG);
	put_ascii(m, &l, QUAL, "ok");
	/* A legacy (not compact) string, a bad kind, "ascii" with a high byte. */
	put32(m, QUAL + l.str_state, 1u << 2);
	ck_assert_int_eq(ember_py_read_str(&l, &types, mem_read, m, QUAL, 100, &s), -ENOTSUP);
	put32(m, QUAL + l.str_state, 3u << 2 | 1u << 5);
	ck_assert_int_eq(ember_py_read_str(&l, &types, mem_read, m, QUAL, 100, &s), -EBADMSG);
	put_ascii(m, &l, QUAL, "ok");
	m->bytes[QUAL - MEM_BASE + l.str_ascii_data] = 0xff;
	ck_assert_int_eq(ember_py_read_str(&l, &types, mem_read, m, QUAL, 100, &s), -EBADMSG);
	put_ascii(m, &l, QUAL, "ok");
	/* A string's data past the end of memory. */
	put_ascii(m, &l, MEM_BASE + MEM_SIZE - 64, "ok");
	put64(m, MEM_BASE + MEM_SIZE - 64 + l.str_length, 1000);
	put64(m, CODE + l.code_qualname, MEM_BASE + MEM_SIZE - 64);
	ck_assert_int_eq(ember_py_read_code(&l, &types, mem_read, m, CODE, &c), -EFAULT);
	put64(m, CODE + l.code_qualname, QUAL);
	/* A line table too large keeps the name, without lines. */
	put64(m, TABLE + l.bytes_size, EMBER_PY_MAX_LINETABLE + 1);
	ck_assert_int_eq(ember_py_read_code(&l, &types, mem_read, m, CODE, &c), 0);
	ck_assert_int_eq(c.linetable_error, -E2BIG);
	ck_assert_ptr_null(c.linetable);
	ember_py_code_free(&c);
	/* A code object claiming more units than any has. */
	put64(m, CODE + l.code_nunits, EMBER_PY_MAX_UNITS + 1);
	ck_assert_int_eq(ember_py_read_code(&l, &types, mem_read, m, CODE, &c), -EBADMSG);
	free(m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("python_code");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_reads_a_code_object);
	tcase_add_test(tc, test_checksum_differs_for_other_objects);
	tcase_add_test(tc, test_string_kinds);
	tcase_add_test(tc, test_hostile_objects);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
