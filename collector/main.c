// SPDX-License-Identifier: Apache-2.0
/*
 * ember: the command users type. `record` and `check` run here, in the
 * collector role; the commands that only read files (report, diff, top) run
 * in ember-symbolizer, which links the parsers this program must not.
 * Built with EMBER_COLLECTOR_DAEMON this is ember-collector, the daemon.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/check.h"
#include "ipc/endpoint.h"
#include "ipc/proto.h"
#include "ipc/ring.h"
#include "collector/run_loop.h"
#include "shared/err.h"
#include "shared/log.h"
#include "shared/str.h"
#include "collector/spawn.h"
#include "seccomp/caps.h"

#define DEFAULT_HZ          19
#define MAX_HZ              10000
#define DEFAULT_USER        "nobody"
#define DEFAULT_DAEMON_USER "ember"
#define DEFAULT_OUTPUT      "profile.html"

static const struct {
	const char *suffix;
	const char *format;
} output_formats[] = {
    {".pb.gz", "pprof"},
    {".folded", "folded"},
    {".html", "html"},
    {".otlp", "otlp"},
};

static void usage_main(FILE *f)
{
	fprintf(f, "usage: ember COMMAND [OPTIONS]\n"
	           "\n"
	           "commands:\n"
	           "  record   sample every CPU and write a profile (needs root)\n"
	           "  report   convert a profile (.pb.gz, .folded); --stats prints its counters\n"
	           "  diff     differential flame graph of two profiles\n"
	           "  top      table of the functions with the most samples\n"
	           "  check    tell whether this host and user can record, and what to fix\n"
	           "  version  print the version\n"
	           "\n"
	           "`ember COMMAND --help` describes a command.\n");
}

static void usage_record(FILE *f)
{
	fprintf(
	    f,
	    "usage: ember record [-d SECONDS] [-F HZ] [-p PID]... [-o FILE]... [OPTIONS]\n"
	    "\n"
	    "Samples the CPUs (all processes, or those given with -p) and writes a profile\n"
	    "when the duration ends or on Ctrl-C.\n"
	    "\n"
	    "  -d, --duration SECONDS  how long to record (also 30s, 5m, 1h); default: until "
	    "Ctrl-C\n"
	    "  -F, --frequency HZ      samples per second per CPU (1-%d); default %d\n"
	    "  -p, --pid PID           record only this process (repeatable)\n"
	    "      --off-cpu[=MIN]     also record where threads wait (waits of MIN, default 1ms)\n"
	    "      --view VIEW         cpu, off-cpu or both: .folded content, first .html view\n"
	    "  -o, --output FILE       write FILE; its name sets the format:\n"
	    "                          .html flame graph, .pb.gz pprof, .folded folded\n"
	    "                          stacks, .otlp OTLP (repeatable);\n"
	    "                          default %s\n"
	    "      --otlp URL          ship profiles live: http(s):// OTLP/HTTP, grpc(s):// gRPC; "
	    "with\n"
	    "                          --interval, --service-name, --otlp-header, --otlp-ca, ...\n"
	    "                          (see README.md, \"Shipping profiles\")\n"
	    "      --user NAME         user the symbolizer runs as; default %s\n"
	    "      --log-level LEVEL   error, warning, info or debug; default info\n"
	    "      --no-progress       no progress line\n"
	    "  -h, --help              this text\n",
	    MAX_HZ, DEFAULT_HZ, DEFAULT_OUTPUT, DEFAULT_USER);
}

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", cmd);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '%s --help'.\n", cmd);
	return EMBER_EXIT_USAGE;
}

static const char *format_of(const char *path)
{
	for (size_t i = 0; i < ARRAY_SIZE(output_formats); i++)
		if (ember_str_ends_with(path, output_formats[i].suffix) &&
		    strlen(path) > strlen(output_formats[i].suffix))
			return output_formats[i].format;
	return NULL;
}

static bool process_exists(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

static void usage_daemon(FILE *f)
{
	fprintf(f,
	        "usage: ember-collector [-F HZ] [-p PID]... [OPTIONS]\n"
	        "\n"
	        "Samples the CPUs until SIGTERM and serves one ember-symbolizer at a time on\n"
	        "RUNTIME_DIR/%s; samples taken while none is connected are counted as lost.\n"
	        "\n"
	        "  -F, --frequency HZ      samples per second per CPU (1-%d); default %d\n"
	        "  -p, --pid PID           sample only this process (repeatable)\n"
	        "      --off-cpu[=MIN]     also record off-CPU waits (of MIN, default 1ms)\n"
	        "      --user NAME         user (and group) the symbolizer runs as; default %s\n"
	        "      --runtime-dir DIR   where the socket lives; default %s\n"
	        "      --debug-dir DIR     debug files by build id; default /usr/lib/debug\n"
	        "      --ring-size BYTES   sample ring per connection; default: 2 s of samples\n"
	        "      --log-level LEVEL   error, warning, info or debug; default info\n",
	        EMBER_SOCKET_NAME, MAX_HZ, DEFAULT_HZ, DEFAULT_DAEMON_USER, EMBER_RUNTIME_DIR);
}

/* OPT_PASS: export settings, handed to the symbolizer (which checks them). */
enum {
	OPT_USER = 256,
	OPT_LOG_LEVEL,
	OPT_NO_PROGRESS,
	OPT_RING_SIZE,
	OPT_RUNTIME,
	OPT_DEBUG_DIR,
	OPT_OTLP,
	OPT_OFF_CPU,
	OPT_PASS
};

#define MAX_PASS 64

/* `ember record`, and ember-collector (daemon): the same options, less -d and -o. */
static int cmd_record(int argc, char **argv, bool daemon)
{
	static const struct option longopts[] = {
	    {"duration", required_argument, NULL, 'd'},
	    {"frequency", required_argument, NULL, 'F'},
	    {"pid", required_argument, NULL, 'p'},
	    {"output", required_argument, NULL, 'o'},
	    {"user", required_argument, NULL, OPT_USER},
	    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
	    {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
	    {"ring-size", required_argument, NULL, OPT_RING_SIZE},
	    {"runtime-dir", required_argument, NULL, OPT_RUNTIME},
	    {"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
	    {"otlp", required_argument, NULL, OPT_OTLP},
	    {"off-cpu", optional_argument, NULL, OPT_OFF_CPU},
	    {"view", required_argument, NULL, OPT_PASS},
	    {"interval", required_argument, NULL, OPT_PASS},
	    {"service-name", required_argument, NULL, OPT_PASS},
	    {"otlp-header", required_argument, NULL, OPT_PASS},
	    {"otlp-ca", required_argument, NULL, OPT_PASS},
	    {"otlp-cert", required_argument, NULL, OPT_PASS},
	    {"otlp-key", required_argument, NULL, OPT_PASS},
	    {"otlp-timeout", required_argument, NULL, OPT_PASS},
	    {"otlp-compression", required_argument, NULL, OPT_PASS},
	    {"otlp-queue-size", required_argument, NULL, OPT_PASS},
	    {"otlp-deadline", required_argument, NULL, OPT_PASS},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static struct ember_record_opts o;
	static char socket_path[4096];
	const char *user = daemon ? DEFAULT_DAEMON_USER : DEFAULT_USER, *log_level = "info";
	const char *cmd = daemon ? "ember-collector" : "ember record",
		   *runtime_dir = EMBER_RUNTIME_DIR;
	static const char *pass[MAX_PASS + 1];
	size_t npass = 0;
	int idx = 0;
	char *arg;
	enum ember_log_level level = EMBER_LOG_INFO;
	struct passwd *pw;
	uint64_t v, caps;
	long max_rate;
	int c;

	memset(&o, 0, sizeof(o));
	o.sample_hz = DEFAULT_HZ;
	o.off_cpu_min_ns = EMBER_OFF_CPU_OFF;
	o.progress = !daemon && isatty(STDERR_FILENO);
	optind = 1;
	while ((c = getopt_long(argc, argv, "+d:F:p:o:h", longopts, &idx)) != -1) {
		if (daemon && (c == 'd' || c == 'o' || c == OPT_NO_PROGRESS || c == OPT_OTLP ||
		               c == OPT_PASS))
			return usage_error(
			    cmd,
			    "%s: the daemon runs until SIGTERM, and its symbolizer "
			    "writes and ships the outputs",
			    "-d, -o, --no-progress and --otlp are for `ember record`");
		if (!daemon && c == OPT_RUNTIME)
			return usage_error(cmd, "%s is for ember-collector", "--runtime-dir");
		switch (c) {
		case 'd':
			if (ember_parse_duration_ms(optarg, &o.duration_ms) || !o.duration_ms)
				return usage_error(
				    cmd, "bad duration '%s': give seconds, e.g. -d 30", optarg);
			break;
		case 'F':
			if (ember_parse_u64(optarg, 1, MAX_HZ, &v))
				return usage_error(cmd, "bad frequency '%s': give 1 to 10000 Hz",
				                   optarg);
			o.sample_hz = (unsigned int)v;
			break;
		case 'p':
			if (ember_parse_u64(optarg, 1, INT_MAX, &v))
				return usage_error(cmd, "bad PID '%s'", optarg);
			if (!process_exists((pid_t)v))
				return usage_error(cmd, "no process with PID %s", optarg);
			if (o.npids == EMBER_MAX_PIDS)
				return usage_error(cmd, "too many -p (the limit is %s)", "1024");
			o.pids[o.npids++] = (pid_t)v;
			break;
		case 'o':
			if (o.noutputs == EMBER_MAX_OUTPUTS)
				return usage_error(cmd, "too many -o (the limit is %s)", "16");
			if (!format_of(optarg))
				return usage_error(cmd,
				                   "cannot tell the format of '%s' from its name: "
				                   "end it in .html, .pb.gz, .folded or .otlp",
				                   optarg);
			o.outputs[o.noutputs].path = optarg;
			o.outputs[o.noutputs++].format = format_of(optarg);
			break;
		case OPT_USER:
			user = optarg;
			break;
		case OPT_LOG_LEVEL:
			if (ember_log_level_parse(optarg, &level))
				return usage_error(cmd, "bad log level '%s'", optarg);
			log_level = optarg;
			ember_log_set_level(level);
			break;
		case OPT_NO_PROGRESS:
			o.progress = false;
			break;
		case OPT_RUNTIME:
			runtime_dir = optarg;
			break;
		case OPT_DEBUG_DIR:
			o.debug_dir = optarg;
			break;
		case OPT_OFF_CPU: /* waits shorter than MIN are counted, not recorded */
			if (ember_parse_duration_ms(optarg ? optarg : "1ms", &v))
				return usage_error(
				    cmd, "bad --off-cpu minimum '%s': e.g. --off-cpu=5ms", optarg);
			o.off_cpu_min_ns = v * 1000000;
			break;
		case OPT_OTLP: /* checked by the symbolizer, like the other export settings */
			o.otlp_url = optarg;
			break;
		case OPT_PASS:
			if (npass == MAX_PASS ||
			    asprintf(&arg, "--%s=%s", longopts[idx].name, optarg) < 0)
				return usage_error(cmd, "too many export options%s", "");
			pass[npass++] = arg;
			o.symbolizer_args = pass;
			break;
		case OPT_RING_SIZE:
			if (ember_parse_u64(optarg, EMBER_RING_MIN_SIZE, EMBER_RING_MAX_SIZE, &v))
				return usage_error(cmd, "bad ring size '%s'", optarg);
			o.ring_size = v;
			break;
		case 'h':
			(daemon ? usage_daemon : usage_record)(stdout);
			return EMBER_EXIT_OK;
		default:
			fprintf(stderr, "Try '%s --help'.\n", cmd);
			return EMBER_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (!ember_read_proc_long("/proc/sys/kernel/perf_event_max_sample_rate", &max_rate) &&
	    o.sample_hz > max_rate)
		return usage_error(cmd,
		                   "-F is above the kernel's limit "
		                   "(/proc/sys/kernel/perf_event_max_sample_rate = %s)",
		                   "lower");
	if (daemon) {
		snprintf(socket_path, sizeof(socket_path), "%s/%s", runtime_dir, EMBER_SOCKET_NAME);
		if (mkdir(runtime_dir, 0755) < 0 && errno != EEXIST)
			return usage_error(cmd, "cannot create the runtime directory %s",
			                   runtime_dir);
		o.socket_path = socket_path;
	} else if (!o.noutputs && !o.otlp_url) {
		o.outputs[0].path = DEFAULT_OUTPUT;
		o.outputs[0].format = format_of(DEFAULT_OUTPUT);
		o.noutputs = 1;
	}
	pw = getpwnam(user);
	if (!pw)
		return usage_error(cmd, "no user '%s' for --user", user);
	if (pw->pw_uid == 0)
		return usage_error(
		    cmd, "the symbolizer must not run as root; choose another --user than '%s'",
		    user);
	o.uid = pw->pw_uid;
	o.gid = pw->pw_gid;
	o.log_level = log_level;

	caps = ember_caps_effective();
	if (!ember_caps_has(caps, CAP_SYS_ADMIN) &&
	    !(ember_caps_has(caps, CAP_BPF) && ember_caps_has(caps, CAP_PERFMON))) {
		log_error("recording needs root (or CAP_BPF and CAP_PERFMON): run it with sudo; "
		          "`ember check` lists what is missing");
		return EMBER_EXIT_FAILURE;
	}
	return ember_record_run(&o);
}

static int cmd_check(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: ember check\n\nReports kernel version, BTF, capabilities and the "
		       "sysctls that limit profiling, each with a verdict and what to do.\n");
		return EMBER_EXIT_OK;
	}
	if (argc > 1)
		return usage_error("ember check", "unexpected argument '%s'", argv[1]);
	return ember_check_run(true);
}

/* Commands that only read files run in ember-symbolizer, which links the parsers. */
static int cmd_file_tool(char **argv)
{
	char path[PATH_MAX];

	if (ember_symbolizer_path(path, sizeof(path))) {
		log_error("cannot find ember-symbolizer next to ember or in %s; reinstall ember",
		          EMBER_LIBEXECDIR);
		return EMBER_EXIT_FAILURE;
	}
	argv[0] = "ember-symbolizer";
	execv(path, argv);
	log_error("cannot run %s: %s", path, strerror(errno));
	return EMBER_EXIT_FAILURE;
}

int main(int argc, char **argv)
{
	const char *cmd;

#ifdef EMBER_COLLECTOR_DAEMON
	ember_log_init("ember-collector", EMBER_LOG_INFO);
	return cmd_record(argc, argv, true);
#endif
	ember_log_init("ember", EMBER_LOG_INFO);
	if (argc < 2) {
		usage_main(stderr);
		return EMBER_EXIT_USAGE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "record"))
		return cmd_record(argc - 1, argv + 1, false);
	if (!strcmp(cmd, "report") || !strcmp(cmd, "diff") || !strcmp(cmd, "top"))
		return cmd_file_tool(argv);
	if (!strcmp(cmd, "check"))
		return cmd_check(argc - 1, argv + 1);
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("ember %s\n", EMBER_VERSION);
		return EMBER_EXIT_OK;
	}
	if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		usage_main(stdout);
		return EMBER_EXIT_OK;
	}
	fprintf(stderr, "ember: unknown command '%s'\n", cmd);
	usage_main(stderr);
	return EMBER_EXIT_USAGE;
}
