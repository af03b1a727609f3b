// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "shared/strtab.h"

START_TEST(strtab_appends_and_names_by_offset)
{
	struct ember_strtab t;
	uint32_t a, b, c;

	ember_strtab_init(&t, 1 << 20);
	ck_assert_int_eq(ember_strtab_add(&t, "main", 4, &a), 0);
	ck_assert_int_eq(ember_strtab_add(&t, "mainly", 4, &b), 0); /* only 4 bytes */
	ck_assert_int_eq(ember_strtab_add(&t, "", 0, &c), 0);
	ck_assert_uint_eq(a, 0);
	ck_assert_uint_eq(b, 5); /* appended, not shared */
	ck_assert_uint_eq(c, 10);
	ck_assert_str_eq(ember_strtab_at(&t, a), "main");
	ck_assert_str_eq(ember_strtab_at(&t, b), "main");
	ck_assert_str_eq(ember_strtab_at(&t, c), "");
	ck_assert_uint_eq(t.len, 11);
	ember_strtab_shrink(&t);
	ck_assert_uint_eq(t.cap, 11);
	ck_assert_str_eq(ember_strtab_at(&t, b), "main");
	ember_strtab_free(&t);
}
END_TEST

START_TEST(strtab_ceiling)
{
	struct ember_strtab t;
	uint32_t off;

	ember_strtab_init(&t, 10);
	ck_assert_int_eq(ember_strtab_add(&t, "abcd", 4, &off), 0);
	ck_assert_int_eq(ember_strtab_add(&t, "abcd", 4, &off), 0);
	ck_assert_int_eq(ember_strtab_add(&t, "", 0, &off), -E2BIG); /* 11 bytes */
	ck_assert_uint_eq(t.len, 10);
	ck_assert_int_eq(ember_strtab_add(&t, "x", SIZE_MAX, &off), -E2BIG);
	ember_strtab_free(&t);
}
END_TEST

START_TEST(strset_interns_with_dense_ids)
{
	struct ember_strset s;
	uint32_t id;
	char name[32];

	ck_assert_int_eq(ember_strset_init(&s, EMBER_STRTAB_MAX_BYTES), 0);
	ck_assert_int_eq(ember_strset_intern(&s, "", 0, &id), 0);
	ck_assert_uint_eq(id, 0);
	ck_assert_int_eq(ember_strset_intern(&s, "alpha", 5, &id), 0);
	ck_assert_uint_eq(id, 1);
	ck_assert_int_eq(ember_strset_intern(&s, "alphabet", 5, &id), 0);
	ck_assert_uint_eq(id, 1); /* the same 5 bytes */
	ck_assert_int_eq(ember_strset_intern(&s, "alp", 3, &id), 0);
	ck_assert_uint_eq(id, 2); /* a prefix is another string */
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "fn_%d", i);
		ck_assert_int_eq(ember_strset_intern(&s, name, strlen(name), &id), 0);
		ck_assert_uint_eq(id, 3 + (uint32_t)i);
	}
	ck_assert_uint_eq(ember_strset_count(&s), 5003);
	ck_assert_int_eq(ember_strset_find(&s, "fn_4321", 7, &id), 0);
	ck_assert_uint_eq(id, 3 + 4321);
	ck_assert_str_eq(ember_strset_str(&s, id), "fn_4321");
	ck_assert_uint_eq(ember_strset_len(&s, id), 7);
	ck_assert_uint_eq(ember_strset_len(&s, 5002), strlen("fn_4999"));
	ck_assert_int_eq(ember_strset_find(&s, "fn_5000", 7, &id), -ENOENT);
	ck_assert_str_eq(ember_strset_str(&s, 5003), "");
	ck_assert_str_eq(ember_strset_str(&s, UINT32_MAX), "");
	ck_assert_uint_eq(ember_strset_len(&s, UINT32_MAX), 0);
	ember_strset_free(&s);
}
END_TEST

/* A name interned again from the set's own storage (in_pprof does this) while
 * the storage grows: the copy is made from where the bytes are now. */
START_TEST(strset_interns_from_its_own_storage)
{
	struct ember_strset s;
	char first[200];
	uint32_t id0, id;

	for (size_t i = 0; i < sizeof(first); i++)
		first[i] = (char)('a' + i % 26);
	ck_assert_int_eq(ember_strset_init(&s, EMBER_STRTAB_MAX_BYTES), 0);
	ck_assert_int_eq(ember_strset_intern(&s, first, sizeof(first), &id0), 0);
	for (size_t len = 1; len < sizeof(first); len++) {
		const char *own = ember_strset_str(&s, id0);

		ck_assert_int_eq(ember_strset_intern(&s, own, len, &id), 0);
		ck_assert_uint_eq(id, len);
	}
	for (size_t len = 1; len < sizeof(first); len++) {
		const char *got = ember_strset_str(&s, (uint32_t)len);

		ck_assert_uint_eq(strlen(got), len);
		ck_assert_int_eq(memcmp(got, first, len), 0);
		ck_assert_int_eq(ember_strset_find(&s, first, len, &id), 0);
		ck_assert_uint_eq(id, len);
	}
	ember_strset_free(&s);
}
END_TEST

START_TEST(strset_refuses_nul_and_ceiling)
{
	struct ember_strset s;
	uint32_t id;

	ck_assert_int_eq(ember_strset_init(&s, 8), 0);
	ck_assert_int_eq(ember_strset_intern(&s, "a\0b", 3, &id), -EINVAL);
	ck_assert_int_eq(ember_strset_intern(&s, "abc", 3, &id), 0);
	ck_assert_int_eq(ember_strset_intern(&s, "defg", 4, &id), -E2BIG);
	/* A failed intern leaves nothing behind. */
	ck_assert_uint_eq(ember_strset_count(&s), 1);
	ck_assert_int_eq(ember_strset_find(&s, "defg", 4, &id), -ENOENT);
	ck_assert_int_eq(ember_strset_intern(&s, "abc", 3, &id), 0);
	ck_assert_uint_eq(id, 0);
	ember_strset_clear(&s);
	ck_assert_uint_eq(ember_strset_count(&s), 0);
	ck_assert_int_eq(ember_strset_find(&s, "abc", 3, &id), -ENOENT);
	ck_assert_int_eq(ember_strset_intern(&s, "defg", 4, &id), 0);
	ck_assert_uint_eq(id, 0);
	ember_strset_free(&s);
}
END_TEST

static Suite *strtab_suite(void)
{
	Suite *s = suite_create("strtab");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, strtab_appends_and_names_by_offset);
	tcase_add_test(tc, strtab_ceiling);
	tcase_add_test(tc, strset_interns_with_dense_ids);
	tcase_add_test(tc, strset_refuses_nul_and_ceiling);
	tcase_add_test(tc, strset_interns_from_its_own_storage);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(strtab_suite)
