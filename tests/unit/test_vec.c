// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>

#include "check_main.h"
#include "shared/vec.h"

START_TEST(ensure_mem_doubles_and_keeps_items)
{
	uint64_t *a = NULL;
	size_t cap = 0;

	ck_assert_int_eq(EMBER_ENSURE(a, cap, 1, 1000), 0);
	ck_assert_uint_eq(cap, 4);
	ck_assert_int_eq(EMBER_ENSURE(a, cap, 16, 1000), 0);
	ck_assert_uint_eq(cap, 16);
	for (uint64_t i = 0; i < 16; i++)
		a[i] = i * 3;
	ck_assert_int_eq(EMBER_ENSURE(a, cap, 17, 1000), 0);
	ck_assert_uint_eq(cap, 32);
	for (uint64_t i = 0; i < 16; i++)
		ck_assert_uint_eq(a[i], i * 3);
	/* Enough room already: nothing changes. */
	ck_assert_int_eq(EMBER_ENSURE(a, cap, 20, 1000), 0);
	ck_assert_uint_eq(cap, 32);
	ck_assert_int_eq(EMBER_ENSURE(a, cap, 500, 1000), 0);
	ck_assert_uint_eq(cap, 512);
	free(a);
}
END_TEST

START_TEST(ensure_mem_stops_at_the_ceiling)
{
	char *a = NULL;
	size_t cap = 0;

	/* Doubling would pass the ceiling: the capacity is the ceiling. */
	ck_assert_int_eq(EMBER_ENSURE(a, cap, 90, 100), 0);
	ck_assert_uint_eq(cap, 100);
	ck_assert_int_eq(EMBER_ENSURE(a, cap, 100, 100), 0);
	ck_assert_int_eq(EMBER_ENSURE(a, cap, 101, 100), -E2BIG);
	ck_assert_uint_eq(cap, 100);
	free(a);
}
END_TEST

START_TEST(ensure_mem_refuses_sizes_that_wrap)
{
	uint64_t *a = NULL;
	size_t cap = 0;

	ck_assert_int_eq(EMBER_ENSURE(a, cap, SIZE_MAX / 4, SIZE_MAX), -E2BIG);
	ck_assert_int_eq(EMBER_ENSURE(a, cap, SIZE_MAX, SIZE_MAX), -E2BIG);
	ck_assert_ptr_null(a);
	ck_assert_uint_eq(cap, 0);
}
END_TEST

START_TEST(vec_push_copies_or_zeroes)
{
	struct ember_vec v;
	uint32_t three[3] = {7, 8, 9}, *p;

	ember_vec_init(&v, sizeof(uint32_t));
	p = ember_vec_push(&v, three, 3);
	ck_assert_ptr_nonnull(p);
	p = ember_vec_push(&v, NULL, 2);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p[0], 0);
	ck_assert_uint_eq(p[1], 0);
	ck_assert_uint_eq(v.len, 5);
	ck_assert_uint_eq(*EMBER_VEC_AT(v, uint32_t, 2), 9);
	ember_vec_free(&v);
	ck_assert_uint_eq(v.len, 0);
	ck_assert_uint_eq(v.item_size, sizeof(uint32_t));
}
END_TEST

START_TEST(vec_ceiling)
{
	struct ember_vec v;

	ember_vec_init_max(&v, sizeof(uint16_t), 20);
	for (int i = 0; i < 20; i++)
		ck_assert_ptr_nonnull(ember_vec_push(&v, NULL, 1));
	ck_assert_ptr_null(ember_vec_push(&v, NULL, 1));
	ck_assert_int_eq(ember_vec_reserve(&v, 1), -E2BIG);
	ck_assert_int_eq(ember_vec_reserve(&v, SIZE_MAX), -E2BIG);
	ck_assert_uint_eq(v.len, 20);
	ember_vec_free(&v);
	/* The ceiling survives a free. */
	ck_assert_int_eq(ember_vec_reserve(&v, 21), -E2BIG);
	ember_vec_free(&v);
}
END_TEST

static Suite *vec_suite(void)
{
	Suite *s = suite_create("vec");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, ensure_mem_doubles_and_keeps_items);
	tcase_add_test(tc, ensure_mem_stops_at_the_ceiling);
	tcase_add_test(tc, ensure_mem_refuses_sizes_that_wrap);
	tcase_add_test(tc, vec_push_copies_or_zeroes);
	tcase_add_test(tc, vec_ceiling);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(vec_suite)
