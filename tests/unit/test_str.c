// SPDX-License-Identifier: Apache-2.0
#include <errno.h>

#include "check_main.h"
#include "shared/parse.h"
#include "shared/str.h"

START_TEST(parse_u64_is_strict)
{
	uint64_t v;

	ck_assert_int_eq(ember_parse_u64("19", 1, 100, &v), 0);
	ck_assert_uint_eq(v, 19);
	ck_assert_int_eq(ember_parse_u64("", 0, 100, &v), -EINVAL);
	ck_assert_int_eq(ember_parse_u64("-1", 0, 100, &v), -EINVAL);
	ck_assert_int_eq(ember_parse_u64("12x", 0, 100, &v), -EINVAL);
	ck_assert_int_eq(ember_parse_u64(" 1", 0, 100, &v), -EINVAL);
	ck_assert_int_eq(ember_parse_u64("101", 0, 100, &v), -ERANGE);
	ck_assert_int_eq(ember_parse_u64("0", 1, 100, &v), -ERANGE);
	ck_assert_int_eq(ember_parse_u64("99999999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
}
END_TEST

START_TEST(durations)
{
	uint64_t ms;

	ck_assert_int_eq(ember_parse_duration_ms("30", &ms), 0);
	ck_assert_uint_eq(ms, 30000);
	ck_assert_int_eq(ember_parse_duration_ms("250ms", &ms), 0);
	ck_assert_uint_eq(ms, 250);
	ck_assert_int_eq(ember_parse_duration_ms("5m", &ms), 0);
	ck_assert_uint_eq(ms, 300000);
	ck_assert_int_eq(ember_parse_duration_ms("1h", &ms), 0);
	ck_assert_uint_eq(ms, 3600000);
	ck_assert_int_eq(ember_parse_duration_ms("5x", &ms), -EINVAL);
	ck_assert_int_eq(ember_parse_duration_ms("s", &ms), -EINVAL);
	ck_assert_int_eq(ember_parse_duration_ms("-5", &ms), -EINVAL);
}
END_TEST

START_TEST(strlcpy_and_hex)
{
	char buf[4];

	ck_assert_int_eq(ember_strlcpy(buf, "abc", sizeof(buf)), 0);
	ck_assert_str_eq(buf, "abc");
	ck_assert_int_eq(ember_strlcpy(buf, "abcd", sizeof(buf)), -ENAMETOOLONG);
	ck_assert_str_eq(buf, "abc");
	ck_assert(ember_is_lower_hex("00ff", 4));
	ck_assert(!ember_is_lower_hex("00FF", 4));
	ck_assert(!ember_is_lower_hex("", 0));
	ck_assert(!ember_is_lower_hex("0g", 2));
	ck_assert(ember_str_ends_with("p.pb.gz", ".pb.gz"));
	ck_assert(!ember_str_ends_with("gz", ".pb.gz"));
}
END_TEST

static Suite *str_suite(void)
{
	Suite *s = suite_create("str");
	TCase *tc = tcase_create("str");

	tcase_add_test(tc, parse_u64_is_strict);
	tcase_add_test(tc, durations);
	tcase_add_test(tc, strlcpy_and_hex);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(str_suite)
