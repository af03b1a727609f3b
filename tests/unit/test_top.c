// SPDX-License-Identifier: Apache-2.0
/* Flat function statistics: self, total once per sample, ordering, diff shares, printing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "profile_fixture.h"
#include "symbolizer/formats/in_folded.h"
#include "symbolizer/profile/top.h"

static void tree_of_text(struct ember_flame *t, struct ember_profile *p, const char *text)
{
	ck_assert_int_eq(ember_profile_init(p), 0);
	ck_assert_int_eq(ember_read_folded(p, text, strlen(text)), 0);
	ck_assert_int_eq(ember_flame_init(t, false), 0);
	ck_assert_int_eq(ember_flame_add_profile(t, p, EMBER_FLAME_NEW), 0);
	ck_assert_int_eq(ember_flame_finish(t), 0);
}

static const struct ember_func_stat *
find(const struct ember_flame *t, const struct ember_func_stat *s, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ember_flame_str(t, s[i].name), name))
			return &s[i];
	ck_abort_msg("no function %s", name);
	return NULL;
}

START_TEST(self_and_total_of_the_fixture)
{
	struct ember_profile p;
	struct ember_flame t;
	struct ember_func_stat *s;
	size_t n;

	fixture_build(&p);
	ck_assert_int_eq(ember_flame_init(&t, true), 0);
	ck_assert_int_eq(ember_flame_add_profile(&t, &p, EMBER_FLAME_NEW), 0);
	ck_assert_int_eq(ember_flame_finish(&t), 0);
	ck_assert_int_eq(ember_top_compute(&t, EMBER_TOP_BY_SELF, &s, &n), 0);
	/* main, work, leaf_a, leaf_b, libfoo.so+0x1234: processes and "all" are not functions */
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(ember_flame_str(&t, s[0].name), "leaf_a");
	ck_assert_uint_eq(s[0].self[0], 6);
	ck_assert_str_eq(ember_flame_str(&t, s[1].name), "leaf_b");
	ck_assert_str_eq(ember_flame_str(&t, s[2].name), "main");
	ck_assert_uint_eq(s[2].self[0], 2);
	ck_assert_uint_eq(s[2].total[0], 12); /* both processes */
	ck_assert_uint_eq(find(&t, s, n, "work")->total[0], 9);
	ck_assert_uint_eq(find(&t, s, n, "work")->self[0], 0);
	free(s);
	ck_assert_int_eq(ember_top_compute(&t, EMBER_TOP_BY_TOTAL, &s, &n), 0);
	ck_assert_str_eq(ember_flame_str(&t, s[0].name), "main");
	ck_assert_str_eq(ember_flame_str(&t, s[1].name), "work");
	free(s);
	ember_flame_free(&t);
	ember_profile_free(&p);
}
END_TEST

START_TEST(recursion_counts_once_per_sample)
{
	struct ember_profile p;
	struct ember_flame t;
	struct ember_func_stat *s;
	size_t n;

	tree_of_text(&t, &p, "p;main;walk;walk;walk;visit 5\np;main;walk;visit;walk 3\n");
	ck_assert_int_eq(ember_top_compute(&t, EMBER_TOP_BY_TOTAL, &s, &n), 0);
	ck_assert_uint_eq(find(&t, s, n, "walk")->total[0], 8);
	ck_assert_uint_eq(find(&t, s, n, "walk")->self[0], 3);
	ck_assert_uint_eq(find(&t, s, n, "visit")->total[0], 8);
	ck_assert_uint_eq(find(&t, s, n, "visit")->self[0], 5);
	ck_assert_uint_eq(find(&t, s, n, "main")->total[0], 8);
	free(s);
	ember_flame_free(&t);
	ember_profile_free(&p);
}
END_TEST

START_TEST(changes_are_shares_of_each_profile)
{
	struct ember_profile base, cur;
	struct ember_flame t;
	struct ember_func_stat *s;
	const char *b = "p;main;steady 50\np;main;shrinks 50\n";
	const char *c = "p;main;steady 100\np;main;shrinks 20\np;main;grows 60\n";
	size_t n;

	ck_assert_int_eq(ember_profile_init(&base), 0);
	ck_assert_int_eq(ember_read_folded(&base, b, strlen(b)), 0);
	ck_assert_int_eq(ember_profile_init(&cur), 0);
	ck_assert_int_eq(ember_read_folded(&cur, c, strlen(c)), 0);
	ck_assert_int_eq(ember_flame_init(&t, false), 0);
	ck_assert_int_eq(ember_flame_add_profile(&t, &cur, EMBER_FLAME_NEW), 0);
	ck_assert_int_eq(ember_flame_add_profile(&t, &base, EMBER_FLAME_BASE), 0);
	ck_assert_int_eq(ember_flame_finish(&t), 0);
	ck_assert_int_eq(ember_top_compute(&t, EMBER_TOP_BY_CHANGE, &s, &n), 0);
	/* Shares of each profile's own total (100 and 180 samples): steady doubled its
	 * samples but its share grew only from 50% to 55.6%. */
	ck_assert_str_eq(ember_flame_str(&t, s[0].name), "shrinks"); /* 50% -> 11.1% */
	ck_assert_str_eq(ember_flame_str(&t, s[1].name), "grows");   /* 0% -> 33.3% */
	ck_assert_str_eq(ember_flame_str(&t, s[2].name), "steady");  /* +5.6 pp */
	ck_assert_str_eq(ember_flame_str(&t, s[3].name), "main");    /* no change */
	ck_assert(fabs(ember_top_share(&t, 0, s[1].self[0]) - 60.0 / 180) < 1e-12);
	ck_assert(fabs(ember_top_share(&t, 1, s[0].self[1]) - 0.5) < 1e-12);
	ck_assert(fabs(ember_top_share(&t, 0, s[2].total[0]) -
	               ember_top_share(&t, 1, s[2].total[1]) - (100.0 / 180 - 0.5)) < 1e-12);
	ck_assert_uint_eq(s[3].total[0], 180);
	ck_assert_uint_eq(s[3].total[1], 100);
	free(s);
	ember_flame_free(&t);
	ember_profile_free(&base);
	ember_profile_free(&cur);
}
END_TEST

START_TEST(off_cpu_view_counts_time)
{
	struct ember_profile p;
	struct ember_flame t;
	struct ember_top_opts o = {.limit = 3, .order = EMBER_TOP_BY_SELF};
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);

	fixture_build_off_cpu(&p);
	p.view = EMBER_VIEW_OFF_CPU;
	ck_assert_int_eq(ember_profile_stat_add(&p, "off_cpu.recorded", 3), 0);
	ck_assert_int_eq(ember_flame_init(&t, false), 0);
	ck_assert_int_eq(ember_flame_add_profile(&t, &p, EMBER_FLAME_NEW), 0);
	ck_assert_int_eq(ember_flame_finish(&t), 0);
	ck_assert_uint_eq(t.slot_total[0], 4000000000ull);
	ck_assert_int_eq(ember_top_print(&t, &p, &o, mem), 0);
	fclose(mem);
	ck_assert_str_eq(text, "4.00 s off CPU in 5.00 s (3 waits recorded, 0 below the minimum, "
	                       "0 sampled out) at 100 Hz, 4 lost\n"
	                       "Showing 3 of 4 functions (time off CPU), sorted by self\n"
	                       "      self  self%   sum%      total total%  function\n"
	                       "    3.00 s  75.0%  75.0%     3.00 s  75.0%  wait_lock\n"
	                       "    1.00 s  25.0% 100.0%     1.00 s  25.0%  wait_io\n"
	                       "    0.0 ms   0.0% 100.0%     4.00 s 100.0%  main\n");
	free(text);
	ember_flame_free(&t);
	ember_profile_free(&p);
}
END_TEST

START_TEST(prints_a_table_like_pprof)
{
	struct ember_profile p;
	struct ember_flame t;
	struct ember_top_opts o = {.limit = 2, .order = EMBER_TOP_BY_SELF};
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);

	fixture_build(&p);
	strcpy(p.host, "h1");
	ck_assert_int_eq(ember_flame_init(&t, false), 0);
	ck_assert_int_eq(ember_flame_add_profile(&t, &p, EMBER_FLAME_NEW), 0);
	ck_assert_int_eq(ember_flame_finish(&t), 0);
	ck_assert_int_eq(ember_top_print(&t, &p, &o, mem), 0);
	fclose(mem);
	ck_assert_str_eq(text, "h1: 12 samples (120.0 ms of CPU in 5.00 s) at 100 Hz, 4 lost\n"
	                       "Showing 2 of 5 functions, sorted by self\n"
	                       "      self  self%   sum%      total total%  function\n"
	                       "         6  50.0%  50.0%          6  50.0%  leaf_a\n"
	                       "         3  25.0%  75.0%          3  25.0%  leaf_b\n");
	free(text);
	ember_flame_free(&t);
	ember_profile_free(&p);
}
END_TEST

static Suite *top_suite(void)
{
	Suite *s = suite_create("top");
	TCase *tc = tcase_create("top");

	tcase_add_test(tc, self_and_total_of_the_fixture);
	tcase_add_test(tc, recursion_counts_once_per_sample);
	tcase_add_test(tc, changes_are_shares_of_each_profile);
	tcase_add_test(tc, prints_a_table_like_pprof);
	tcase_add_test(tc, off_cpu_view_counts_time);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(top_suite)
