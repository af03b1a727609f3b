// SPDX-License-Identifier: Apache-2.0
/*
 * The line-table decoders against CPython's own answers: one function
 * (branches, a multi-line expression, a jump of 300 lines, a comprehension)
 * compiled by CPython 3.6 to 3.13, with the line CPython gives for every
 * instruction offset (python_lines_vectors.h, from gen_python_lines.py).
 * Then hostile tables: cut short, garbage, huge deltas.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "python_lines_vectors.h"
#include "symbolizer/interp/python_lines.h"

struct vector {
	const char *name;
	unsigned int kind;
	const uint8_t *table;
	size_t len;
	int32_t first;
	const struct line_row *rows;
	size_t nrows;
};

#define VEC(v, V)                                                                                  \
	{                                                                                          \
#v, V##_KIND, v##_table, sizeof(v##_table), V##_FIRST, v##_rows,                   \
		    sizeof(v##_rows) / sizeof(v##_rows[0])                                         \
	}

static const struct vector vectors[] = {
    VEC(v3_6, V3_6),   VEC(v3_7, V3_7),   VEC(v3_8, V3_8),   VEC(v3_9, V3_9),
    VEC(v3_10, V3_10), VEC(v3_11, V3_11), VEC(v3_12, V3_12), VEC(v3_13, V3_13),
};

START_TEST(test_cpython_lines)
{
	const struct vector *v = &vectors[_i];
	size_t big_jumps = 0;

	ck_assert_uint_gt(v->nrows, 20);
	for (size_t i = 0; i < v->nrows; i++) {
		int32_t line = -7;
		int err =
		    ember_py_line(v->kind, v->table, v->len, v->first, v->rows[i].offset, &line);

		if (v->rows[i].line < 0) {
			ck_assert_msg(err == -ENOENT, "%s offset %d: %d, want no line", v->name,
			              v->rows[i].offset, err);
			continue;
		}
		ck_assert_msg(!err && line == v->rows[i].line,
		              "%s offset %d: line %d (%d), want %d", v->name, v->rows[i].offset,
		              line, err, v->rows[i].line);
		big_jumps += line > 300;
	}
	/* The function's last statement is 300 lines below the others: deltas past 127. */
	ck_assert_uint_gt(big_jumps, 0);
}
END_TEST

START_TEST(test_negative_offset_is_first_line)
{
	const struct vector *v = &vectors[_i];
	int32_t line = 0;

	ck_assert_int_eq(ember_py_line(v->kind, v->table, v->len, v->first, -2, &line), 0);
	ck_assert_int_eq(line, v->first);
}
END_TEST

/* Every prefix of every table decodes without reading past its end (ASan checks the reads). */
START_TEST(test_truncated_tables)
{
	const struct vector *v = &vectors[_i];

	for (size_t len = 0; len <= v->len; len++) {
		uint8_t *copy = malloc(len ? len : 1);

		memcpy(copy, v->table, len);
		for (size_t i = 0; i < v->nrows; i += 3) {
			int32_t line;
			int err =
			    ember_py_line(v->kind, copy, len, v->first, v->rows[i].offset, &line);

			ck_assert(err == 0 || err == -ENOENT || err == -EBADMSG);
		}
		free(copy);
	}
}
END_TEST

START_TEST(test_hostile_location_tables)
{
	/* A long-form entry whose varint never ends. */
	static const uint8_t endless[] = {0x80 | 14 << 3, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f};
	/* An entry without its header bit. */
	static const uint8_t no_header[] = {0x10, 0x00};
	/* Line deltas adding up past int32. */
	uint8_t huge[64];
	int32_t line = 0;

	ck_assert_int_eq(
	    ember_py_line(EMBER_PY_LINES_LOCATIONS, endless, sizeof(endless), 1, 0, &line),
	    -EBADMSG);
	ck_assert_int_eq(
	    ember_py_line(EMBER_PY_LINES_LOCATIONS, no_header, sizeof(no_header), 1, 0, &line),
	    -EBADMSG);
	for (size_t i = 0; i + 7 <= sizeof(huge); i += 7) {
		/* no-columns entry: svarint delta 0x3f_ffff_ffff (6 bytes) */
		huge[i] = 0x80 | 13 << 3;
		memset(huge + i + 1, 0x7e | 0x40, 5);
		huge[i + 6] = 0x3e;
	}
	ck_assert_int_eq(ember_py_line(EMBER_PY_LINES_LOCATIONS, huge, 63, 1, 100, &line),
	                 -EBADMSG);
	ck_assert_int_eq(ember_py_line(99, huge, sizeof(huge), 1, 0, &line), -EINVAL);
}
END_TEST

START_TEST(test_lnotab_line_overflow)
{
	uint8_t t[2 * 1000];
	int32_t line = 0;

	for (size_t i = 0; i < sizeof(t); i += 2) {
		t[i] = 0;
		t[i + 1] = 127;
	}
	ck_assert_int_eq(
	    ember_py_line(EMBER_PY_LINES_LNOTAB, t, sizeof(t), INT32_MAX - 1000, 4, &line),
	    -EBADMSG);
	ck_assert_int_eq(ember_py_line(EMBER_PY_LINES_LNOTAB, t, sizeof(t), 1, 4, &line), 0);
	ck_assert_int_eq(line, 1 + 127 * 1000);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("python_lines");
	TCase *tc = tcase_create("core");
	int n = (int)(sizeof(vectors) / sizeof(vectors[0]));

	tcase_add_loop_test(tc, test_cpython_lines, 0, n);
	tcase_add_loop_test(tc, test_negative_offset_is_first_line, 0, n);
	tcase_add_loop_test(tc, test_truncated_tables, 0, n);
	tcase_add_test(tc, test_hostile_location_tables);
	tcase_add_test(tc, test_lnotab_line_overflow);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
