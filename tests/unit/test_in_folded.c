// SPDX-License-Identifier: Apache-2.0
/* The folded reader: what it builds, and what it does with malformed lines. */
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "profile_fixture.h"
#include "symbolizer/formats/in_folded.h"
#include "symbolizer/formats/profile_writer.h"

static char *folded_of(const struct ember_profile *p)
{
	char *buf;
	size_t len;

	ck_assert_int_eq(ember_format_encode(EMBER_FORMAT_FOLDED, p, &buf, &len), 0);
	return buf;
}

static void read_text(struct ember_profile *p, const char *text)
{
	ck_assert_int_eq(ember_profile_init(p), 0);
	ck_assert_int_eq(ember_read_folded(p, text, strlen(text)), 0);
}

START_TEST(round_trips_the_writer)
{
	struct ember_profile orig, back;
	char *text, *again;

	fixture_build(&orig);
	text = folded_of(&orig);
	read_text(&back, text);
	again = folded_of(&back);
	ck_assert_str_eq(again, text);
	ck_assert_uint_eq(back.total_count, orig.total_count);
	ck_assert_uint_eq(ember_profile_stat_get(&back, "report.bad_lines"), 0);
	free(text);
	free(again);
	ember_profile_free(&orig);
	ember_profile_free(&back);
}
END_TEST

START_TEST(builds_stacks_leaf_first_with_the_process_as_comm)
{
	struct ember_profile p;
	const struct ember_sample *s;
	const struct ember_stack *st;
	const struct ember_location *leaf;

	read_text(&p, "proc;outer;middle;inner 7\n");
	ck_assert_uint_eq(p.samples.len, 1);
	s = ember_profile_sample(&p, 0);
	ck_assert_uint_eq(s->count, 7);
	ck_assert_str_eq(ember_profile_str(&p, s->key.comm), "proc");
	st = ember_profile_stack(&p, s->key.stack);
	ck_assert_uint_eq(st->depth, 3);
	leaf = ember_profile_location(&p, ember_profile_stack_locations(&p, st)[0]);
	ck_assert_uint_eq(leaf->nlines, 1);
	ck_assert_str_eq(
	    ember_profile_str(
		&p, ember_profile_function(&p, ember_profile_location_lines(&p, leaf)[0].function)
			->name),
	    "inner");
	ember_profile_free(&p);
}
END_TEST

START_TEST(kernel_suffix_sets_the_kind)
{
	struct ember_profile p;
	const struct ember_stack *st;
	const uint32_t *locs;
	char *text;

	read_text(&p, "app;main;do_syscall_64_[k];ksys_read_[k] 2\napp;main 1\n");
	st = ember_profile_stack(&p, ember_profile_sample(&p, 0)->key.stack);
	locs = ember_profile_stack_locations(&p, st);
	ck_assert_uint_eq(st->depth, 3);
	ck_assert_uint_eq(ember_profile_location(&p, locs[0])->kind, EMBER_FRAME_KERNEL);
	ck_assert_uint_eq(ember_profile_location(&p, locs[1])->kind, EMBER_FRAME_KERNEL);
	ck_assert_uint_eq(ember_profile_location(&p, locs[2])->kind, EMBER_FRAME_UNKNOWN);
	text = folded_of(&p);
	ck_assert_str_eq(text, "app;main 1\napp;main;do_syscall_64;ksys_read 2\n");
	free(text);
	ember_profile_free(&p);
}
END_TEST

START_TEST(merges_repeated_lines_and_tolerates_crlf_comments_and_spaces)
{
	struct ember_profile p;
	char *text;

	read_text(&p, "# a comment\r\n"
	              "a;operator new(unsigned long) 2\r\n"
	              "\n"
	              "a;operator new(unsigned long) 3   \n"
	              "b 4");
	text = folded_of(&p);
	ck_assert_str_eq(text, "a;operator new(unsigned long) 5\nb 4\n");
	ck_assert_uint_eq(p.total_count, 9);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "report.bad_lines"), 0);
	free(text);
	ember_profile_free(&p);
}
END_TEST

START_TEST(counts_malformed_lines_and_keeps_the_rest)
{
	struct ember_profile p;
	char *text;

	read_text(&p, "good;f 1\n"
	              "no count\n"
	              "nocountatall\n"
	              "neg;f -3\n"
	              "zero;f 0\n"
	              "huge;f 99999999999999999999999\n"
	              "hex;f 0x10\n"
	              " 5\n"
	              "good;f 2\n");
	text = folded_of(&p);
	ck_assert_str_eq(text, "good;f 3\n");
	ck_assert_uint_eq(ember_profile_stat_get(&p, "report.bad_lines"), 7);
	free(text);
	ember_profile_free(&p);
}
END_TEST

START_TEST(rejects_lines_deeper_than_the_cap)
{
	struct ember_profile p;
	size_t n = EMBER_FOLDED_MAX_DEPTH + 1, len = 0;
	char *line = malloc(n * 2 + 32);

	memcpy(line, "p", 1);
	len = 1;
	for (size_t i = 0; i < n; i++) {
		memcpy(line + len, ";f", 2);
		len += 2;
	}
	memcpy(line + len, " 1\nok;g 1\n", 10);
	len += 10;
	ck_assert_int_eq(ember_profile_init(&p), 0);
	ck_assert_int_eq(ember_read_folded(&p, line, len), 0);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "report.bad_lines"), 1);
	ck_assert_uint_eq(p.total_count, 1);
	free(line);
	ember_profile_free(&p);
}
END_TEST

START_TEST(empty_frames_and_nul_bytes_are_safe)
{
	struct ember_profile p;
	static const char text[] = "p;;x 1\nbad\0line;f 1\n;f 2\n";
	char *out;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	ck_assert_int_eq(ember_read_folded(&p, text, sizeof(text) - 1), 0);
	out = folded_of(&p);
	ck_assert_str_eq(out, "[unknown];f 2\np;[unknown];x 1\n");
	ck_assert_uint_eq(ember_profile_stat_get(&p, "report.bad_lines"), 1);
	free(out);
	ember_profile_free(&p);
}
END_TEST

static Suite *in_folded_suite(void)
{
	Suite *s = suite_create("in_folded");
	TCase *tc = tcase_create("in_folded");

	tcase_add_test(tc, round_trips_the_writer);
	tcase_add_test(tc, builds_stacks_leaf_first_with_the_process_as_comm);
	tcase_add_test(tc, kernel_suffix_sets_the_kind);
	tcase_add_test(tc, merges_repeated_lines_and_tolerates_crlf_comments_and_spaces);
	tcase_add_test(tc, counts_malformed_lines_and_keeps_the_rest);
	tcase_add_test(tc, rejects_lines_deeper_than_the_cap);
	tcase_add_test(tc, empty_frames_and_nul_bytes_are_safe);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(in_folded_suite)
