// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/file_commands.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolizer/profile/flame_tree.h"
#include "symbolizer/formats/in_pprof.h"
#include "symbolizer/formats/profile_reader.h"
#include "symbolizer/formats/out_html.h"
#include "symbolizer/formats/profile_writer.h"
#include "symbolizer/sandbox.h"
#include "shared/err.h"
#include "shared/fdio.h"
#include "shared/log.h"
#include "shared/str.h"
#include "symbolizer/profile/top.h"

#define MAX_INPUTS       2
#define MAX_OUTPUTS      16
#define CONFINED_USER    "nobody"
#define DEFAULT_TOP_ROWS 20

struct input_file {
	const char *path;
	int fd;
};

struct output_file {
	struct ember_output out;
	bool created;
};

struct command {
	const char *name;
	struct input_file in[MAX_INPUTS];
	size_t nin;
	struct output_file out[MAX_OUTPUTS];
	size_t nout;
	struct ember_top_opts top;
	bool stats; /* report --stats: print the statistics */
	enum ember_view view;
	int (*run)(struct command *c);
};

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "ember %s: ", cmd);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'ember %s --help'.\n", cmd);
	return EMBER_EXIT_USAGE;
}

static void usage(const char *cmd, FILE *f)
{
	if (!strcmp(cmd, "report"))
		fprintf(
		    f,
		    "usage: ember report INPUT [--stats] [-o OUTPUT]... [--view VIEW]\n"
		    "\n"
		    "Converts a profile. INPUT is a pprof (.pb.gz) or folded-stacks file (or -\n"
		    "for standard input); each OUTPUT's name sets its format: .html flame graph,\n"
		    ".pb.gz pprof, .folded folded stacks. --stats prints what the profile says\n"
		    "about itself: host, time, samples and every counter of the recording (lost\n"
		    "samples, unwinding, symbols, caches). Needs no root.\n"
		    "\n"
		    "  --view VIEW   cpu, off-cpu or both: what a .folded output holds (CPU\n"
		    "                samples, or microseconds) and the flame graph shows first\n");
	else if (!strcmp(cmd, "diff"))
		fprintf(
		    f,
		    "usage: ember diff BASE NEW -o OUTPUT.html [--view VIEW]\n"
		    "\n"
		    "Writes a differential flame graph: the shape of NEW, each frame coloured by\n"
		    "how its share of all samples changed from BASE (red grew, blue shrank), and\n"
		    "a table of the functions that changed most. BASE and NEW are pprof (.pb.gz)\n"
		    "or folded-stacks files. --view compares CPU samples (cpu, the default), time\n"
		    "off CPU (off-cpu) or time on and off CPU (both).\n");
	else
		fprintf(
		    f,
		    "usage: ember top INPUT [-n ROWS] [--sort self|total] [--view VIEW]\n"
		    "\n"
		    "Prints the functions with the most samples of their own (self) or below\n"
		    "them (total), like `pprof -top`. INPUT is a pprof (.pb.gz) or folded-stacks\n"
		    "file. Default: %d rows, sorted by self. --view counts CPU samples (cpu, the\n"
		    "default), time off CPU (off-cpu) or time on and off CPU (both).\n",
		    DEFAULT_TOP_ROWS);
}

/* ---- the confined part ----------------------------------------------------------- */

static int read_input(const struct input_file *in, enum ember_view view, struct ember_profile *p)
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
	if (!ember_profile_total(p, view))
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
	int err = read_input(&c->in[0], c->view, &p);

	if (!err && c->stats && (err = print_stats(&p, stdout)))
		log_error_errno(err, "cannot print the statistics: %m");
	for (size_t i = 0; !err && i < c->nout; i++) {
		err = ember_output_write(&c->out[i].out, &p);
		if (err)
			log_error_errno(err, "cannot write %s: %m", c->out[i].out.path);
	}
	ember_profile_free(&p);
	return err;
}

/* Writes through a memory buffer, so that the output is replaced only when complete. */
static int write_diff(const struct output_file *o, const struct ember_profile *base,
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
	if (!err && (lseek(o->out.fd, 0, SEEK_SET) < 0 || ftruncate(o->out.fd, 0) < 0))
		err = neg_errno();
	for (size_t off = 0; !err && off < len;) {
		ssize_t n = write(o->out.fd, buf + off, len - off);

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
	int err = read_input(&c->in[0], c->view, &base);

	if (err)
		return err;
	err = read_input(&c->in[1], c->view, &cur);
	if (!err) {
		err = write_diff(&c->out[0], &base, &cur);
		if (err)
			log_error_errno(err, "cannot write %s: %m", c->out[0].out.path);
		ember_profile_free(&cur);
	}
	ember_profile_free(&base);
	return err;
}

static int run_top(struct command *c)
{
	struct ember_profile p;
	struct ember_flame t;
	int err = read_input(&c->in[0], c->view, &p);

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

/*
 * Runs c->run in a child inside the symbolizer's sandbox (sandbox.h), with the files already
 * open. Returns the exit code.
 */
static int run_confined(struct command *c, const struct ember_sandbox_opts *sb)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		log_error_errno(errno, "cannot fork: %m");
		return EMBER_EXIT_FAILURE;
	}
	if (pid == 0) {
		/* The whole sandbox: the reader touches only the descriptors it has. */
		if (ember_sandbox_enter(sb))
			_exit(EMBER_EXIT_FAILURE);
		_exit(c->run(c) ? EMBER_EXIT_FAILURE : EMBER_EXIT_OK);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			log_error_errno(errno, "cannot wait for the reader: %m");
			return EMBER_EXIT_FAILURE;
		}
	if (WIFSIGNALED(status)) {
		log_error("reading the profile failed with signal %d (%s); please report this "
		          "with the input file",
		          WTERMSIG(status), strsignal(WTERMSIG(status)));
		return EMBER_EXIT_FAILURE;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? EMBER_EXIT_OK : EMBER_EXIT_FAILURE;
}

/* ---- files, opened before confinement ------------------------------------------------ */

static int open_input(struct input_file *in, const char *cmd)
{
	if (!strcmp(in->path, "-")) {
		in->path = "standard input";
		in->fd = dup(STDIN_FILENO);
	} else {
		in->fd = open(in->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	}
	if (in->fd < 0) {
		fprintf(stderr, "ember %s: cannot open %s: %s\n", cmd, in->path, strerror(errno));
		return EMBER_EXIT_FAILURE;
	}
	return 0;
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return !fstat(a, &sa) && !fstat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino && S_ISREG(sa.st_mode);
}

static int open_output(struct command *c, struct output_file *o)
{
	const char *path = o->out.path;

	o->out.fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0644);
	o->created = o->out.fd >= 0;
	if (o->out.fd < 0 && errno == EEXIST)
		o->out.fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (o->out.fd < 0) {
		fprintf(stderr, "ember %s: cannot write %s: %s\n", c->name, path, strerror(errno));
		return EMBER_EXIT_FAILURE;
	}
	for (size_t i = 0; i < c->nin; i++)
		if (same_file(o->out.fd, c->in[i].fd))
			return usage_error(c->name, "%s is also an input: choose another output",
			                   path);
	return 0;
}

static void close_files(struct command *c, bool failed)
{
	for (size_t i = 0; i < c->nin; i++)
		if (c->in[i].fd >= 0)
			close(c->in[i].fd);
	for (size_t i = 0; i < c->nout; i++) {
		if (c->out[i].out.fd >= 0)
			close(c->out[i].out.fd);
		if (failed && c->out[i].created)
			unlink(c->out[i].out.path);
	}
}

/* ---- arguments ---------------------------------------------------------------------------- */

static int add_output(struct command *c, const char *path)
{
	struct output_file *o;

	if (c->nout == MAX_OUTPUTS)
		return usage_error(c->name, "too many -o (the limit is %s)", "16");
	o = &c->out[c->nout];
	if (ember_format_from_path(path, &o->out.format) || strchr(path, '\0') - path < 2)
		return usage_error(c->name,
		                   "cannot tell the format of '%s' from its name: end it in .html, "
		                   ".pb.gz or .folded",
		                   path);
	if (!strcmp(c->name, "diff") && o->out.format != EMBER_FORMAT_HTML)
		return usage_error(c->name, "a diff is written as HTML: name the output %s.html",
		                   "diff");
	if (ember_strlcpy(o->out.path, path, sizeof(o->out.path)))
		return usage_error(c->name, "output path too long: '%s'", path);
	o->out.fd = -1;
	c->nout++;
	return 0;
}

static int parse_args(struct command *c, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"rows", required_argument, NULL, 'n'},
	    {"sort", required_argument, NULL, 's'},
	    {"stats", no_argument, NULL, 'S'},
	    {"view", required_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool is_top = !strcmp(c->name, "top");
	size_t want_in = !strcmp(c->name, "diff") ? 2 : 1;
	uint64_t v;
	int opt, err;

	optind = 1;
	while ((opt = getopt_long(argc, argv, is_top ? "n:h" : "o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			if (is_top)
				return usage_error(c->name, "%s prints to the terminal: no -o",
				                   "top");
			err = add_output(c, optarg);
			if (err)
				return err;
			break;
		case 'n':
			if (!is_top || ember_parse_u64(optarg, 1, 1000000, &v))
				return usage_error(c->name, "bad number of rows '%s'", optarg);
			c->top.limit = (size_t)v;
			break;
		case 's':
			if (!is_top || (strcmp(optarg, "self") && strcmp(optarg, "total")))
				return usage_error(c->name, "bad --sort '%s': give self or total",
				                   optarg);
			c->top.order =
			    strcmp(optarg, "self") ? EMBER_TOP_BY_TOTAL : EMBER_TOP_BY_SELF;
			break;
		case 'S':
			if (strcmp(c->name, "report"))
				return usage_error(
				    c->name,
				    "--stats is an option of ember report, not of ember %s",
				    c->name);
			c->stats = true;
			break;
		case 'v':
			if (ember_view_parse(optarg, &c->view))
				return usage_error(
				    c->name, "bad --view '%s': give cpu, off-cpu or both", optarg);
			break;
		case 'h':
			usage(c->name, stdout);
			return -1;
		default:
			fprintf(stderr, "Try 'ember %s --help'.\n", c->name);
			return EMBER_EXIT_USAGE;
		}
	}
	for (; optind < argc; optind++) {
		if (c->nin == want_in)
			return usage_error(c->name, "unexpected argument '%s'", argv[optind]);
		c->in[c->nin++] = (struct input_file){argv[optind], -1};
	}
	if (c->nin < want_in)
		return usage_error(c->name,
		                   want_in == 2 ? "give the %s profiles BASE and NEW"
		                                : "give the %s profile to read",
		                   want_in == 2 ? "two" : "input");
	if (!is_top && !c->nout && !c->stats)
		return !strcmp(c->name, "diff")
		           ? usage_error(c->name, "give an output with -o, e.g. -o %s", "diff.html")
		           : usage_error(c->name, "give an output with -o (e.g. -o %s) or --stats",
		                         "profile.html");
	if (!strcmp(c->name, "diff") && c->nout != 1)
		return usage_error(c->name, "a diff has one output (%s)", "-o diff.html");
	return 0;
}

bool ember_command_known(const char *name)
{
	return !strcmp(name, "report") || !strcmp(name, "diff") || !strcmp(name, "top");
}

int ember_command_run(int argc, char **argv)
{
	static struct command c;
	struct ember_sandbox_opts sb = {0};
	int rc = 0;

	memset(&c, 0, sizeof(c));
	c.name = argv[0];
	c.top.limit = DEFAULT_TOP_ROWS;
	c.top.order = EMBER_TOP_BY_SELF;
	c.run = !strcmp(c.name, "report") ? run_report
	        : !strcmp(c.name, "diff") ? run_diff
	                                  : run_top;
	rc = parse_args(&c, argc, argv);
	if (rc)
		return rc < 0 ? EMBER_EXIT_OK : rc;
	if (geteuid() == 0 || getuid() == 0) {
		struct passwd *pw = getpwnam(CONFINED_USER);

		if (!pw || !pw->pw_uid) {
			fprintf(stderr,
			        "ember %s: running as root, and there is no user '%s' to "
			        "drop to: run it as an ordinary user\n",
			        c.name, CONFINED_USER);
			return EMBER_EXIT_FAILURE;
		}
		sb.uid = pw->pw_uid;
		sb.gid = pw->pw_gid;
		sb.change_user = true;
	}
	for (size_t i = 0; !rc && i < c.nin; i++)
		rc = open_input(&c.in[i], c.name);
	for (size_t i = 0; !rc && i < c.nout; i++)
		rc = open_output(&c, &c.out[i]);
	if (!rc)
		rc = run_confined(&c, &sb);
	close_files(&c, rc != 0);
	return rc;
}
