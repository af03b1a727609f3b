// SPDX-License-Identifier: Apache-2.0
/*
 * HotSpot's compressed line number tables and UNSIGNED5 numbers
 * (symbolizer/interp/jvm_lines.c), written here as HotSpot writes them (one
 * byte for small forward deltas, 0xFF and two signed numbers otherwise, a
 * 0 byte at the end; UNSIGNED5 with byte 0 left out from JDK 20 on): exact
 * and nearest-below lookups as HotSpot does them, unsorted pairs, lines
 * going back, numbers of every length, and malformed tables (no end, a
 * number cut short, an excluded byte, too many pairs).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "symbolizer/interp/jvm_lines.h"

#define LOW 192u

struct out {
	uint8_t b[1 << 20];
	size_t n;
};

static struct out T;

/* UNSIGNED5 with x bytes left out: the inverse of value = sum of (b_i - x) << 6i, where
 * every byte but the last is at least LOW. */
static void put_uint(struct out *o, uint32_t v, unsigned int x)
{
	uint64_t sum = v;

	for (int i = 0; i < 4 && sum >= LOW - x; i++) {
		/* b - x in [LOW - x, 256 - x) with b - x == sum (mod 64). */
		uint32_t low = LOW - x, d = (uint32_t)((sum - low) % 64) + low;

		o->b[o->n++] = (uint8_t)(d + x);
		sum = (sum - d) >> 6;
	}
	o->b[o->n++] = (uint8_t)(sum + x);
}

static void put_sint(struct out *o, int32_t v, unsigned int x)
{
	put_uint(o, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31), x);
}

static void put_pair(struct out *o, int32_t bci_delta, int32_t line_delta, unsigned int x)
{
	if (bci_delta >= 0 && bci_delta < 32 && line_delta >= 0 && line_delta < 8 &&
	    (bci_delta << 3 | line_delta) != 0xff && (bci_delta | line_delta)) {
		o->b[o->n++] = (uint8_t)(bci_delta << 3 | line_delta);
		return;
	}
	o->b[o->n++] = 0xff;
	put_sint(o, bci_delta, x);
	put_sint(o, line_delta, x);
}

/* A table of n (bci, line) pairs, in the order given, ended. */
static void table(const int32_t (*pairs)[2], size_t n, unsigned int x)
{
	int32_t bci = 0, line = 0;

	T.n = 0;
	for (size_t i = 0; i < n; i++) {
		put_pair(&T, pairs[i][0] - bci, pairs[i][1] - line, x);
		bci = pairs[i][0];
		line = pairs[i][1];
	}
	T.b[T.n++] = 0;
}

static int32_t line_of(uint32_t bci, unsigned int x)
{
	int32_t line = -7;

	ck_assert_int_eq(ember_jvm_line_of(T.b, T.n, x, bci, &line), 0);
	return line;
}

START_TEST(numbers_of_every_length)
{
	static const uint32_t v[] = {
	    0,          1, 190, 191, 192, 255, 4095, 1u << 12, 12345678u, 1u << 30, 0xffffffffu - 1,
	    0xffffffffu};

	for (unsigned int x = 0; x <= 1; x++)
		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			struct ember_jvm_stream s;

			T.n = 0;
			put_uint(&T, v[i], x);
			ck_assert_uint_le(T.n, 5);
			s = (struct ember_jvm_stream){T.b, T.b + T.n, x, false};
			ck_assert_uint_eq(ember_jvm_read_uint(&s), v[i]);
			ck_assert(!s.bad);
			ck_assert_ptr_eq(s.p, T.b + T.n);
			T.n = 0;
			put_sint(&T, -(int32_t)(v[i] / 2), x);
			s = (struct ember_jvm_stream){T.b, T.b + T.n, x, false};
			ck_assert_int_eq(ember_jvm_read_sint(&s), -(int32_t)(v[i] / 2));
		}
}
END_TEST

/* javac's order: pairs by bci, lines forward and back (a loop's condition below its body). */
START_TEST(exact_and_nearest_below)
{
	static const int32_t pairs[][2] = {{0, 10},   {4, 11},  {9, 13},      {40, 12},
	                                   {41, 300}, {700, 2}, {70000, 5000}};

	for (unsigned int x = 0; x <= 1; x++) {
		table(pairs, sizeof(pairs) / sizeof(pairs[0]), x);
		ck_assert_int_eq(line_of(0, x), 10);
		ck_assert_int_eq(line_of(3, x), 10);
		ck_assert_int_eq(line_of(4, x), 11);
		ck_assert_int_eq(line_of(39, x), 13);
		ck_assert_int_eq(line_of(40, x), 12);
		ck_assert_int_eq(line_of(41, x), 300);
		ck_assert_int_eq(line_of(699, x), 300);
		ck_assert_int_eq(line_of(700, x), 2);
		ck_assert_int_eq(line_of(80000, x), 5000);
		ck_assert_uint_eq(ember_jvm_lines_len(T.b, T.n, x), T.n);
		/* The same bytes after more: the length says where the table ends. */
		ck_assert_uint_eq(ember_jvm_lines_len(T.b, sizeof(T.b), x), T.n);
	}
}
END_TEST

/* Pairs need not be sorted: the greatest bci below counts, not the last one read. */
START_TEST(unsorted_pairs)
{
	static const int32_t pairs[][2] = {{20, 7}, {5, 3}, {30, 9}, {12, 4}};

	table(pairs, 4, 1);
	ck_assert_int_eq(line_of(25, 1), 7);
	ck_assert_int_eq(line_of(13, 1), 4);
	ck_assert_int_eq(line_of(5, 1), 3);
	ck_assert_int_eq(line_of(100, 1), 9);
}
END_TEST

START_TEST(no_line_before_the_first_pair)
{
	static const int32_t pairs[][2] = {{8, 20}};
	int32_t line;

	table(pairs, 1, 0);
	ck_assert_int_eq(ember_jvm_line_of(T.b, T.n, 0, 3, &line), -ENOENT);
	T.b[0] = 0;
	ck_assert_int_eq(ember_jvm_line_of(T.b, 1, 0, 3, &line), -ENOENT);
	ck_assert_uint_eq(ember_jvm_lines_len(T.b, 1, 0), 1);
}
END_TEST

START_TEST(malformed_tables)
{
	static const int32_t pairs[][2] = {{0, 1}, {1000, 2000}};
	int32_t line;

	table(pairs, 2, 1);
	/* Without its 0 byte, or cut inside a number. */
	ck_assert_int_eq(ember_jvm_line_of(T.b, T.n - 1, 1, 5000, &line), -EBADMSG);
	ck_assert_int_eq(ember_jvm_line_of(T.b, T.n - 2, 1, 5000, &line), -EBADMSG);
	ck_assert_uint_eq(ember_jvm_lines_len(T.b, T.n - 1, 1), 0);
	/* A JDK 20 table read as older JDKs write it decodes, but to other numbers; an older
	 * table read with byte 0 left out meets an excluded byte. */
	T.n = 0;
	T.b[T.n++] = 0xff;
	put_sint(&T, 0, 0); /* byte 0 */
	put_sint(&T, 3, 0);
	T.b[T.n++] = 0;
	ck_assert_int_eq(ember_jvm_line_of(T.b, T.n, 1, 0, &line), -EBADMSG);
	ck_assert_int_eq(ember_jvm_line_of(T.b, T.n, 0, 0, &line), 0);
	ck_assert_int_eq(line, 3);
	/* A number of more than five bytes ends at the fifth: what follows is read as pairs. */
	memset(T.b, 0xfe, 16);
	T.b[0] = 0xff;
	T.b[16] = 0;
	ck_assert_int_eq(ember_jvm_line_of(T.b, 17, 0, 0, &line), -ENOENT);
}
END_TEST

START_TEST(too_many_pairs)
{
	int32_t line;

	memset(T.b, 0x08, EMBER_JVM_MAX_LINES + 1); /* bci + 1 each */
	T.b[EMBER_JVM_MAX_LINES + 1] = 0;
	ck_assert_int_eq(ember_jvm_line_of(T.b, EMBER_JVM_MAX_LINES + 2, 0, UINT32_MAX, &line),
	                 -EBADMSG);
	ck_assert_uint_eq(ember_jvm_lines_len(T.b, EMBER_JVM_MAX_LINES + 2, 0), 0);
	T.b[EMBER_JVM_MAX_LINES] = 0;
	ck_assert_int_eq(ember_jvm_line_of(T.b, EMBER_JVM_MAX_LINES + 1, 0, 5, &line), 0);
	ck_assert_int_eq(line, 0);
}
END_TEST

static Suite *jvm_lines_suite(void)
{
	Suite *s = suite_create("jvm_lines");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, numbers_of_every_length);
	tcase_add_test(tc, exact_and_nearest_below);
	tcase_add_test(tc, unsorted_pairs);
	tcase_add_test(tc, no_line_before_the_first_pair);
	tcase_add_test(tc, malformed_tables);
	tcase_add_test(tc, too_many_pairs);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(jvm_lines_suite)
