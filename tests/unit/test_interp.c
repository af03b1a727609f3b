// SPDX-License-Identifier: Apache-2.0
/*
 * The interpreters' registry (symbolizer/interp/interp.h) and the tags of
 * interpreted frames (bpf/interp.h): which words are a runtime's frames or
 * markers, the names --interpreters takes, the kind each runtime's frames
 * have in profiles, and how a frame of a runtime not enabled is named.
 */
#include <errno.h>
#include <string.h>

#include "check_main.h"
#include "symbolizer/interp/interp.h"
#include "symbolizer/profile/profile.h"

#define FRAME(rt, bits) (EMBER_INTERP_TAG_FRAME(rt) << EMBER_INTERP_TAG_SHIFT | (bits))
#define MARKER(rt, why) (EMBER_INTERP_TAG_MARKER(rt) << EMBER_INTERP_TAG_SHIFT | (why))

START_TEST(words_say_their_runtime)
{
	ck_assert_uint_eq(ember_interp_word_runtime(FRAME(EMBER_RUNTIME_PYTHON, 0x7f00001234)),
	                  EMBER_RUNTIME_PYTHON);
	ck_assert(!ember_interp_word_is_marker(FRAME(EMBER_RUNTIME_PYTHON, 0x7f00001234)));
	ck_assert_uint_eq(ember_interp_word_runtime(MARKER(EMBER_RUNTIME_PYTHON, 1)),
	                  EMBER_RUNTIME_PYTHON);
	ck_assert(ember_interp_word_is_marker(MARKER(EMBER_RUNTIME_PYTHON, 1)));
	/* Native addresses, runtime 0, a runtime this build does not know, other top bytes. */
	ck_assert_uint_eq(ember_interp_word_runtime(0x7f0000001234), 0);
	ck_assert_uint_eq(ember_interp_word_runtime(0xffffffff81000000), 0);
	ck_assert_uint_eq(ember_interp_word_runtime(FRAME(0, 0x1000)), 0);
	ck_assert_uint_eq(ember_interp_word_runtime(MARKER(0, 1)), 0);
	ck_assert_uint_eq(ember_interp_word_runtime(FRAME(EMBER_RUNTIME_MAX, 0x1000)), 0);
	ck_assert_uint_eq(ember_interp_word_runtime(0xb7ull << 56), 0);
}
END_TEST

START_TEST(lists_of_runtimes_parse)
{
	uint32_t mask = 123;

	ck_assert_int_eq(ember_interp_parse_list("python", &mask), 0);
	ck_assert_uint_eq(mask, 1u << EMBER_RUNTIME_PYTHON);
	ck_assert_int_eq(ember_interp_parse_list("python,python", &mask), 0);
	ck_assert_uint_eq(mask, 1u << EMBER_RUNTIME_PYTHON);
	ck_assert_int_eq(ember_interp_parse_list("none", &mask), 0);
	ck_assert_uint_eq(mask, 0);
	ck_assert_int_eq(ember_interp_parse_list("all", &mask), 0);
	ck_assert_uint_eq(mask, EMBER_RUNTIMES_ALL);
	ck_assert(mask & 1u << EMBER_RUNTIME_PYTHON);
	ck_assert(!(mask & 1u));
	ck_assert_int_eq(ember_interp_parse_list("", &mask), -EINVAL);
	ck_assert_int_eq(ember_interp_parse_list("cobol", &mask), -EINVAL);
	ck_assert_int_eq(ember_interp_parse_list("python,", &mask), -EINVAL);
	ck_assert_int_eq(ember_interp_parse_list("pyth", &mask), -EINVAL);
	ck_assert_int_eq(ember_interp_parse_list("python,none", &mask), -EINVAL);
}
END_TEST

START_TEST(each_runtime_has_a_name_and_a_frame_kind)
{
	ck_assert_str_eq(ember_interp_name(EMBER_RUNTIME_PYTHON), "python");
	ck_assert_ptr_null(ember_interp_name(EMBER_RUNTIME_MAX));
	/* As profiles have always called Python's frames (OpenTelemetry's frame type). */
	ck_assert_str_eq(ember_frame_kind_name(EMBER_FRAME_INTERP(EMBER_RUNTIME_PYTHON)),
	                 "cpython");
	ck_assert_int_eq(ember_frame_kind_parse("cpython"),
	                 EMBER_FRAME_INTERP(EMBER_RUNTIME_PYTHON));
	for (uint32_t rt = 1; rt < EMBER_RUNTIME_MAX; rt++) {
		ck_assert_ptr_nonnull(ember_interp_name(rt));
		ck_assert_int_lt(EMBER_FRAME_INTERP(rt), EMBER_FRAME_KIND_MAX);
		ck_assert_str_ne(ember_frame_kind_name(EMBER_FRAME_INTERP(rt)), "unknown");
	}
}
END_TEST

/* A runtime not enabled: its frames stay unnamed (key 0), its markers say it stopped. */
START_TEST(frames_of_a_runtime_not_enabled)
{
	struct ember_interps none;
	struct ember_interp_frame f;

	ck_assert_int_eq(ember_interps_init(&none, 0, 0, NULL), 0);
	ember_interps_frame(&none, 42, FRAME(EMBER_RUNTIME_PYTHON, 0x1000), 7, 0, &f);
	ck_assert_uint_eq(f.runtime, EMBER_RUNTIME_PYTHON);
	ck_assert_ptr_null(f.marker);
	ck_assert_ptr_null(f.name);
	ck_assert_uint_eq(f.key, 0);
	ember_interps_frame(NULL, 42, MARKER(EMBER_RUNTIME_PYTHON, 1), 0, 0, &f);
	ck_assert_str_eq(f.marker, "[python frames stopped]");
	ember_interps_free(&none);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("interp");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, words_say_their_runtime);
	tcase_add_test(tc, lists_of_runtimes_parse);
	tcase_add_test(tc, each_runtime_has_a_name_and_a_frame_kind);
	tcase_add_test(tc, frames_of_a_runtime_not_enabled);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
