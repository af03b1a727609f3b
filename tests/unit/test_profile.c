// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "profile_fixture.h"

START_TEST(interning_dedups_and_index0_is_empty)
{
	struct ember_profile p;
	uint32_t a, b, c;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	ck_assert_str_eq(ember_profile_str(&p, 0), "");
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "x", &a), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "y", &b), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "x", &c), 0);
	ck_assert_uint_eq(a, c);
	ck_assert_uint_ne(a, b);
	ck_assert_int_eq(ember_profile_intern(&p, "a\0b", 3, &a), -EINVAL);
	ck_assert_str_eq(ember_profile_str(&p, 9999), "");
	ember_profile_free(&p);
}
END_TEST

START_TEST(many_strings_survive_growth)
{
	struct ember_profile p;
	char name[32];
	uint32_t id;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	for (int i = 0; i < 50000; i++) {
		snprintf(name, sizeof(name), "fn_%d", i);
		ck_assert_int_eq(ember_profile_intern_cstr(&p, name, &id), 0);
		ck_assert_uint_eq(id, (uint32_t)i + 1);
	}
	for (int i = 0; i < 50000; i += 997) {
		snprintf(name, sizeof(name), "fn_%d", i);
		ck_assert_int_eq(ember_profile_intern_cstr(&p, name, &id), 0);
		ck_assert_uint_eq(id, (uint32_t)i + 1);
		ck_assert_str_eq(ember_profile_str(&p, id), name);
	}
	ember_profile_free(&p);
}
END_TEST

START_TEST(samples_aggregate_by_key)
{
	struct ember_profile p;

	fixture_build(&p);
	ck_assert_uint_eq(p.total_count, 12);
	ck_assert_uint_eq(p.samples.len, 4);
	ck_assert_uint_eq(ember_profile_sample(&p, 0)->count, 6);
	ck_assert_uint_eq(ember_profile_sample(&p, 0)->ntimestamps, 6);
	ck_assert_uint_eq(ember_profile_sample(&p, 1)->ntimestamps, 0);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "lost.samples"), 4);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "nothing"), 0);
	ember_profile_free(&p);
}
END_TEST

START_TEST(locations_dedup_and_validate)
{
	struct ember_profile p;
	struct ember_line bad = {.function = 77};
	uint32_t id, id2, loc;

	fixture_build(&p);
	ck_assert_int_eq(ember_profile_find_location(&p, 0, EMBER_FRAME_NATIVE, 0x401000, &id), 0);
	ck_assert_int_eq(
	    ember_profile_add_location(&p, 0, EMBER_FRAME_NATIVE, 0x401000, NULL, 0, &id2), 0);
	ck_assert_uint_eq(id, id2);
	ck_assert_int_eq(ember_profile_find_location(&p, 0, EMBER_FRAME_KERNEL, 0x401000, &id),
	                 -ENOENT);
	/* A caller's frame at the same address is another location, and stays one merged. */
	ck_assert_int_eq(ember_profile_find_location(
			     &p, 0, EMBER_FRAME_NATIVE | EMBER_LOCATION_CALL, 0x401000, &id),
	                 -ENOENT);
	ck_assert_int_eq(ember_profile_add_location(&p, 0, EMBER_FRAME_NATIVE | EMBER_LOCATION_CALL,
	                                            0x401000, NULL, 0, &id),
	                 0);
	ck_assert_uint_ne(id, id2);
	ck_assert_int_eq(ember_profile_location(&p, id)->kind, EMBER_FRAME_NATIVE);
	ck_assert(ember_profile_location(&p, id)->call && !ember_profile_location(&p, id2)->call);
	{
		struct ember_profile merged;
		uint32_t m1, m2;

		ck_assert_int_eq(ember_profile_init(&merged), 0);
		ck_assert_int_eq(ember_profile_merge(&merged, &p), 0);
		ck_assert_int_eq(
		    ember_profile_find_location(&merged, 0, EMBER_FRAME_NATIVE, 0x401000, &m1), 0);
		ck_assert_int_eq(
		    ember_profile_find_location(
			&merged, 0, EMBER_FRAME_NATIVE | EMBER_LOCATION_CALL, 0x401000, &m2),
		    0);
		ck_assert_uint_ne(m1, m2);
		ember_profile_free(&merged);
	}
	ck_assert_int_eq(ember_profile_add_location(&p, 0, EMBER_FRAME_KIND_MAX, 0x9, NULL, 0, &id),
	                 -EINVAL);
	ck_assert_int_eq(ember_profile_add_location(&p, 0, EMBER_FRAME_NATIVE, 0x9, &bad, 1, &id),
	                 -EINVAL);
	ck_assert_int_eq(ember_profile_add_location(&p, 55, EMBER_FRAME_NATIVE, 0x9, NULL, 0, &id),
	                 -EINVAL);
	loc = 12345;
	ck_assert_int_eq(ember_profile_add_stack(&p, &loc, 1, &id), -EINVAL);
	ember_profile_free(&p);
}
END_TEST

START_TEST(unsymbolized_names)
{
	struct ember_profile p;
	char buf[128];
	uint32_t id;

	fixture_build(&p);
	ck_assert_int_eq(
	    ember_profile_find_location(&p, 1, EMBER_FRAME_NATIVE, 0x7f0000000234, &id), 0);
	ember_profile_unsymbolized_name(&p, ember_profile_location(&p, id), buf, sizeof(buf));
	ck_assert_str_eq(buf, "libfoo.so+0x1234");
	ck_assert_int_eq(
	    ember_profile_add_location(&p, EMBER_NONE, EMBER_FRAME_UNKNOWN, 0x5, NULL, 0, &id), 0);
	ember_profile_unsymbolized_name(&p, ember_profile_location(&p, id), buf, sizeof(buf));
	ck_assert_str_eq(buf, "[unknown]");
	ember_profile_free(&p);
}
END_TEST

START_TEST(reset_keeps_metadata)
{
	struct ember_profile p;

	fixture_build(&p);
	ck_assert_int_eq(ember_profile_reset(&p), 0);
	ck_assert_uint_eq(p.samples.len, 0);
	ck_assert_uint_eq(p.total_count, 0);
	ck_assert_uint_eq(ember_profile_nstrings(&p), 1);
	ck_assert_uint_eq(p.sample_hz, 100);
	ember_profile_free(&p);
}
END_TEST

START_TEST(off_cpu_samples_and_views)
{
	struct ember_profile p, merged;
	enum ember_view v;
	uint64_t off = 0, cpu = 0;

	fixture_build_off_cpu(&p);
	ck_assert(p.off_cpu);
	ck_assert_uint_eq(p.total_count, 12);
	ck_assert_uint_eq(p.total_off_cpu_ns, 4000000000ull);
	ck_assert_uint_eq(ember_profile_total(&p, EMBER_VIEW_CPU), 12);
	ck_assert_uint_eq(ember_profile_total(&p, EMBER_VIEW_OFF_CPU), 4000000000ull);
	/* Both: a CPU sample stands for a period (10 ms). */
	ck_assert_uint_eq(ember_profile_total(&p, EMBER_VIEW_BOTH),
	                  4000000000ull + 12 * 10000000ull);
	for (size_t i = 0; i < p.samples.len; i++) {
		const struct ember_sample *s = ember_profile_sample(&p, (uint32_t)i);

		/* Either one or the other. */
		ck_assert((s->count > 0) != (s->off_cpu_ns > 0));
		ck_assert((s->key.wait != 0) == (s->off_cpu_ns > 0));
		off += ember_sample_value(&p, s, EMBER_VIEW_OFF_CPU);
		cpu += ember_sample_value(&p, s, EMBER_VIEW_CPU);
	}
	ck_assert_uint_eq(off, 4000000000ull);
	ck_assert_uint_eq(cpu, 12);
	/* Merging keeps off-CPU samples apart from CPU samples, with their reasons. */
	ck_assert_int_eq(ember_profile_init(&merged), 0);
	merged.period_ns = p.period_ns;
	ck_assert_int_eq(ember_profile_merge(&merged, &p), 0);
	ck_assert_int_eq(ember_profile_merge(&merged, &p), 0);
	ck_assert(merged.off_cpu);
	ck_assert_uint_eq(merged.total_count, 24);
	ck_assert_uint_eq(merged.total_off_cpu_ns, 8000000000ull);
	ck_assert_uint_eq(merged.samples.len, p.samples.len);
	for (int i = 0; i < EMBER_VIEW_MAX; i++) {
		ck_assert_int_eq(ember_view_parse(ember_view_name((enum ember_view)i), &v), 0);
		ck_assert_int_eq(v, i);
	}
	ck_assert_int_eq(ember_view_parse("offcpu", &v), -EINVAL);
	ember_profile_free(&merged);
	ember_profile_free(&p);
}
END_TEST

START_TEST(frame_kind_names_roundtrip)
{
	for (int k = 0; k < EMBER_FRAME_KIND_MAX; k++)
		ck_assert_int_eq(
		    ember_frame_kind_parse(ember_frame_kind_name((enum ember_frame_kind)k)), k);
	ck_assert_str_eq(ember_frame_kind_name(EMBER_FRAME_KERNEL), "kernel");
}
END_TEST

static Suite *profile_suite(void)
{
	Suite *s = suite_create("profile");
	TCase *tc = tcase_create("profile");

	tcase_add_test(tc, interning_dedups_and_index0_is_empty);
	tcase_add_test(tc, many_strings_survive_growth);
	tcase_add_test(tc, samples_aggregate_by_key);
	tcase_add_test(tc, locations_dedup_and_validate);
	tcase_add_test(tc, unsymbolized_names);
	tcase_add_test(tc, reset_keeps_metadata);
	tcase_add_test(tc, frame_kind_names_roundtrip);
	tcase_add_test(tc, off_cpu_samples_and_views);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(profile_suite)
