// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/file_commands.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolizer/profile/flame_tree.h"
#include "symbolizer/formats/in_pprof.h"
#include "symbolizer/formats/profile_reader.h"
#include "symbolizer/formats/out_html.h"
#include "symbolizer/formats/profile_writer.h"
#include "symbolizer/config.h"
#include "symbolizer/sandbox.h"
#include "shared/err.h"
#include "shared/fdio.h"
#include "shared/log.h"
#include "shared/str.h"
#include "symbolizer/profile/top.h"

struct input_file {
	const char *path;
	int fd;
};

struct command {
	struct input_file in[EMBER_SYMBOLIZER_MAX_INPUTS];
	size_t nin;
	struct ember_output out[EMBER_MAX_OUTPUTS];
	size_t nout;
	struct ember_top_opts top;
	bool stats; /* report --stats: print the statistics */
	char trace[EMBER_LINK_HEX + 1]; /* --trace: the start of the links kept; "": all */
	enum ember_view view;
	int (*run)(struct command *c);
};

/* ---- the confined part ----------------------------------------------------------- */

static int read_input(const struct input_file *in, enum ember_view view, const char *trace,
                      struct ember_profile *p)
{
	char *buf;
	uint64_t bad;
	long len = ember_read_whole_fd(in->fd, EMBER_INPUT_MAX_BYTES, &buf);
	int err = len < 0 ? (int)len : 0;

	if (err == -EFBIG) {
		log_error("%s is larger than %llu MiB, the most ember reads", in->path,
		          EMBER_INPUT_MAX_BYTES >> 20);
		return err;
	}
	if (err) {
		log_error_errno(err, "cannot read %s: %m", in->path);
		return err;
	}
	err = ember_profile_init(p);
	if (!err)
		err = ember_input_parse(p, (const uint8_t *)buf, (size_t)len);
	p->view = view;
	free(buf);
	if (err == -EINVAL)
		log_error("%s is not a profile ember reads: give a pprof file (.pb.gz, gzip or "
		          "not) or folded stacks (lines 'comm;outer;...;leaf COUNT')",
		          in->path);
	else if (err == -EFBIG)
		log_error("%s decompresses to more than ember reads (%u MiB of pprof data)",
		          in->path, EMBER_PPROF_MAX_BYTES >> 20);
	else if (err)
		log_error_errno(err, "cannot read %s: %m", in->path);
	if (err)
		return err;
	bad = ember_profile_stat_get(p, "report.bad_lines") +
	      ember_profile_stat_get(p, "report.bad_references");
	if (bad)
		log_warn("%s: %llu malformed entries were skipped or shown as [unknown]", in->path,
		         (unsigned long long)bad);
	if (trace[0] && (err = ember_profile_keep_linked(p, trace))) {
		log_error_errno(err, "cannot pick the samples of trace %s: %m", trace);
		return err;
	}
	if (trace[0] && !ember_profile_total(p, view))
		log_warn("%s holds no %s linked to %s %.32s (a program linked to its spans "
		         "publishes OpenTelemetry thread contexts)",
		         in->path, view == EMBER_VIEW_CPU ? "samples" : "off-CPU time",
		         strlen(trace) > 32 ? "the span of trace" : "trace", trace);
	else if (!ember_profile_total(p, view))
		log_warn("%s holds no %s", in->path,
		         view == EMBER_VIEW_CPU ? "samples"
		                                : "off-CPU time (recorded with --off-cpu?)");
	return 0;
}

/*
 * Unix seconds as an ISO 8601 UTC time. By hand: the sandbox cannot open the
 * time zone file glibc's gmtime reads on its first call. Days to a civil date
 * as in Howard Hinnant's chrono algorithms.
 */
static void utc_time(uint64_t secs, char *buf, size_t size)
{
	int64_t z = (int64_t)(secs / 86400) + 719468, era = z / 146097;
	uint64_t doe = (uint64_t)(z - era * 146097), rest = secs % 86400;
	uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
	uint64_t day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
	int64_t year = (int64_t)yoe + era * 400 + (month <= 2);

	snprintf(buf, size,
	         "%04" PRId64 "-%02" PRIu64 "-%02" PRIu64 "T%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64
	         "Z",
	         year, month, day, rest / 3600, rest / 60 % 60, rest % 60);
}

/* The profile's own facts and every statistic, one "name value" per line. */
static int print_stats(const struct ember_profile *p, FILE *out)
{
	char when[64];

	if (p->host[0])
		fprintf(out, "%-40s %s\n", "host", p->host);
	if (p->selection[0])
		fprintf(out, "%-40s %s\n", "selection", p->selection);
	if (p->start_ns) {
		utc_time(p->start_ns / 1000000000ull, when, sizeof(when));
		fprintf(out, "%-40s %s\n", "start", when);
	}
	if (p->end_ns > p->start_ns)
		fprintf(out, "%-40s %.3f\n", "duration_seconds",
		        (double)(p->end_ns - p->start_ns) / 1e9);
	if (p->sample_hz)
		fprintf(out, "%-40s %u\n", "frequency_hz", p->sample_hz);
	fprintf(out, "%-40s %" PRIu64 "\n", "samples", p->total_count);
	for (size_t i = 0; i < p->stats.len; i++) {
		const struct ember_stat *st = EMBER_VEC_AT(p->stats, const struct ember_stat, i);

		fprintf(out, "%-40s %" PRIu64 "\n", ember_profile_str(p, st->name), st->value);
	}
	return fflush(out) ? -EIO : 0;
}

static int run_report(struct command *c)
{
	struct ember_profile p;
	int err = read_input(&c->in[0], c->view, c->trace, &p);

	if (!err && c->stats && (err = print_stats(&p, stdout)))
		log_error_errno(err, "cannot print the statistics: %m");
	for (size_t i = 0; !err && i < c->nout; i++) {
		err = ember_output_write(&c->out[i], &p);
		if (err)
			log_error_errno(err, "cannot write %s: %m", c->out[i].path);
	}
	ember_profile_free(&p);
	return err;
}

/* Writes through a memory buffer, so that the output is replaced only when complete. */
static int write_diff(const struct ember_output *o, const struct ember_profile *base,
                      const struct ember_profile *cur)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int err;

	if (!mem)
		return -ENOMEM;
	err = ember_write_html_diff(base, cur, mem);
	if (fclose(mem) && !err)
		err = -ENOMEM;
	if (!err && (lseek(o->fd, 0, SEEK_SET) < 0 || ftruncate(o->fd, 0) < 0))
		err = neg_errno();
	for (size_t off = 0; !err && off < len;) {
		ssize_t n = write(o->fd, buf + off, len - off);

		if (n < 0 && errno != EINTR)
			err = neg_errno();
		else if (n > 0)
			off += (size_t)n;
	}
	free(buf);
	return err;
}

static int run_diff(struct command *c)
{
	struct ember_profile base, cur;
	int err = read_input(&c->in[0], c->view, "", &base);

	if (err)
		return err;
	err = read_input(&c->in[1], c->view, "", &cur);
	if (!err) {
		err = write_diff(&c->out[0], &base, &cur);
		if (err)
			log_error_errno(err, "cannot write %s: %m", c->out[0].path);
		ember_profile_free(&cur);
	}
	ember_profile_free(&base);
	return err;
}

static int run_top(struct command *c)
{
	struct ember_profile p;
	struct ember_flame t;
	int err = read_input(&c->in[0], c->view, c->trace, &p);

	if (err)
		return err;
	err = ember_flame_init(&t, false);
	if (!err) {
		err = ember_flame_add_profile(&t, &p, EMBER_FLAME_NEW);
		if (!err)
			err = ember_flame_finish(&t);
		if (!err)
			err = ember_top_print(&t, &p, &c->top, stdout);
		if (!err && fflush(stdout))
			err = -EIO;
		ember_flame_free(&t);
	}
	if (err)
		log_error_errno(err, "cannot print the table: %m");
	ember_profile_free(&p);
	return err;
}

int ember_file_command_run(const struct ember_symbolizer_config *cfg)
{
	static struct command c;
	struct ember_sandbox_opts sb = {0};

	c.run = cfg->mode == EMBER_SYMBOLIZER_REPORT ? run_report
	        : cfg->mode == EMBER_SYMBOLIZER_DIFF ? run_diff
	                                             : run_top;
	for (uint32_t i = 0; i < cfg->ninputs; i++)
		c.in[c.nin++] = (struct input_file){cfg->inputs[i].path, cfg->inputs[i].fd};
	for (uint32_t i = 0; i < cfg->noutputs; i++, c.nout++) {
		c.out[i].fd = cfg->outputs[i].fd;
		c.out[i].format = (enum ember_format)cfg->outputs[i].format;
		ember_strlcpy(c.out[i].path, cfg->outputs[i].path, sizeof(c.out[i].path));
	}
	c.stats = cfg->stats;
	c.view = (enum ember_view)cfg->view;
	c.top.limit = cfg->top_rows;
	c.top.order = (enum ember_top_order)cfg->top_order;
	memcpy(c.trace, cfg->trace, sizeof(c.trace));
	/* The whole sandbox: the reader touches only the descriptors it has. */
	if (ember_sandbox_enter(&sb))
		return EMBER_EXIT_FAILURE;
	return c.run(&c) ? EMBER_EXIT_FAILURE : EMBER_EXIT_OK;
}
