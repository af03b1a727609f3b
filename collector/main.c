// SPDX-License-Identifier: Apache-2.0
/*
 * ember: the command users type. `record` runs here, in the collector role;
 * every other command (report, diff, top, check, version, help) in
 * ember-symbolizer, which links the parsers this program must not.
 * Built with EMBER_COLLECTOR_DAEMON this is ember-collector, the daemon.
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/endpoint.h"
#include "ipc/proto.h"
#include "ipc/ring.h"
#include "collector/run_loop.h"
#include "collector/selection.h"
#include "shared/err.h"
#include "shared/fdio.h"
#include "shared/formats.h"
#include "shared/log.h"
#include "shared/str.h"
#include "collector/spawn.h"
#include "seccomp/caps.h"

#define DEFAULT_HZ          19
#define MAX_HZ              10000
#define DEFAULT_USER        "nobody"
#define DEFAULT_DAEMON_USER "ember"
#define DEFAULT_OUTPUT      "profile.html"

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", cmd);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '%s --help'.\n", cmd);
	return EMBER_EXIT_USAGE;
}

/* ---- `ember record` and ember-collector: one option table ------------------------ */

#define STR_(x)  #x
#define STR(x)   STR_(x)
#define MAX_PASS 64

/* What parsing the command line builds. */
struct cli {
	const char *cmd;
	bool daemon;
	struct ember_record_opts o;
	const char *user, *runtime_dir, *run_as;
	const char *pass[MAX_PASS + 1]; /* export settings for the symbolizer, which checks them */
	size_t npass;
	char socket_path[4096];
	const char *option; /* the long name of the option being parsed */
};

/* Takes an option's argument. Returns 0, or an exit code after saying what is wrong. */
typedef int opt_fn(struct cli *c, const char *arg);

static int opt_duration(struct cli *c, const char *arg)
{
	if (ember_parse_duration_ms(arg, &c->o.duration_ms) || !c->o.duration_ms)
		return usage_error(c->cmd, "bad duration '%s': give seconds, e.g. -d 30", arg);
	return 0;
}

static int opt_frequency(struct cli *c, const char *arg)
{
	uint64_t v;

	if (ember_parse_u64(arg, 1, MAX_HZ, &v))
		return usage_error(c->cmd, "bad frequency '%s': give 1 to 10000 Hz", arg);
	c->o.sample_hz = (unsigned int)v;
	return 0;
}

static int opt_pid(struct cli *c, const char *arg)
{
	uint64_t v;

	if (ember_parse_u64(arg, 1, INT_MAX, &v))
		return usage_error(c->cmd, "bad PID '%s'", arg);
	if (kill((pid_t)v, 0) && errno != EPERM) /* EPERM: it exists */
		return usage_error(c->cmd, "no process with PID %s", arg);
	if (c->o.npids == EMBER_MAX_PIDS)
		return usage_error(c->cmd, "too many -p (the limit is %s)", STR(EMBER_MAX_PIDS));
	c->o.pids[c->o.npids++] = (pid_t)v;
	ember_select_note(&c->o.selection, "pid", arg, NULL, NULL);
	return 0;
}

/* --cgroup, --unit, --container, --pod: a cgroup v2 subtree, filtered in eBPF. */
static int opt_select(struct cli *c, const char *arg)
{
	int err = ember_select_cgroup(&c->o.selection, c->option, arg);

	if (err == -EINVAL)
		return usage_error(
		    c->cmd, "bad '%s': give a cgroup path from the v2 root, without '..'", arg);
	return err ? EMBER_EXIT_FAILURE : 0;
}

static int opt_output(struct cli *c, const char *arg)
{
	enum ember_format f;

	if (c->o.noutputs == EMBER_MAX_OUTPUTS)
		return usage_error(c->cmd, "too many -o (the limit is %s)", STR(EMBER_MAX_OUTPUTS));
	if (ember_format_from_path(arg, &f))
		return usage_error(c->cmd,
		                   "cannot tell the format of '%s' from its name: "
		                   "end it in .html, .pb.gz, .folded or .otlp",
		                   arg);
	c->o.outputs[c->o.noutputs].path = arg;
	c->o.outputs[c->o.noutputs++].format = ember_format_name(f);
	return 0;
}

/* Waits shorter than MIN are counted, not recorded. */
static int opt_off_cpu(struct cli *c, const char *arg)
{
	uint64_t ms;

	if (ember_parse_duration_ms(arg ? arg : "1ms", &ms))
		return usage_error(c->cmd, "bad --off-cpu minimum '%s': e.g. --off-cpu=5ms", arg);
	c->o.off_cpu_min_ns = ms * 1000000;
	return 0;
}

static int opt_ring_size(struct cli *c, const char *arg)
{
	uint64_t bytes;

	if (ember_parse_u64(arg, EMBER_RING_MIN_SIZE, EMBER_RING_MAX_SIZE, &bytes))
		return usage_error(c->cmd, "bad ring size '%s'", arg);
	c->o.ring_size = bytes;
	return 0;
}

/* Export settings and views: handed to the symbolizer as they are. */
static int opt_pass(struct cli *c, const char *arg)
{
	char *pass;

	if (c->npass == MAX_PASS || asprintf(&pass, "--%s=%s", c->option, arg) < 0)
		return usage_error(c->cmd, "too many export options%s", "");
	c->pass[c->npass++] = pass;
	c->o.symbolizer_args = c->pass;
	return 0;
}

/* The collector's, and the symbolizer's as it is handed on. */
static int opt_log_level(struct cli *c, const char *arg)
{
	enum ember_log_level level;

	if (ember_log_level_parse(arg, &level))
		return usage_error(c->cmd, "bad log level '%s'", arg);
	ember_log_set_level(level);
	return opt_pass(c, arg);
}

#define RECORD 1u /* ember record */
#define DAEMON 2u /* ember-collector */
#define BOTH   (RECORD | DAEMON)

#define ARG        required_argument
#define STORE(fld) offsetof(struct cli, fld)
/* Export settings, handed to the symbolizer: --otlp's help points to them. */
#define PASS(name)                                                                                 \
	{                                                                                          \
		name, 0, ARG, NULL, RECORD, opt_pass, .help = NULL                                 \
	}

/*
 * Every option of both commands: getopt_long's array and --help are made
 * from it. An option without help is not listed (the export settings, which
 * --otlp's help points to).
 */
/* clang-format off */
static const struct cli_option {
	const char *name;
	char short_name;
	int has_arg;
	const char *arg; /* as --help shows it */
	unsigned int commands;
	opt_fn *parse; /* NULL: the argument is stored at `store` */
	size_t store;  /* offset of a const char * in struct cli */
	const char *help;
	const char *daemon_help; /* ember-collector's, when it differs */
} options[] = {
	{"duration", 'd', ARG, "SECONDS", RECORD, opt_duration, .help = "how long to record (also 30s, 5m, 1h); default: until Ctrl-C"},
	{"frequency", 'F', ARG, "HZ", BOTH, opt_frequency, .help = "samples per second per CPU (1-" STR(MAX_HZ) "); default " STR(DEFAULT_HZ)},
	{"pid", 'p', ARG, "PID", BOTH, opt_pid, .help = "record only this process (repeatable)",
	 .daemon_help = "sample only this process (repeatable)"},
	{"cgroup", 0, ARG, "PATH", BOTH, opt_select, .help = "record only that cgroup v2 subtree (repeatable, as the\n"
	 "next three): its processes, new ones too, filtered in eBPF"},
	{"unit", 0, ARG, "NAME", BOTH, opt_select, .help = "a systemd unit's (nginx.service), across restarts"},
	{"container", 0, ARG, "ID", BOTH, opt_select, .help = "a container's (docker, podman, containerd, CRI-O):\nits id, or a unique prefix of it"},
	{"pod", 0, ARG, "UID", BOTH, opt_select, .help = "a Kubernetes pod's (its metadata.uid)"},
	{"run-as", 0, ARG, "USER", RECORD, .store = STORE(run_as), .help = "run COMMAND as USER; default: the user of sudo"},
	{"off-cpu", 0, optional_argument, "MIN", BOTH, opt_off_cpu, .help = "also record where threads wait (waits of MIN, default 1ms)",
	 .daemon_help = "also record off-CPU waits (of MIN, default 1ms)"},
	{"view", 0, ARG, "VIEW", RECORD, opt_pass, .help = "cpu, off-cpu or both: .folded content, first .html view"},
	{"memory-budget", 0, ARG, "BYTES", RECORD, opt_pass, .help = "the symbolizer's resident memory (64M, 1G); default 64M"},
	{"output", 'o', ARG, "FILE", RECORD, opt_output, .help = "write FILE; its name sets the format:\n"
	 ".html flame graph, .pb.gz pprof, .folded folded\nstacks, .otlp OTLP (repeatable);\ndefault " DEFAULT_OUTPUT},
	{"otlp", 0, ARG, "URL", RECORD, .store = STORE(o.otlp_url), .help = "ship profiles live: http(s):// OTLP/HTTP, grpc(s):// gRPC; with\n"
	 "--interval, --service-name, --otlp-header, --otlp-ca, ...\n(see README.md, \"Shipping profiles\")"},
	{"interpreters", 0, ARG, "LIST", RECORD, opt_pass, .help = "python (default: Python frames) or none"},
	{"user", 0, ARG, "NAME", BOTH, .store = STORE(user), .help = "user the symbolizer runs as; default " DEFAULT_USER,
	 .daemon_help = "user (and group) the symbolizer runs as; default " DEFAULT_DAEMON_USER},
	{"runtime-dir", 0, ARG, "DIR", DAEMON, .store = STORE(runtime_dir), .help = "where the socket lives; default " EMBER_RUNTIME_DIR},
	{"debug-dir", 0, ARG, "DIR", BOTH, .store = STORE(o.debug_dir), .help = "debug files by build id; default /usr/lib/debug"},
	{"ring-size", 0, ARG, "BYTES", BOTH, opt_ring_size, .help = "sample ring per connection; default: 2 s of samples"},
	{"log-level", 0, ARG, "LEVEL", BOTH, opt_log_level, .help = "error, warning, info or debug; default info"},
	{"no-progress", 0, no_argument, NULL, RECORD, .help = "no progress line"},
	PASS("interval"), PASS("service-name"), PASS("otlp-header"), PASS("otlp-ca"), PASS("otlp-cert"),
	PASS("otlp-key"), PASS("otlp-timeout"), PASS("otlp-compression"), PASS("otlp-queue-size"),
	PASS("otlp-deadline"),
};
/* clang-format on */

#define HELP_COLUMN 26

static void usage_options(FILE *f, unsigned int command)
{
	for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
		const struct cli_option *op = &options[i];
		char flag[8] = "", name[64];
		int col;

		const char *help =
		    command == DAEMON && op->daemon_help ? op->daemon_help : op->help;

		if (!(op->commands & command) || !help)
			continue;
		if (op->short_name)
			snprintf(flag, sizeof(flag), "-%c,", op->short_name);
		snprintf(name, sizeof(name),
		         op->has_arg == optional_argument ? "--%s[=%s]"
		         : op->arg                        ? "--%s %s"
		                                          : "--%s",
		         op->name, op->arg);
		col = fprintf(f, "  %-4s%s", flag, name);
		fprintf(f, "%*s", col < HELP_COLUMN ? HELP_COLUMN - col : 1, "");
		for (const char *h = help; *h; h++)
			if (*h == '\n')
				fprintf(f, "\n%*s", HELP_COLUMN, "");
			else
				fputc(*h, f);
		fputc('\n', f);
	}
	fprintf(f, "  -h, --help              this text\n");
}

static void usage(FILE *f, bool daemon)
{
	if (daemon)
		fprintf(
		    f,
		    "usage: ember-collector [-F HZ] [-p PID]... [OPTIONS]\n\n"
		    "Samples the CPUs until SIGTERM and serves one ember-symbolizer at a time on\n"
		    "RUNTIME_DIR/%s; samples taken while none is connected are counted as "
		    "lost.\n\n",
		    EMBER_SOCKET_NAME);
	else
		fprintf(f, "usage: ember record [-d SECONDS] [-F HZ] [-p PID]... [-o FILE]... "
		           "[OPTIONS] [-- COMMAND [ARGS...]]\n\n"
		           "Samples the CPUs (all processes, or those chosen) and writes a profile "
		           "when the\nduration ends, on Ctrl-C, or when COMMAND (which it starts, "
		           "and samples with\neverything it starts) exits; ember then exits as "
		           "COMMAND did.\n\n");
	usage_options(f, daemon ? DAEMON : RECORD);
}

/* Parses argv into c. Returns -1 to go on, or the exit code (help, a usage error). */
static int parse(struct cli *c, int argc, char **argv)
{
	struct option longopts[ARRAY_SIZE(options) + 2];
	char shortopts[2 * ARRAY_SIZE(options) + 4] = "+h";
	size_t ns = 2;
	int opt, err;

	for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
		longopts[i] =
		    (struct option){options[i].name, options[i].has_arg, NULL, 256 + (int)i};
		if (options[i].short_name) {
			shortopts[ns++] = options[i].short_name;
			shortopts[ns++] = ':';
		}
	}
	longopts[ARRAY_SIZE(options)] = (struct option){"help", no_argument, NULL, 'h'};
	longopts[ARRAY_SIZE(options) + 1] = (struct option){NULL, 0, NULL, 0};
	shortopts[ns] = '\0';
	optind = 1;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const struct cli_option *op = NULL;

		if (opt == 'h') {
			usage(stdout, c->daemon);
			return EMBER_EXIT_OK;
		}
		for (size_t i = 0; i < ARRAY_SIZE(options) && !op; i++)
			if (opt == 256 + (int)i || (opt < 256 && opt == options[i].short_name))
				op = &options[i];
		if (!op) {
			fprintf(stderr, "Try '%s --help'.\n", c->cmd);
			return EMBER_EXIT_USAGE;
		}
		if (c->daemon && !(op->commands & DAEMON))
			return usage_error(
			    c->cmd,
			    "%s: the daemon runs until SIGTERM, and its symbolizer "
			    "writes and ships the outputs",
			    "-d, -o, --no-progress and --otlp are for `ember record`");
		if (!c->daemon && !(op->commands & RECORD))
			return usage_error(c->cmd, "--%s is for ember-collector", op->name);
		c->option = op->name;
		if (op->parse && (err = op->parse(c, optarg)))
			return err;
		if (!op->parse && op->store)
			*(const char **)((char *)c + op->store) = optarg;
		else if (!op->parse) /* --no-progress, the one flag */
			c->o.progress = false;
	}
	if (optind < argc && c->daemon)
		return usage_error(c->cmd, "unexpected argument '%s'", argv[optind]);
	if (optind < argc)
		c->o.command.argv = argv + optind;
	return -1;
}

/* Who runs the command: --run-as USER, else whoever ran sudo, else ember's own user. */
static int command_user(struct ember_command *c, const char *run_as)
{
	const char *sudo_uid = getenv("SUDO_UID");
	struct passwd *pw;
	uint64_t uid;

	if (run_as)
		pw = getpwnam(run_as);
	else if (getuid() == 0 && sudo_uid && !ember_parse_u64(sudo_uid, 0, INT_MAX, &uid))
		pw = getpwuid((uid_t)uid);
	else
		return 0;
	if (!pw || !(c->user = strdup(pw->pw_name)) || !(c->home = strdup(pw->pw_dir)))
		return -ENOENT;
	c->uid = pw->pw_uid;
	c->gid = pw->pw_gid; /* SUDO_GID is the same, the user's primary group */
	return 0;
}

/* The profile says which command ran: "command ARGV...", titled and serviced by its name. */
static void note_command(struct ember_selection *s, char *const *argv)
{
	char line[EMBER_SELECTION_LEN] = "";
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];

	for (size_t n = 0; *argv && n < sizeof(line); argv++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s", n ? " " : "", *argv);
	ember_select_note(s, "command", line, name, name);
}

/* Checks what the options say together and against this host. Returns -1 or an exit code. */
static int validate(struct cli *c)
{
	struct ember_record_opts *o = &c->o;
	struct passwd *pw;
	long long max_rate;
	int err;

	if (o->command.argv) {
		if (command_user(&o->command, c->run_as))
			return usage_error(c->cmd,
			                   c->run_as ? "no user '%s' for --run-as"
			                             : "no user of SUDO_UID %s: give --run-as USER",
			                   c->run_as ? c->run_as : getenv("SUDO_UID"));
		note_command(&o->selection, o->command.argv);
	} else if (c->run_as) {
		return usage_error(c->cmd,
		                   "%s needs a command: ember record --run-as USER -- COMMAND",
		                   "--run-as");
	}
	if (!ember_read_proc_number("/proc/sys/kernel/perf_event_max_sample_rate", NULL, 0,
	                            &max_rate) &&
	    o->sample_hz > max_rate)
		return usage_error(c->cmd,
		                   "-F is above the kernel's limit "
		                   "(/proc/sys/kernel/perf_event_max_sample_rate = %s)",
		                   "lower");
	if (c->daemon) {
		snprintf(c->socket_path, sizeof(c->socket_path), "%s/%s", c->runtime_dir,
		         EMBER_SOCKET_NAME);
		if (mkdir(c->runtime_dir, 0755) < 0 && errno != EEXIST)
			return usage_error(c->cmd, "cannot create the runtime directory %s",
			                   c->runtime_dir);
		o->socket_path = c->socket_path;
	} else if (!o->noutputs && !o->otlp_url) {
		o->outputs[0].path = DEFAULT_OUTPUT;
		o->outputs[0].format = ember_format_name(EMBER_FORMAT_HTML); /* DEFAULT_OUTPUT's */
		o->noutputs = 1;
	}
	pw = getpwnam(c->user);
	if (!pw)
		return usage_error(c->cmd, "no user '%s' for --user", c->user);
	if (pw->pw_uid == 0)
		return usage_error(
		    c->cmd, "the symbolizer must not run as root; choose another --user than '%s'",
		    c->user);
	o->uid = pw->pw_uid;
	o->gid = pw->pw_gid;
	/* --unit, --container, --pod: found by ember-symbolizer, as the symbolizer's user. */
	err = ember_select_find(&o->selection, o->uid, o->gid);
	return !err ? -1 : err == -EINVAL ? EMBER_EXIT_USAGE : EMBER_EXIT_FAILURE;
}

static int run(struct cli *c)
{
	uint64_t caps = ember_caps_effective();

	if (!ember_caps_has(caps, CAP_SYS_ADMIN) &&
	    !(ember_caps_has(caps, CAP_BPF) && ember_caps_has(caps, CAP_PERFMON))) {
		log_error("recording needs root (or CAP_BPF and CAP_PERFMON): run it with sudo; "
		          "`ember check` lists what is missing");
		return EMBER_EXIT_FAILURE;
	}
	return ember_record_run(&c->o);
}

/* `ember record`, and ember-collector (daemon): the same options, less -d and -o. */
static int cmd_record(int argc, char **argv, bool daemon)
{
	static struct cli c; /* large (pids): not on the stack */
	int code;

	memset(&c, 0, sizeof(c));
	c.daemon = daemon;
	c.cmd = daemon ? "ember-collector" : "ember record";
	c.user = daemon ? DEFAULT_DAEMON_USER : DEFAULT_USER;
	c.runtime_dir = EMBER_RUNTIME_DIR;
	c.o.command.pidfd = c.o.command.gate = -1;
	c.o.sample_hz = DEFAULT_HZ;
	c.o.off_cpu_min_ns = EMBER_OFF_CPU_OFF;
	c.o.progress = !daemon && isatty(STDERR_FILENO);
	if ((code = parse(&c, argc, argv)) >= 0 || (code = validate(&c)) >= 0)
		return code;
	return run(&c);
}

/*
 * Every command but record needs nothing of the collector: ember-symbolizer, run under the
 * name ember, is the rest of the front end (report, diff and top parse untrusted files, which
 * this program must not; check, version and help).
 */
static int cmd_in_symbolizer(char **argv)
{
	char path[PATH_MAX];

	if (ember_symbolizer_path(path, sizeof(path)))
		return EMBER_EXIT_FAILURE;
	argv[0] = "ember";
	execv(path, argv);
	log_error_errno(errno, "cannot run %s: %m", path);
	return EMBER_EXIT_FAILURE;
}

int main(int argc, char **argv)
{
#ifdef EMBER_COLLECTOR_DAEMON
	ember_log_init("ember-collector", EMBER_LOG_INFO);
	return cmd_record(argc, argv, true);
#endif
	ember_log_init("ember", EMBER_LOG_INFO);
	if (argc > 1 && !strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1, false);
	return cmd_in_symbolizer(argv);
}
