// SPDX-License-Identifier: Apache-2.0
/* ember_profile_merge: a whole recording kept while each interval is shipped and reset. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "profile_fixture.h"
#include "symbolizer/formats/profile_writer.h"

static char *folded(const struct ember_profile *p)
{
	char *buf;
	size_t len;

	ck_assert_int_eq(ember_format_encode(EMBER_FORMAT_FOLDED, p, &buf, &len), 0);
	return buf;
}

START_TEST(merge_into_empty_equals_the_source)
{
	struct ember_profile src, dst;
	char *a, *b;

	fixture_build(&src);
	ck_assert_int_eq(ember_profile_init(&dst), 0);
	/* Strings already in dst get other indices than in src: merge must map them. */
	{
		uint32_t id;

		ck_assert_int_eq(ember_profile_intern_cstr(&dst, "something else", &id), 0);
	}
	ck_assert_int_eq(ember_profile_merge(&dst, &src), 0);
	a = folded(&src);
	b = folded(&dst);
	ck_assert_str_eq(a, b);
	ck_assert_uint_eq(dst.total_count, src.total_count);
	ck_assert_uint_eq(dst.samples.len, src.samples.len);
	ck_assert_uint_eq(dst.start_ns, src.start_ns);
	ck_assert_uint_eq(dst.end_ns, src.end_ns);
	ck_assert_uint_eq(ember_profile_stat_get(&dst, "lost.samples"), 4);
	free(a);
	free(b);
	ember_profile_free(&src);
	ember_profile_free(&dst);
}
END_TEST

START_TEST(merging_twice_doubles_counts_and_keeps_timestamps)
{
	struct ember_profile src, dst;
	struct ember_process_attrs pa = {.pid = 10};
	const struct ember_process_attrs *got;
	uint64_t timestamps = 0;

	fixture_build(&src);
	ck_assert_int_eq(ember_profile_intern_cstr(&src, "/usr/bin/app", &pa.exe_path), 0);
	ck_assert_int_eq(ember_profile_set_process(&src, &pa), 0);
	ck_assert_int_eq(ember_profile_init(&dst), 0);
	ck_assert_int_eq(ember_profile_merge(&dst, &src), 0);
	/* The second interval: later times. */
	src.start_ns += 10000000000ull;
	src.end_ns += 10000000000ull;
	ck_assert_int_eq(ember_profile_merge(&dst, &src), 0);
	ck_assert_uint_eq(dst.total_count, 2 * src.total_count);
	ck_assert_uint_eq(dst.samples.len, src.samples.len);
	ck_assert_uint_eq(dst.stacks.len, src.stacks.len);
	ck_assert_uint_eq(dst.locations.len, src.locations.len);
	ck_assert_uint_eq(dst.functions.len, src.functions.len);
	ck_assert_uint_eq(dst.mappings.len, src.mappings.len);
	ck_assert_uint_eq(dst.start_ns, src.start_ns - 10000000000ull);
	ck_assert_uint_eq(dst.end_ns, src.end_ns);
	for (size_t i = 0; i < dst.samples.len; i++)
		timestamps += ember_profile_sample(&dst, (uint32_t)i)->ntimestamps;
	ck_assert_uint_eq(timestamps, 12);
	ck_assert_uint_eq(ember_profile_stat_get(&dst, "lost.samples"), 8);
	got = ember_profile_find_process(&dst, 10);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(ember_profile_str(&dst, got->exe_path), "/usr/bin/app");
	ember_profile_free(&src);
	ember_profile_free(&dst);
}
END_TEST

START_TEST(set_process_replaces_and_checks_strings)
{
	struct ember_profile p;
	struct ember_process_attrs pa = {.pid = 3, .exe_path = 999};

	ck_assert_int_eq(ember_profile_init(&p), 0);
	ck_assert_int_eq(ember_profile_set_process(&p, &pa), -EINVAL);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "/bin/a", &pa.exe_path), 0);
	ck_assert_int_eq(ember_profile_set_process(&p, &pa), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "/bin/b", &pa.exe_path), 0);
	ck_assert_int_eq(ember_profile_set_process(&p, &pa), 0);
	ck_assert_uint_eq(p.processes.len, 1);
	ck_assert_str_eq(ember_profile_str(&p, ember_profile_find_process(&p, 3)->exe_path),
	                 "/bin/b");
	ck_assert_int_eq(ember_profile_reset(&p), 0);
	ck_assert_ptr_null(ember_profile_find_process(&p, 3));
	ember_profile_free(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("profile_merge");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, merge_into_empty_equals_the_source);
	tcase_add_test(tc, merging_twice_doubles_counts_and_keeps_timestamps);
	tcase_add_test(tc, set_process_replaces_and_checks_strings);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
