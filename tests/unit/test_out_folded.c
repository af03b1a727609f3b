// SPDX-License-Identifier: Apache-2.0
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "profile_fixture.h"
#include "symbolizer/formats/out_folded.h"
#include "symbolizer/formats/profile_writer.h"

static char *folded_of(const struct ember_profile *p)
{
	char *buf;
	size_t len;

	ck_assert_int_eq(ember_format_encode(EMBER_FORMAT_FOLDED, p, &buf, &len), 0);
	return buf;
}

START_TEST(writes_sorted_aggregated_lines)
{
	struct ember_profile p;
	char *text;

	fixture_build(&p);
	text = folded_of(&p);
	ck_assert_str_eq(text, "app;main;libfoo.so+0x1234 1\n"
	                       "app;main;work;leaf_a 6\n"
	                       "app;main;work;leaf_b 3\n"
	                       "other;main 2\n");
	free(text);
	ember_profile_free(&p);
}
END_TEST

START_TEST(merges_threads_and_expands_inline_frames)
{
	struct ember_profile p;
	struct ember_sample_key key = {.pid = 1, .tid = 1};
	struct ember_line lines[2];
	uint32_t loc, stack;
	char *text;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	/* One address that is inlined_fn inlined into outer_fn. */
	lines[0].function = fixture_fn(&p, "inlined_fn");
	lines[0].line = 10;
	lines[1].function = fixture_fn(&p, "outer_fn");
	lines[1].line = 20;
	ck_assert_int_eq(
	    ember_profile_add_location(&p, EMBER_NONE, EMBER_FRAME_NATIVE, 0x10, lines, 2, &loc),
	    0);
	ck_assert_int_eq(ember_profile_add_stack(&p, &loc, 1, &stack), 0);
	key.stack = stack;
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "x;y\nz", &key.comm), 0);
	ck_assert_int_eq(ember_profile_add_sample(&p, &key, 2, 0), 0);
	key.tid = 2; /* another thread, same process and stack: one line */
	ck_assert_int_eq(ember_profile_add_sample(&p, &key, 3, 0), 0);
	text = folded_of(&p);
	ck_assert_str_eq(text, "x_y_z;outer_fn;inlined_fn 5\n");
	free(text);
	ember_profile_free(&p);
}
END_TEST

START_TEST(views_of_a_profile_with_off_cpu_time)
{
	struct ember_profile p;
	char *text;

	fixture_build_off_cpu(&p);
	/* CPU samples only: the off-CPU samples are no lines of the CPU view. */
	text = folded_of(&p);
	ck_assert_str_eq(text, "app;main;libfoo.so+0x1234 1\n"
	                       "app;main;work;leaf_a 6\n"
	                       "app;main;work;leaf_b 3\n"
	                       "other;main 2\n");
	free(text);
	/* Off CPU: microseconds waited, the two waits at wait_lock summed. */
	p.view = EMBER_VIEW_OFF_CPU;
	text = folded_of(&p);
	ck_assert_str_eq(text, "app;main;wait_io 1000000\n"
	                       "app;main;work;wait_lock 3000000\n");
	free(text);
	/* Both: microseconds, a CPU sample standing for its 10 ms period. */
	p.view = EMBER_VIEW_BOTH;
	text = folded_of(&p);
	ck_assert_str_eq(text, "app;main;libfoo.so+0x1234 10000\n"
	                       "app;main;wait_io 1000000\n"
	                       "app;main;work;leaf_a 60000\n"
	                       "app;main;work;leaf_b 30000\n"
	                       "app;main;work;wait_lock 3000000\n"
	                       "other;main 20000\n");
	free(text);
	ember_profile_free(&p);
}
END_TEST

START_TEST(empty_profile_is_empty_file)
{
	struct ember_profile p;
	char *text;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	text = folded_of(&p);
	ck_assert_str_eq(text, "");
	free(text);
	ember_profile_free(&p);
}
END_TEST

static Suite *folded_suite(void)
{
	Suite *s = suite_create("out_folded");
	TCase *tc = tcase_create("out_folded");

	tcase_add_test(tc, writes_sorted_aggregated_lines);
	tcase_add_test(tc, merges_threads_and_expands_inline_frames);
	tcase_add_test(tc, empty_profile_is_empty_file);
	tcase_add_test(tc, views_of_a_profile_with_off_cpu_time);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(folded_suite)
