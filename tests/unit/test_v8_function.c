// SPDX-License-Identifier: Apache-2.0
/*
 * V8's functions, scripts, lines and Code read from a live node
 * (symbolizer/interp/v8_function.c, v8_code.c, v8_positions.c) on every node
 * live_node.h finds, at the addresses node's own %DebugPrint gives: each
 * function's name as V8 names it (its own, inferred, anonymous), its script
 * and first line; the lines of a function whose source V8 has not counted;
 * TurboFan code of leafA with sq inlined, every instruction of which names
 * leafA or the inlined sq, each at a line inside its own function. And Sparkplug's
 * pc-to-bytecode table, as its compiler lays it out.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "symbolizer/interp/v8_code.h"
#include "symbolizer/interp/v8_function.h"
#include "tests/unit/live_node.h"

static const char script[] =
    "function sq(x) { return x * x; }\n"                         /* 1 */
    "function leafA(n) {\n"                                      /* 2 */
    "  let t = 0;\n"                                             /* 3 */
    "  for (let i = 0; i < n; i++) {\n"                          /* 4 */
    "    t += sq(i) % 7;\n"                                      /* 5 */
    "  }\n"                                                      /* 6 */
    "  return t;\n"                                              /* 7 */
    "}\n"                                                        /* 8 */
    "class Cart { leafB(n) { return n + 1; } }\n"                /* 9 */
    "const leafC = (n) => { let q = n; return () => q + n; };\n" /* 10 */
    "const anon = [function (n) { return n * 2; }][0];\n"        /* 11 */
    "for (let i = 0; i < 100; i++) { new Cart().leafB(1); leafC(1); anon(1); }\n"
    "%PrepareFunctionForOptimization(leafA);\n"
    "leafA(100); leafA(100);\n"
    "%OptimizeFunctionOnNextCall(leafA);\n"
    "leafA(100);\n"
    "%DebugPrint(leafA); %DebugPrint(Cart.prototype.leafB); %DebugPrint(leafC);\n"
    "%DebugPrint(anon); %DebugPrint(sq);\n"
    "console.log('ready');\n"
    "setInterval(() => {}, 1000);\n";

static const struct {
	const char *name;
	int32_t line;
} functions[] = {{"leafA", 2}, {"leafB", 9}, {"leafC", 10}, {"anon", 11}, {"sq", 1}};

static void read_function(struct live_node *n, int i, struct ember_v8_function *f,
                          struct ember_v8_script *s)
{
	uint64_t sfi = live_node_field(n, i, "shared_info");

	ck_assert_msg(sfi, "no shared_info for %s", functions[i].name);
	ck_assert_int_eq(ember_v8_function_read(&n->heap, sfi - 1, f), 0);
	ck_assert_msg(f->script, "%s: no script", functions[i].name);
	ck_assert_int_eq(ember_v8_script_read(&n->heap, f->script, s), 0);
}

static void check_functions(const char *node)
{
	struct live_node n;

	live_node_start(&n, node, script, NULL);
	for (int i = 0; i < (int)(sizeof(functions) / sizeof(functions[0])); i++) {
		struct ember_v8_function f;
		struct ember_v8_script s;

		read_function(&n, i, &f, &s);
		ck_assert_msg(!strcmp(f.name, functions[i].name), "%s: named %s", functions[i].name,
		              f.name);
		ck_assert_msg(!strcmp(s.name, n.script), "%s: script %s, not %s", functions[i].name,
		              s.name, n.script);
		ck_assert_msg(ember_v8_script_line(&s, f.start) == functions[i].line,
		              "%s (%s): line %d, not %d", functions[i].name, node,
		              ember_v8_script_line(&s, f.start), functions[i].line);
		ck_assert_int_lt(f.start, f.end);
		ember_v8_function_free(&f);
		ember_v8_script_free(&s);
	}
	live_node_stop(&n);
}

START_TEST(names_files_and_first_lines)
{
	char nodes[8][PATH_MAX];
	int count = live_node_list(nodes, 8);

	if (!count)
		EMBER_SKIP("no node here (install nodejs, or set EMBER_NODES)");
	for (int i = 0; i < count; i++)
		check_functions(nodes[i]);
}
END_TEST

static void check_code(const char *node)
{
	struct ember_v8_function fa, fs;
	struct ember_v8_script s;
	struct ember_v8_code c;
	struct live_node n;
	uint64_t code;
	int sq_seen = 0, lines_seen[12] = {0};

	live_node_start(&n, node, script, NULL);
	read_function(&n, 0, &fa, &s);
	ember_v8_script_free(&s);
	read_function(&n, 4, &fs, &s);
	code = live_node_field(&n, 0, "code");
	ck_assert(code);
	ck_assert_int_eq(ember_v8_code_read(&n.heap, code - 1, &c), 0);
	ck_assert_msg(c.sfi == live_node_field(&n, 0, "shared_info") - 1,
	              "%s: the Code's function is not leafA's", node);
	ck_assert_msg(c.table && c.table_len, "%s: no position table", node);
	for (uint32_t off = 1; off <= c.size; off++) {
		struct ember_v8_scope sc[EMBER_V8_MAX_SCOPES];
		int k = ember_v8_code_scopes(&c, off, sc, EMBER_V8_MAX_SCOPES);

		ck_assert_int_ge(k, 1);
		ck_assert_int_eq(sc[k - 1].sfi, c.sfi);
		for (int i = 0; i < k; i++) {
			const struct ember_v8_function *f = sc[i].sfi == c.sfi ? &fa : &fs;
			int32_t line = ember_v8_script_line(&s, sc[i].script_offset);

			ck_assert_msg(sc[i].sfi == c.sfi ||
			                  sc[i].sfi == live_node_field(&n, 4, "shared_info") - 1,
			              "%s: offset %u names another function", node, off);
			if (sc[i].script_offset < 0)
				continue;
			ck_assert_msg(sc[i].script_offset >= f->start &&
			                  sc[i].script_offset <= f->end,
			              "%s: offset %u: position %d outside %s", node, off,
			              sc[i].script_offset, f->name);
			if (line > 0 && line < 12)
				lines_seen[line]++;
		}
		sq_seen += k > 1;
	}
	ck_assert_msg(sq_seen, "%s: sq is inlined nowhere in leafA's code", node);
	ck_assert_msg(lines_seen[5] && lines_seen[1], "%s: lines 5 and 1 not seen (%d, %d)", node,
	              lines_seen[5], lines_seen[1]);
	ember_v8_code_free(&c);
	ember_v8_function_free(&fa);
	ember_v8_function_free(&fs);
	ember_v8_script_free(&s);
	live_node_stop(&n);
}

START_TEST(optimized_code_and_its_inlined_function)
{
	char nodes[8][PATH_MAX];
	int count = live_node_list(nodes, 8);

	if (!count)
		EMBER_SKIP("no node here (install nodejs, or set EMBER_NODES)");
	for (int i = 0; i < count; i++)
		check_code(nodes[i]);
}
END_TEST

/*
 * Sparkplug's pc-to-bytecode table, as its compiler writes it: the prologue's size, then
 * each bytecode's code size in order (one varint each). Three bytecodes at offsets 0, 2 and
 * 5 (sizes 2, 3, 1) whose code spans [10, 15), [15, 215) and [215, 218). Each pc asked is a
 * return address: the byte before it is the one running.
 */
START_TEST(baseline_pcs_map_to_the_bytecode_they_run)
{
	static const struct {
		uint32_t pc;
		int32_t bytecode;
	} cases[] = {
	    {0, -1},  {10, -1}, {11, 0},  {15, 0},   {16, 2},    {120, 2},
	    {215, 2}, {216, 5}, {218, 5}, {219, -1}, {5000, -1},
	};
	static struct ember_v8_layout l;
	uint8_t bytecodes[] = {4, 0, 5, 0, 0, 6};
	uint8_t table[] = {10, 5, 0xc8, 0x01, 3};
	struct ember_v8_code c = {.baseline = true,
	                          .bytecodes = bytecodes,
	                          .nbytes = sizeof(bytecodes),
	                          .table = table,
	                          .table_len = sizeof(table)};

	l.nbytecodes = 7;
	l.bytecode_sizes[0][4] = 2;
	l.bytecode_sizes[0][5] = 3;
	l.bytecode_sizes[0][6] = 1;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(ember_v8_baseline_offset(&l, &c, cases[i].pc) == cases[i].bytecode,
		              "pc %u: bytecode %d, not %d", cases[i].pc,
		              ember_v8_baseline_offset(&l, &c, cases[i].pc), cases[i].bytecode);
	/* A varint cut at the table's end, and a bytecode of no known size: not known. */
	c.table_len = 3;
	ck_assert_int_eq(ember_v8_baseline_offset(&l, &c, 100), -1);
	c.table_len = sizeof(table);
	bytecodes[2] = 3; /* ExtraWide before opcode 0, of no size: nothing past it is known */
	ck_assert_int_eq(ember_v8_baseline_offset(&l, &c, 100), 2);
	ck_assert_int_eq(ember_v8_baseline_offset(&l, &c, 216), -1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("v8_function");
	TCase *t = tcase_create("live");

	tcase_set_timeout(t, 120);
	tcase_add_test(t, names_files_and_first_lines);
	tcase_add_test(t, optimized_code_and_its_inlined_function);
	suite_add_tcase(s, t);
	t = tcase_create("tables");
	tcase_add_test(t, baseline_pcs_map_to_the_bytecode_they_run);
	suite_add_tcase(s, t);
	return s;
}

EMBER_CHECK_MAIN(suite)
