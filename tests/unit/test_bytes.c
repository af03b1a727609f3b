// SPDX-License-Identifier: Apache-2.0
#include "check_main.h"
#include "shared/bytes.h"

START_TEST(little_endian_in_bounds)
{
	static const uint8_t b[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09};
	uint64_t v;

	ck_assert_uint_eq(ember_le(b, 2), 0x0201);
	ck_assert_uint_eq(ember_le(b + 1, 8), 0x0908070605040302ull);
	ck_assert_uint_eq(ember_u64_at(b, 1), 0x0908070605040302ull);
	ck_assert_uint_eq(ember_u32_at(b, 5), 0x09080706u);
	ck_assert_uint_eq(ember_le_in(b, sizeof(b), 5, 4), 0x09080706u);
	ck_assert_uint_eq(ember_le_in(b, sizeof(b), 6, 4), 0);
	ck_assert(ember_le_at(b, sizeof(b), 5, 4, &v));
	ck_assert_uint_eq(v, 0x09080706);
	ck_assert(!ember_le_at(b, sizeof(b), 6, 4, &v));
	ck_assert(!ember_le_at(b, sizeof(b), UINT64_MAX, 1, &v));
	ck_assert(!ember_le_at(b, sizeof(b), 10, 0, &v));
}
END_TEST

START_TEST(cursor_is_sticky_past_the_end)
{
	static const uint8_t b[] = {0x34, 0x12, 0xff};
	struct ember_bytes r = {b, b + sizeof(b), false};

	ck_assert_uint_eq(ember_bytes_le(&r, 2), 0x1234);
	ck_assert(!r.bad);
	ck_assert_uint_eq(ember_bytes_le(&r, 2), 0);
	ck_assert(r.bad);
	/* Still bad, even for a read that would fit. */
	ck_assert_uint_eq(ember_bytes_le(&r, 1), 0);
	ck_assert(r.bad);
}
END_TEST

START_TEST(leb128)
{
	/* 624485 (DWARF's example), -123456, then an endless one. */
	static const uint8_t u[] = {0xe5, 0x8e, 0x26};
	static const uint8_t s[] = {0xc0, 0xbb, 0x78};
	static const uint8_t one_byte_neg[] = {0x7f};
	uint8_t endless[12];
	struct ember_bytes r = {u, u + sizeof(u), false};

	ck_assert_uint_eq(ember_bytes_uleb(&r), 624485);
	ck_assert(!r.bad && r.p == r.end);
	r = (struct ember_bytes){s, s + sizeof(s), false};
	ck_assert_int_eq(ember_bytes_sleb(&r), -123456);
	ck_assert(!r.bad);
	r = (struct ember_bytes){one_byte_neg, one_byte_neg + 1, false};
	ck_assert_int_eq(ember_bytes_sleb(&r), -1);
	for (size_t i = 0; i < sizeof(endless); i++)
		endless[i] = 0x80;
	r = (struct ember_bytes){endless, endless + sizeof(endless), false};
	ck_assert_uint_eq(ember_bytes_uleb(&r), 0);
	ck_assert(r.bad);
	r = (struct ember_bytes){endless, endless + sizeof(endless), false};
	ck_assert_int_eq(ember_bytes_sleb(&r), 0);
	ck_assert(r.bad);
	/* Truncated: the continuation bit set on the last byte. */
	r = (struct ember_bytes){u, u + 2, false};
	ember_bytes_uleb(&r);
	ck_assert(r.bad);
}
END_TEST

static Suite *bytes_suite(void)
{
	Suite *s = suite_create("bytes");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, little_endian_in_bounds);
	tcase_add_test(tc, cursor_is_sticky_past_the_end);
	tcase_add_test(tc, leb128);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(bytes_suite)
