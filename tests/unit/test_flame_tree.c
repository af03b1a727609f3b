// SPDX-License-Identifier: Apache-2.0
/* The frame tree: shape, counts, order, process roots, inline frames, two slots. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "profile_fixture.h"
#include "symbolizer/profile/flame_tree.h"
#include "symbolizer/formats/in_folded.h"

static const char *node_name(const struct ember_flame *t, uint32_t i)
{
	return ember_flame_str(t, ember_flame_func(t, ember_flame_node(t, i)->func)->name);
}

/* The child of parent named name, or EMBER_NONE. */
static uint32_t child(const struct ember_flame *t, uint32_t parent, const char *name)
{
	for (uint32_t c = ember_flame_node(t, parent)->first_child; c != EMBER_NONE;
	     c = ember_flame_node(t, c)->next_sibling)
		if (!strcmp(node_name(t, c), name))
			return c;
	return EMBER_NONE;
}

static uint32_t path(const struct ember_flame *t, const char *const *names)
{
	uint32_t n = 0;

	for (; *names && n != EMBER_NONE; names++)
		n = child(t, n, *names);
	ck_assert_uint_ne(n, EMBER_NONE);
	return n;
}

static void build(struct ember_flame *t, const struct ember_profile *p, bool by_pid)
{
	ck_assert_int_eq(ember_flame_init(t, by_pid), 0);
	ck_assert_int_eq(ember_flame_add_profile(t, p, EMBER_FLAME_NEW), 0);
	ck_assert_int_eq(ember_flame_finish(t), 0);
}

START_TEST(counts_total_and_self_along_paths)
{
	struct ember_profile p;
	struct ember_flame t;
	const struct ember_flame_node *n;

	fixture_build(&p);
	build(&t, &p, true);
	ck_assert_str_eq(node_name(&t, 0), "all");
	ck_assert_uint_eq(ember_flame_node(&t, 0)->total[0], 12);
	ck_assert_uint_eq(ember_flame_node(&t, 0)->self[0], 0);
	ck_assert_uint_eq(t.slot_total[0], 12);
	n = ember_flame_node(&t, path(&t, (const char *[]){"app [10]", "main", NULL}));
	ck_assert_uint_eq(n->total[0], 10);
	ck_assert_uint_eq(n->self[0], 0);
	ck_assert_uint_eq(n->depth, 2);
	n = ember_flame_node(&t, path(&t, (const char *[]){"app [10]", "main", "work", NULL}));
	ck_assert_uint_eq(n->total[0], 9);
	n = ember_flame_node(
	    &t, path(&t, (const char *[]){"app [10]", "main", "work", "leaf_a", NULL}));
	ck_assert_uint_eq(n->total[0], 6);
	ck_assert_uint_eq(n->self[0], 6);
	ck_assert_uint_eq(n->first_child, EMBER_NONE);
	ck_assert_uint_eq(ember_flame_func(&t, n->func)->kind, EMBER_FRAME_NATIVE);
	n = ember_flame_node(
	    &t, path(&t, (const char *[]){"app [10]", "main", "libfoo.so+0x1234", NULL}));
	ck_assert_uint_eq(n->total[0], 1);
	n = ember_flame_node(&t, path(&t, (const char *[]){"other [20]", "main", NULL}));
	ck_assert_uint_eq(n->self[0], 2);
	ck_assert_uint_eq(t.max_depth, 4);
	ember_flame_free(&t);
	ember_profile_free(&p);
}
END_TEST

START_TEST(children_are_ordered_by_name)
{
	struct ember_profile p;
	struct ember_flame t;
	const char *text = "p;zeta 1\np;alpha 1\np;mid 1\np;alpha;b 1\np;alpha;a 1\n";
	uint32_t c;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	ck_assert_int_eq(ember_read_folded(&p, text, strlen(text)), 0);
	build(&t, &p, true);
	c = ember_flame_node(&t, path(&t, (const char *[]){"p", NULL}))->first_child;
	ck_assert_str_eq(node_name(&t, c), "alpha");
	ck_assert_uint_eq(ember_flame_node(&t, c)->total[0], 3);
	ck_assert_uint_eq(ember_flame_node(&t, c)->self[0], 1);
	ck_assert_str_eq(node_name(&t, ember_flame_node(&t, c)->first_child), "a");
	c = ember_flame_node(&t, c)->next_sibling;
	ck_assert_str_eq(node_name(&t, c), "mid");
	c = ember_flame_node(&t, c)->next_sibling;
	ck_assert_str_eq(node_name(&t, c), "zeta");
	ck_assert_uint_eq(ember_flame_node(&t, c)->next_sibling, EMBER_NONE);
	ember_flame_free(&t);
	ember_profile_free(&p);
}
END_TEST

START_TEST(processes_split_by_pid_only_when_asked)
{
	struct ember_profile p;
	struct ember_flame t;
	struct ember_sample_key key = {.pid = 1, .tid = 1};
	uint32_t loc;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	loc = fixture_loc(&p, EMBER_NONE, 0x10, "f");
	ck_assert_int_eq(ember_profile_add_stack(&p, &loc, 1, &key.stack), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "sh", &key.comm), 0);
	ck_assert_int_eq(ember_profile_add_sample(&p, &key, 1, 0), 0);
	key.pid = key.tid = 2;
	ck_assert_int_eq(ember_profile_add_sample(&p, &key, 2, 0), 0);
	build(&t, &p, true);
	ck_assert_uint_eq(
	    ember_flame_node(&t, path(&t, (const char *[]){"sh [1]", NULL}))->total[0], 1);
	ck_assert_uint_eq(
	    ember_flame_node(&t, path(&t, (const char *[]){"sh [2]", NULL}))->total[0], 2);
	ember_flame_free(&t);
	build(&t, &p, false);
	ck_assert_uint_eq(
	    ember_flame_node(&t, path(&t, (const char *[]){"sh", "f", NULL}))->total[0], 3);
	ember_flame_free(&t);
	ember_profile_free(&p);
}
END_TEST

START_TEST(inline_frames_are_nodes_with_file_and_line)
{
	struct ember_profile p;
	struct ember_flame t;
	struct ember_sample_key key = {.pid = 5};
	struct ember_function f = {0};
	struct ember_line lines[2] = {{.line = 12}, {.line = 40}};
	const struct ember_flame_func *fn;
	uint32_t loc;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "helper", &f.name), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "src/helper.h", &f.filename), 0);
	ck_assert_int_eq(ember_profile_add_function(&p, &f, &lines[0].function), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "caller", &f.name), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "src/main.c", &f.filename), 0);
	f.start_line = 33;
	ck_assert_int_eq(ember_profile_add_function(&p, &f, &lines[1].function), 0);
	ck_assert_int_eq(
	    ember_profile_add_location(&p, EMBER_NONE, EMBER_FRAME_GO, 0x99, lines, 2, &loc), 0);
	ck_assert_int_eq(ember_profile_add_stack(&p, &loc, 1, &key.stack), 0);
	ck_assert_int_eq(ember_profile_add_sample(&p, &key, 4, 0), 0);
	build(&t, &p, true);
	fn = ember_flame_func(
	    &t, ember_flame_node(&t, path(&t, (const char *[]){"[unknown] [5]", "caller", NULL}))
		    ->func);
	ck_assert_str_eq(ember_flame_str(&t, fn->file), "src/main.c");
	ck_assert_uint_eq(fn->line, 33); /* the function's first line wins */
	ck_assert_uint_eq(fn->kind, EMBER_FRAME_GO);
	fn = ember_flame_func(
	    &t, ember_flame_node(
		    &t, path(&t, (const char *[]){"[unknown] [5]", "caller", "helper", NULL}))
		    ->func);
	ck_assert_str_eq(ember_flame_str(&t, fn->file), "src/helper.h");
	ck_assert_uint_eq(fn->line, 12); /* else the line seen */
	ember_flame_free(&t);
	ember_profile_free(&p);
}
END_TEST

START_TEST(two_slots_share_one_shape)
{
	struct ember_profile base, cur;
	struct ember_flame t;
	const char *b = "p;main;old 4\np;main;both 4\n", *c = "p;main;both 2\np;main;new 6\n";
	const struct ember_flame_node *n;

	ck_assert_int_eq(ember_profile_init(&base), 0);
	ck_assert_int_eq(ember_read_folded(&base, b, strlen(b)), 0);
	ck_assert_int_eq(ember_profile_init(&cur), 0);
	ck_assert_int_eq(ember_read_folded(&cur, c, strlen(c)), 0);
	ck_assert_int_eq(ember_flame_init(&t, false), 0);
	ck_assert_int_eq(ember_flame_add_profile(&t, &cur, EMBER_FLAME_NEW), 0);
	ck_assert_int_eq(ember_flame_add_profile(&t, &base, EMBER_FLAME_BASE), 0);
	ck_assert_int_eq(ember_flame_finish(&t), 0);
	ck_assert_uint_eq(t.slot_total[EMBER_FLAME_NEW], 8);
	ck_assert_uint_eq(t.slot_total[EMBER_FLAME_BASE], 8);
	n = ember_flame_node(&t, path(&t, (const char *[]){"p", "main", "both", NULL}));
	ck_assert_uint_eq(n->total[EMBER_FLAME_NEW], 2);
	ck_assert_uint_eq(n->total[EMBER_FLAME_BASE], 4);
	n = ember_flame_node(&t, path(&t, (const char *[]){"p", "main", "old", NULL}));
	ck_assert_uint_eq(n->total[EMBER_FLAME_NEW], 0);
	ck_assert_uint_eq(n->total[EMBER_FLAME_BASE], 4);
	n = ember_flame_node(&t, path(&t, (const char *[]){"p", "main", NULL}));
	ck_assert_uint_eq(n->self[EMBER_FLAME_NEW], 0);
	ck_assert_uint_eq(n->self[EMBER_FLAME_BASE], 0);
	ck_assert_int_eq(ember_flame_add_profile(&t, &cur, 2), -EINVAL);
	ember_flame_free(&t);
	ember_profile_free(&base);
	ember_profile_free(&cur);
}
END_TEST

static Suite *flame_suite(void)
{
	Suite *s = suite_create("flame");
	TCase *tc = tcase_create("flame");

	tcase_add_test(tc, counts_total_and_self_along_paths);
	tcase_add_test(tc, children_are_ordered_by_name);
	tcase_add_test(tc, processes_split_by_pid_only_when_asked);
	tcase_add_test(tc, inline_frames_are_nodes_with_file_and_line);
	tcase_add_test(tc, two_slots_share_one_shape);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(flame_suite)
