// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/out_html.h"
#include "symbolizer/formats/utf8.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/profile/flame_tree.h"
#include "symbolizer/formats/html_assets.h"
#include "symbolizer/profile/top.h"

/* Decimal digits without printf: the page of a big profile holds millions of numbers. */
static void put_u64(FILE *out, uint64_t v)
{
	char buf[24];
	size_t i = sizeof(buf);

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite(buf + i, 1, sizeof(buf) - i, out);
}

/*
 * A JSON string that is safe inside a <script> element: '<', '>' and '&'
 * escaped (no "</script>" or "<!--"), control characters escaped, and bytes
 * that are not UTF-8 (names come from profiled programs) replaced by U+FFFD.
 */
static void put_json_str(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str);

	fputc('"', out);
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t len;

		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc(c, out);
			i++;
			continue;
		}
		if (c < 0x20 || c == '<' || c == '>' || c == '&') {
			fprintf(out, "\\u%04x", c);
			i++;
			continue;
		}
		len = ember_utf8_seq(s + i, n - i);
		if (!len) {
			fputs("\\ufffd", out);
			i++;
			continue;
		}
		/* U+2028 and U+2029 are fine in JSON but not in older script parsers. */
		if (len == 3 && s[i] == 0xe2 && s[i + 1] == 0x80 && (s[i + 2] & 0xfe) == 0xa8)
			fprintf(out, "\\u%04x", 0x2028 + (s[i + 2] - 0xa8));
		else
			fwrite(s + i, 1, len, out);
		i += len;
	}
	fputc('"', out);
}

static void put_key_u64(FILE *out, const char *key, uint64_t v)
{
	fprintf(out, ",\"%s\":", key);
	put_u64(out, v);
}

static void put_metadata(FILE *out, const struct ember_profile *p, uint64_t lost)
{
	fputs("{\"version\":1,\"host\":", out);
	put_json_str(out, p->host);
	fputs(",\"selection\":", out);
	put_json_str(out, p->selection);
	fputs(",\"title\":", out);
	put_json_str(out, p->title);
	put_key_u64(out, "start_ms", p->start_ns / 1000000);
	put_key_u64(out, "end_ms", p->end_ns / 1000000);
	put_key_u64(out, "hz", p->sample_hz);
	put_key_u64(out, "period_ns", p->period_ns);
	put_key_u64(out, "lost", lost);
	fprintf(out, ",\"view\":\"%s\",\"unit\":\"%s\",\"off_cpu\":%s", ember_view_name(p->view),
	        p->view == EMBER_VIEW_CPU ? "samples" : "ns", p->off_cpu ? "true" : "false");
	put_key_u64(out, "cpu_samples", p->total_count);
	put_key_u64(out, "off_cpu_ns", p->total_off_cpu_ns);
	fputs(",\n\"kinds\":[", out);
	for (int k = 0; k < EMBER_FLAME_NKINDS; k++) {
		if (k)
			fputc(',', out);
		put_json_str(out, ember_flame_kind_name((uint8_t)k));
	}
	fputc(']', out);
}

static void put_tables(FILE *out, const struct ember_flame *t)
{
	size_t ns = ember_flame_nstrings(t);

	fputs(",\n\"strings\":[", out);
	for (size_t i = 0; i < ns; i++) {
		if (i)
			fputs(i % 64 ? "," : ",\n", out);
		put_json_str(out, ember_flame_str(t, (uint32_t)i));
	}
	fputs("],\n\"funcs\":[", out);
	for (size_t i = 0; i < t->funcs.len; i++) {
		const struct ember_flame_func *f = ember_flame_func(t, (uint32_t)i);

		if (i)
			fputs(i % 64 ? "," : ",\n", out);
		put_u64(out, f->name);
		fputc(',', out);
		put_u64(out, f->file);
		fputc(',', out);
		put_u64(out, f->line);
		fputc(',', out);
		put_u64(out, f->kind);
	}
	fputc(']', out);
}

/*
 * The nodes in preorder (children by name), those with a value in slot 0, or
 * in either slot when both are values of one profile (CPU and off-CPU).
 */
static int put_nodes(FILE *out, const struct ember_flame *t, bool with_base, bool either)
{
	uint32_t *stack = malloc((t->max_depth + 2) * sizeof(*stack));
	size_t sp = 0, written = 0;

	if (!stack)
		return -ENOMEM;
	fputs(",\n\"nodes\":[", out);
	if (t->nodes.len)
		stack[sp++] = 0;
	while (sp) {
		uint32_t i = stack[--sp];
		const struct ember_flame_node *n = ember_flame_node(t, i);

		/* Siblings after this one come back when its subtree is done. */
		if (n->next_sibling != EMBER_NONE && n->depth > 0)
			stack[sp++] = n->next_sibling;
		if (!n->total[EMBER_FLAME_NEW] && !(either && n->total[EMBER_FLAME_BASE]) && i != 0)
			continue;
		if (written)
			fputs(written % 32 ? "," : ",\n", out);
		written++;
		put_u64(out, n->func);
		fputc(',', out);
		put_u64(out, n->depth);
		fputc(',', out);
		put_u64(out, n->total[EMBER_FLAME_NEW]);
		if (with_base || either) {
			fputc(',', out);
			put_u64(out, n->total[EMBER_FLAME_BASE]);
		}
		if (n->first_child != EMBER_NONE)
			stack[sp++] = n->first_child;
	}
	fputc(']', out);
	free(stack);
	return 0;
}

static int put_changes(FILE *out, const struct ember_flame *t, uint64_t base_lost)
{
	struct ember_func_stat *stats;
	size_t n;
	int err = ember_top_compute(t, EMBER_TOP_BY_CHANGE, &stats, &n);

	if (err)
		return err;
	fputs(",\n\"diff\":{\"base_samples\":", out);
	put_u64(out, t->slot_total[EMBER_FLAME_BASE]);
	put_key_u64(out, "base_lost", base_lost);
	fputs(",\"changes\":[", out);
	for (size_t i = 0; i < n && i < EMBER_HTML_DIFF_ROWS; i++) {
		const struct ember_func_stat *s = &stats[i];

		fputs(i ? ",\n[" : "\n[", out);
		put_u64(out, s->name);
		fputc(',', out);
		put_u64(out, s->kind);
		fputc(',', out);
		put_u64(out, s->self[EMBER_FLAME_BASE]);
		fputc(',', out);
		put_u64(out, s->self[EMBER_FLAME_NEW]);
		fputc(',', out);
		put_u64(out, s->total[EMBER_FLAME_BASE]);
		fputc(',', out);
		put_u64(out, s->total[EMBER_FLAME_NEW]);
		fputc(']', out);
	}
	fputs("]}", out);
	free(stats);
	return 0;
}

/* Writes the template, replacing each marker by what put() writes for it. */
static int put_page(FILE *out, const struct ember_profile *p, const struct ember_flame *t,
                    const struct ember_profile *base)
{
	static const char *const markers[] = {"{{STYLE}}", "{{DATA}}", "{{SCRIPT}}"};
	const char *pos = ember_html_page, *page_end = ember_html_page + ember_html_page_len;
	int err = 0;

	for (size_t m = 0; m < 3 && !err; m++) {
		const char *at =
		    memmem(pos, (size_t)(page_end - pos), markers[m], strlen(markers[m]));

		if (!at)
			return -EINVAL;
		fwrite(pos, 1, (size_t)(at - pos), out);
		pos = at + strlen(markers[m]);
		if (m == 0) {
			fwrite(ember_html_css, 1, ember_html_css_len, out);
		} else if (m == 1) {
			put_metadata(out, p, ember_profile_stat_get(p, "lost.samples"));
			put_tables(out, t);
			err = put_nodes(out, t, base != NULL, !base && p->off_cpu);
			if (!err && base)
				err = put_changes(out, t,
				                  ember_profile_stat_get(base, "lost.samples"));
			else if (!err)
				fputs(",\n\"diff\":null", out);
			fputs("}", out);
		} else {
			fwrite(ember_html_js, 1, ember_html_js_len, out);
		}
	}
	fwrite(pos, 1, (size_t)(page_end - pos), out);
	if (!err && ferror(out))
		err = -EIO;
	return err;
}

int ember_write_html(const struct ember_profile *p, FILE *out)
{
	struct ember_flame t;
	int err = ember_flame_init(&t, true);

	if (err)
		return err;
	/* With off-CPU time the page switches views: CPU samples in one slot, off-CPU in the other.
	 */
	err = ember_flame_add_profile_view(&t, p, EMBER_FLAME_NEW,
	                                   p->off_cpu ? EMBER_VIEW_CPU : p->view);
	if (!err && p->off_cpu)
		err = ember_flame_add_profile_view(&t, p, EMBER_FLAME_BASE, EMBER_VIEW_OFF_CPU);
	if (!err)
		err = ember_flame_finish(&t);
	if (!err)
		err = put_page(out, p, &t, NULL);
	ember_flame_free(&t);
	return err;
}

int ember_write_html_diff(const struct ember_profile *base, const struct ember_profile *cur,
                          FILE *out)
{
	struct ember_flame t;
	int err = ember_flame_init(&t, false);

	if (err)
		return err;
	err = ember_flame_add_profile(&t, cur, EMBER_FLAME_NEW);
	if (!err)
		err = ember_flame_add_profile(&t, base, EMBER_FLAME_BASE);
	if (!err)
		err = ember_flame_finish(&t);
	if (!err)
		err = put_page(out, cur, &t, base);
	ember_flame_free(&t);
	return err;
}
