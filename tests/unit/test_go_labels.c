// SPDX-License-Identifier: Apache-2.0
/*
 * Goroutine label sets as Go lays them out in memory (runtime/pprof, amd64): the sorted
 * slice of Go 1.24 and later, the map[string]string before; and what a hostile set gives.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "check_main.h"
#include "symbolizer/interp/go_labels.h"
#include "tests/fuzz/fuzz_mem.h"

#define B FUZZ_MEM_BASE

static uint8_t mem[8192];
static struct fuzz_mem m = {mem, sizeof(mem)};
static char out[EMBER_GO_LABELS_TEXT];

static void put64(uint64_t at, uint64_t v)
{
	memcpy(mem + (at - B), &v, 8);
}

/* A Go string {ptr, len} at at, its bytes at data. */
static void put_string(uint64_t at, uint64_t data, const char *s)
{
	put64(at, data);
	put64(at + 8, strlen(s));
	memcpy(mem + (data - B), s, strlen(s));
}

/* Go 1.24+: at B, a labelMap whose Set's List has the labels at B + 0x100 (32 bytes each),
 * their strings from B + 0x1000. */
static void slice_set(const char *const (*kv)[2], size_t n)
{
	memset(mem, 0, sizeof(mem));
	put64(B, B + 0x100);
	put64(B + 8, n);
	put64(B + 16, n);
	for (size_t i = 0; i < n; i++) {
		put_string(B + 0x100 + 32 * i, B + 0x1000 + 0x100 * i, kv[i][0]);
		put_string(B + 0x110 + 32 * i, B + 0x1080 + 0x100 * i, kv[i][1]);
	}
}

START_TEST(a_sorted_slice_from_go_1_24)
{
	static const char *const kv[][2] = {{"route", "/cart"}, {"span", "a\nb"}, {"worker", "1"}};

	slice_set(kv, 3);
	ck_assert_int_eq(ember_go_read_labels(fuzz_mem_read, &m, 26, B, out, sizeof(out)), 0);
	/* A value's line break is a space: one line per label. */
	ck_assert_str_eq(out, "route=/cart\nspan=a b\nworker=1\n");
	/* Empty: nothing. */
	slice_set(kv, 0);
	ck_assert_int_eq(ember_go_read_labels(fuzz_mem_read, &m, 25, B, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(a_map_up_to_go_1_23)
{
	uint64_t hmap = B + 0x40, bucket = B + 0x200;

	memset(mem, 0, sizeof(mem));
	put64(B, hmap);        /* *labelMap -> the map's header */
	put64(hmap, 2);        /* count */
	mem[hmap + 9 - B] = 0; /* B: one bucket */
	put64(hmap + 16, bucket);
	/* Slots 1 and 5 live (tophash >= 5), 0 empty, 2 evacuated: in hash order. */
	mem[bucket - B + 1] = 0x9a;
	mem[bucket - B + 2] = 2;
	mem[bucket - B + 5] = 0x33;
	put_string(bucket + 8 + 16 * 1, B + 0x1000, "worker");
	put_string(bucket + 136 + 16 * 1, B + 0x1100, "0");
	put_string(bucket + 8 + 16 * 5, B + 0x1200, "span");
	put_string(bucket + 136 + 16 * 5, B + 0x1300, "b");
	put_string(bucket + 8 + 16 * 2, B + 0x1400, "stale");
	ck_assert_int_eq(ember_go_read_labels(fuzz_mem_read, &m, 19, B, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "span=b\nworker=0\n"); /* sorted by key */
	/* Past 16 buckets (B > 4): not read. */
	mem[hmap + 9 - B] = 9;
	ck_assert_int_eq(ember_go_read_labels(fuzz_mem_read, &m, 19, B, out, sizeof(out)),
	                 -EBADMSG);
}
END_TEST

START_TEST(hostile_sets_give_nothing_wrong)
{
	static const char *const bad_key[][2] = {{"a=b", "x"}, {"ok", "1"}};
	char long_value[EMBER_GO_MAX_VALUE + 40];

	/* A key with '=' is left out, the others kept. */
	slice_set(bad_key, 2);
	ck_assert_int_eq(ember_go_read_labels(fuzz_mem_read, &m, 26, B, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "ok=1\n");
	/* A length past the slice's capacity, or past any set: none. */
	put64(B + 8, 3);
	ck_assert_int_eq(ember_go_read_labels(fuzz_mem_read, &m, 26, B, out, sizeof(out)),
	                 -EBADMSG);
	put64(B + 8, 1u << 30);
	put64(B + 16, 1u << 30);
	ck_assert_int_eq(ember_go_read_labels(fuzz_mem_read, &m, 26, B, out, sizeof(out)),
	                 -EBADMSG);
	/* A string pointing outside memory: the set is unreadable, not half read. */
	slice_set(bad_key, 2);
	put64(B + 0x100 + 32 + 16, 0xdead0000);
	ck_assert_int_eq(ember_go_read_labels(fuzz_mem_read, &m, 26, B, out, sizeof(out)), -EFAULT);
	/* A value longer than kept is cut. */
	memset(long_value, 'v', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = '\0';
	{
		const char *const kv[][2] = {{"k", long_value}};

		slice_set(kv, 1);
	}
	ck_assert_int_eq(ember_go_read_labels(fuzz_mem_read, &m, 26, B, out, sizeof(out)), 0);
	ck_assert_uint_eq(strlen(out), 2 + EMBER_GO_MAX_VALUE + 1);
	/* No set at all. */
	ck_assert_int_ne(ember_go_read_labels(fuzz_mem_read, &m, 26, 0x1000, out, sizeof(out)), 0);
}
END_TEST

START_TEST(offsets_per_version)
{
	uint16_t gm, curg, labels;

	ck_assert_int_eq(ember_go_offsets(19, &gm, &curg, &labels), 0);
	ck_assert_uint_eq(gm, 48);
	ck_assert_uint_eq(curg, 192);
	ck_assert_uint_eq(labels, 360);
	ck_assert_int_eq(ember_go_offsets(25, &gm, &curg, &labels), 0);
	ck_assert_uint_eq(curg, 184);
	ck_assert_uint_eq(labels, 344);
	ck_assert_int_eq(ember_go_offsets(26, &gm, &curg, &labels), 0);
	ck_assert_uint_eq(labels, 352);
	ck_assert_int_eq(ember_go_offsets(16, &gm, &curg, &labels), -ENOENT);
	ck_assert_int_eq(ember_go_offsets(27, &gm, &curg, &labels), -ENOENT);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("go_labels");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, a_sorted_slice_from_go_1_24);
	tcase_add_test(tc, a_map_up_to_go_1_23);
	tcase_add_test(tc, hostile_sets_give_nothing_wrong);
	tcase_add_test(tc, offsets_per_version);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
