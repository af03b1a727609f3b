// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/profile/top.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double ember_top_share(const struct ember_flame *t, int slot, uint64_t value)
{
	return t->slot_total[slot] ? (double)value / (double)t->slot_total[slot] : 0.0;
}

struct top_ctx {
	const struct ember_flame *t;
	enum ember_top_order order;
};

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

static int cmp_double_desc(double a, double b)
{
	return a > b ? -1 : a < b;
}

static int cmp_stat(const void *a, const void *b, void *ctx)
{
	const struct top_ctx *c = ctx;
	const struct ember_func_stat *x = a, *y = b;
	const struct ember_flame *t = c->t;
	int r = 0;

	switch (c->order) {
	case EMBER_TOP_BY_SELF:
		r = cmp_u64_desc(x->self[0], y->self[0]);
		if (!r)
			r = cmp_u64_desc(x->total[0], y->total[0]);
		break;
	case EMBER_TOP_BY_TOTAL:
		r = cmp_u64_desc(x->total[0], y->total[0]);
		if (!r)
			r = cmp_u64_desc(x->self[0], y->self[0]);
		break;
	case EMBER_TOP_BY_CHANGE: {
		double dsx = ember_top_share(t, 0, x->self[0]) - ember_top_share(t, 1, x->self[1]);
		double dsy = ember_top_share(t, 0, y->self[0]) - ember_top_share(t, 1, y->self[1]);
		double dtx =
		    ember_top_share(t, 0, x->total[0]) - ember_top_share(t, 1, x->total[1]);
		double dty =
		    ember_top_share(t, 0, y->total[0]) - ember_top_share(t, 1, y->total[1]);

		r = cmp_double_desc(fabs(dsx), fabs(dsy));
		if (!r)
			r = cmp_double_desc(fabs(dtx), fabs(dty));
		break;
	}
	}
	return r ? r : strcmp(ember_flame_str(t, x->name), ember_flame_str(t, y->name));
}

int ember_top_compute(const struct ember_flame *t, enum ember_top_order order,
                      struct ember_func_stat **out, size_t *n_out)
{
	size_t nstr = ember_flame_nstrings(t), nnodes = t->nodes.len, n = 0;
	/* name -> stat index + 1; how often name is on the current path */
	uint32_t *stat_of = calloc(nstr + 1, sizeof(*stat_of));
	uint32_t *on_path = calloc(nstr + 1, sizeof(*on_path));
	uint32_t *stack = malloc((t->max_depth + 2) * sizeof(*stack));
	struct ember_func_stat *stats = calloc(nstr + 1, sizeof(*stats));
	struct top_ctx c = {t, order};
	int err = 0;

	*out = NULL;
	*n_out = 0;
	if (!stat_of || !on_path || !stack || !stats) {
		err = -ENOMEM;
		goto done;
	}
	/* Iterative preorder walk that keeps the path in stack[]. */
	if (nnodes) {
		size_t depth = 0;
		uint32_t cur = 0;

		stack[0] = 0;
		while (1) {
			const struct ember_flame_node *node = ember_flame_node(t, cur);
			const struct ember_flame_func *f = ember_flame_func(t, node->func);

			if (f->kind < EMBER_FRAME_KIND_MAX) {
				struct ember_func_stat *st;

				if (!stat_of[f->name]) {
					stats[n].name = f->name;
					stats[n].kind = f->kind;
					stat_of[f->name] = (uint32_t)++n;
				}
				st = &stats[stat_of[f->name] - 1];
				for (int s = 0; s < EMBER_FLAME_SLOTS; s++) {
					st->self[s] += node->self[s];
					if (!on_path[f->name])
						st->total[s] += node->total[s];
				}
				on_path[f->name]++;
			}
			if (node->first_child != EMBER_NONE) {
				cur = node->first_child;
				stack[++depth] = cur;
				continue;
			}
			/* Leave nodes until one has a next sibling. */
			while (1) {
				const struct ember_flame_node *leaving = ember_flame_node(t, cur);
				const struct ember_flame_func *lf =
				    ember_flame_func(t, leaving->func);

				if (lf->kind < EMBER_FRAME_KIND_MAX)
					on_path[lf->name]--;
				if (leaving->next_sibling != EMBER_NONE || depth == 0)
					break;
				cur = stack[--depth];
			}
			if (depth == 0)
				break;
			cur = ember_flame_node(t, cur)->next_sibling;
			stack[depth] = cur;
		}
	}
	qsort_r(stats, n, sizeof(*stats), cmp_stat, &c);
	*out = stats;
	*n_out = n;
	stats = NULL;
done:
	free(stat_of);
	free(on_path);
	free(stack);
	free(stats);
	return err;
}

static void format_duration(char *buf, size_t size, double seconds)
{
	if (seconds >= 100)
		snprintf(buf, size, "%.0f s", seconds);
	else if (seconds >= 1)
		snprintf(buf, size, "%.2f s", seconds);
	else
		snprintf(buf, size, "%.1f ms", seconds * 1e3);
}

/* A value of the tree: samples (cpu view) or a time (off-cpu and both views). */
static void format_value(char *buf, size_t size, enum ember_view view, uint64_t v)
{
	if (view == EMBER_VIEW_CPU)
		snprintf(buf, size, "%" PRIu64, v);
	else
		format_duration(buf, size, (double)v / 1e9);
}

/* The first line: what the table counts, over which time, and what was lost. */
static void print_header(const struct ember_flame *t, const struct ember_profile *p, FILE *out)
{
	uint64_t lost = ember_profile_stat_get(p, "lost.samples");
	bool timed = p->end_ns > p->start_ns;
	char cpu[32], off[32], wall[32];

	format_duration(cpu, sizeof(cpu), (double)p->total_count * (double)p->period_ns / 1e9);
	format_duration(off, sizeof(off), (double)p->total_off_cpu_ns / 1e9);
	format_duration(wall, sizeof(wall), timed ? (double)(p->end_ns - p->start_ns) / 1e9 : 0);
	fprintf(out, "%s%s", p->host[0] ? p->host : "", p->host[0] ? ": " : "");
	if (p->view == EMBER_VIEW_CPU) {
		fprintf(out, "%" PRIu64 " samples", t->slot_total[0]);
		if (p->period_ns)
			fprintf(out, " (%s of CPU%s%s)", cpu, timed ? " in " : "",
			        timed ? wall : "");
	} else {
		if (p->view == EMBER_VIEW_BOTH)
			fprintf(out, "%s on CPU (%" PRIu64 " samples) and ", cpu, p->total_count);
		fprintf(out,
		        "%s off CPU%s%s (%" PRIu64 " waits recorded, %" PRIu64
		        " below the minimum, %" PRIu64 " sampled out)",
		        off, timed ? " in " : "", timed ? wall : "",
		        ember_profile_stat_get(p, "off_cpu.recorded"),
		        ember_profile_stat_get(p, "off_cpu.below_min"),
		        ember_profile_stat_get(p, "off_cpu.sampled_out"));
	}
	if (p->sample_hz)
		fprintf(out, " at %" PRIu32 " Hz", p->sample_hz);
	fprintf(out, ", %" PRIu64 " lost\n", lost);
}

int ember_top_print(const struct ember_flame *t, const struct ember_profile *p,
                    const struct ember_top_opts *o, FILE *out)
{
	struct ember_func_stat *stats;
	size_t n, rows;
	double sum = 0;
	char self_s[32], total_s[32];
	int err = ember_top_compute(t, o->order, &stats, &n);

	if (err)
		return err;
	rows = n < o->limit ? n : o->limit;
	print_header(t, p, out);
	fprintf(out, "Showing %zu of %zu functions%s, sorted by %s\n", rows, n,
	        p->view == EMBER_VIEW_CPU       ? ""
	        : p->view == EMBER_VIEW_OFF_CPU ? " (time off CPU)"
	                                        : " (time on and off CPU)",
	        o->order == EMBER_TOP_BY_TOTAL ? "total" : "self");
	fprintf(out, "%10s %6s %6s %10s %6s  %s\n", "self", "self%", "sum%", "total", "total%",
	        "function");
	for (size_t i = 0; i < rows; i++) {
		const struct ember_func_stat *s = &stats[i];
		double self = 100 * ember_top_share(t, 0, s->self[0]);

		sum += self;
		format_value(self_s, sizeof(self_s), p->view, s->self[0]);
		format_value(total_s, sizeof(total_s), p->view, s->total[0]);
		fprintf(out, "%10s %5.1f%% %5.1f%% %10s %5.1f%%  %s%s\n", self_s, self, sum,
		        total_s, 100 * ember_top_share(t, 0, s->total[0]),
		        ember_flame_str(t, s->name), s->kind == EMBER_FRAME_KERNEL ? " [k]" : "");
	}
	free(stats);
	return ferror(out) ? -EIO : 0;
}
