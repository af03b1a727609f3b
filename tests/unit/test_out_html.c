// SPDX-License-Identifier: Apache-2.0
/* The HTML page: self-contained, data escaped for a <script> element, tree in preorder. */
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "profile_fixture.h"
#include "symbolizer/formats/in_folded.h"
#include "symbolizer/formats/out_html.h"
#include "symbolizer/formats/profile_writer.h"

static char *html_of(const struct ember_profile *p)
{
	char *buf;
	size_t len;

	ck_assert_int_eq(ember_format_encode(EMBER_FORMAT_HTML, p, &buf, &len), 0);
	ck_assert_uint_eq(strlen(buf), len);
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *s = hay; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

/* The JSON between the data element's tags. */
static char *data_of(const char *page)
{
	const char *start = strstr(page, "id=\"ember-data\">"), *end;

	ck_assert_ptr_nonnull(start);
	start += strlen("id=\"ember-data\">");
	end = strstr(start, "</script>");
	ck_assert_ptr_nonnull(end);
	return strndup(start, (size_t)(end - start));
}

START_TEST(page_is_self_contained_and_filled_in)
{
	struct ember_profile p;
	char *page, *data;

	fixture_build(&p);
	strcpy(p.host, "web-1");
	page = html_of(&p);
	ck_assert_ptr_nonnull(strstr(page, "<!DOCTYPE html>"));
	ck_assert_ptr_null(strstr(page, "{{"));
	/* Nothing is loaded from elsewhere. */
	ck_assert_ptr_null(strstr(page, "src="));
	ck_assert_ptr_null(strstr(page, "href="));
	ck_assert_ptr_null(strstr(page, "http://"));
	ck_assert_ptr_null(strstr(page, "https://"));
	ck_assert_ptr_nonnull(strstr(page, "window.emberFlame"));
	data = data_of(page);
	ck_assert_ptr_nonnull(strstr(data, "\"host\":\"web-1\""));
	ck_assert_ptr_nonnull(strstr(data, "\"hz\":100"));
	ck_assert_ptr_nonnull(strstr(data, "\"lost\":4"));
	ck_assert_ptr_nonnull(strstr(data, "\"start_ms\":1700000000000"));
	ck_assert_ptr_nonnull(strstr(data, "\"end_ms\":1700000005000"));
	ck_assert_ptr_nonnull(strstr(data, "\"leaf_a\""));
	ck_assert_ptr_nonnull(strstr(data, "\"app [10]\""));
	ck_assert_ptr_nonnull(strstr(data, "\"other [20]\""));
	ck_assert_ptr_nonnull(strstr(data, "\"diff\":null"));
	free(data);
	free(page);
	ember_profile_free(&p);
}
END_TEST

/* Node triples in preorder: "all" first with everything, then processes in name order. */
START_TEST(nodes_are_preorder_triples)
{
	struct ember_profile p;
	const char *text = "b;x 2\na;y;z 3\n";
	char *page, *data, *nodes;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	ck_assert_int_eq(ember_read_folded(&p, text, strlen(text)), 0);
	page = html_of(&p);
	data = data_of(page);
	/* strings: "", "all", then in order of first use: "b", "x", "a", "y", "z";
	 * funcs: all=0, b=1, x=2, a=3, y=4, z=5 */
	ck_assert_ptr_nonnull(
	    strstr(data, "\"strings\":[\"\",\"all\",\"b\",\"x\",\"a\",\"y\",\"z\"]"));
	nodes = strstr(data, "\"nodes\":[");
	ck_assert_ptr_nonnull(nodes);
	ck_assert(!strncmp(nodes, "\"nodes\":[0,0,5,3,1,3,4,2,3,5,3,3,1,1,2,2,2,2]", 45));
	free(data);
	free(page);
	ember_profile_free(&p);
}
END_TEST

START_TEST(off_cpu_page_carries_both_values_per_node)
{
	struct ember_profile p;
	char *page, *data, *nodes;

	fixture_build_off_cpu(&p);
	p.view = EMBER_VIEW_OFF_CPU;
	page = html_of(&p);
	data = data_of(page);
	ck_assert_ptr_nonnull(strstr(data, "\"view\":\"off-cpu\""));
	ck_assert_ptr_nonnull(strstr(data, "\"off_cpu\":true"));
	ck_assert_ptr_nonnull(strstr(data, "\"cpu_samples\":12"));
	ck_assert_ptr_nonnull(strstr(data, "\"off_cpu_ns\":4000000000"));
	/* [func, depth, CPU samples, off-CPU ns]: the root holds all of both. */
	nodes = strstr(data, "\"nodes\":[");
	ck_assert_ptr_nonnull(nodes);
	ck_assert_msg(!strncmp(nodes, "\"nodes\":[0,0,12,4000000000,1,1,10,4000000000,", 45),
	              "%.60s", nodes);
	/* Frames that only wait are on the page too. */
	ck_assert_ptr_nonnull(strstr(data, "\"wait_lock\""));
	free(data);
	free(page);
	ember_profile_free(&p);
}
END_TEST

START_TEST(hostile_names_cannot_end_the_script)
{
	struct ember_profile p;
	static const char text[] = "evil</script><script>alert(1)</script>;"
				   "f\"\\<!--\x01\xff\xc3\x28ok\xc3\xa9\xe2\x80\xa8 1\n";
	char *page, *data;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	ck_assert_int_eq(ember_read_folded(&p, text, sizeof(text) - 1), 0);
	ck_assert_uint_eq(p.total_count, 1);
	page = html_of(&p);
	/* Exactly the page's own two script elements end. */
	ck_assert_uint_eq(count(page, "</script>"), 2);
	ck_assert_uint_eq(count(page, "<!--"), 1); /* the template's comment */
	data = data_of(page);
	ck_assert_ptr_nonnull(strstr(data, "\"evil\\u003c/script\\u003e\\u003cscript\\u003ealert(1)"
	                                   "\\u003c/script\\u003e\""));
	/* quote, backslash, '<', control byte, invalid bytes, valid é, U+2028 */
	ck_assert_ptr_nonnull(
	    strstr(data, "\"f\\\"\\\\\\u003c!--\\u0001\\ufffd\\ufffd(ok\xc3\xa9\\u2028\""));
	free(data);
	free(page);
	ember_profile_free(&p);
}
END_TEST

START_TEST(diff_page_carries_base_values_and_changes)
{
	struct ember_profile base, cur;
	const char *b = "p;main;old 4\np;main;both 4\n", *c = "p;main;both 2\np;main;new 6\n";
	char *buf = NULL, *data, *nodes;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);

	ck_assert_int_eq(ember_profile_init(&base), 0);
	ck_assert_int_eq(ember_read_folded(&base, b, strlen(b)), 0);
	ck_assert_int_eq(ember_profile_init(&cur), 0);
	ck_assert_int_eq(ember_read_folded(&cur, c, strlen(c)), 0);
	ck_assert_int_eq(ember_write_html_diff(&base, &cur, mem), 0);
	fclose(mem);
	data = data_of(buf);
	ck_assert_ptr_nonnull(strstr(data, "\"diff\":{\"base_samples\":8,\"base_lost\":0"));
	/* strings "", all, p, main, both, new, old; funcs all, p, main, both, new, old.
	 * Quads (func, depth, new, base): all, p, main, both (2 new, 4 base), new (6, 0);
	 * "old" is not in NEW's shape. */
	ck_assert_ptr_nonnull(strstr(data,
	                             "\"strings\":[\"\",\"all\",\"p\",\"main\",\"both\",\"new\","
	                             "\"old\"]"));
	nodes = strstr(data, "\"nodes\":[");
	ck_assert_ptr_nonnull(nodes);
	ck_assert(!strncmp(nodes, "\"nodes\":[0,0,8,8,1,1,8,8,2,2,8,8,3,3,2,4,4,3,6,0]", 49));
	/* ...but it is in the table of changes (name string, kind, self base, self new,
	 * total base, total new): new +75 pp, old -50 pp, both -25 pp, main 0. */
	ck_assert_ptr_nonnull(strstr(data, "\"changes\":[\n[5,0,0,6,0,6],\n[6,0,4,0,4,0],\n"
	                                   "[4,0,4,2,4,2],\n[3,0,0,0,8,8]]"));
	free(data);
	free(buf);
	ember_profile_free(&base);
	ember_profile_free(&cur);
}
END_TEST

static Suite *html_suite(void)
{
	Suite *s = suite_create("out_html");
	TCase *tc = tcase_create("out_html");

	tcase_add_test(tc, page_is_self_contained_and_filled_in);
	tcase_add_test(tc, nodes_are_preorder_triples);
	tcase_add_test(tc, hostile_names_cannot_end_the_script);
	tcase_add_test(tc, off_cpu_page_carries_both_values_per_node);
	tcase_add_test(tc, diff_page_carries_base_values_and_changes);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(html_suite)
