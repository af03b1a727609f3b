// SPDX-License-Identifier: Apache-2.0
#include "frontend/options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <string.h>

#include "frontend/cli.h"
#include "ipc/endpoint.h"
#include "ipc/ring.h"
#include "shared/err.h"
#include "shared/formats.h"
#include "shared/log.h"
#include "shared/parse.h"
#include "symbolizer/interp/runtimes.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

#define RECORD     EMBER_CMD_RECORD
#define REPORT     EMBER_CMD_REPORT
#define DIFF       EMBER_CMD_DIFF
#define TOP        EMBER_CMD_TOP
#define COLLECTOR  EMBER_CMD_COLLECTOR
#define SYMBOLIZER EMBER_CMD_SYMBOLIZER
#define SAMPLING   (RECORD | COLLECTOR)
#define SYMBOLIZES (RECORD | SYMBOLIZER)
#define FILES      (REPORT | DIFF | TOP)

#define FIELD(f) offsetof(struct ember_cli, f)
#define EXPORT   "Shipping profiles (OTLP)"

static const char *const views[] = {"cpu", "off-cpu", "both", NULL};
static const char *const levels[] = {"error", "warning", "info", "debug", NULL};
static const char *const compressions[] = {"gzip", "none", NULL};
static const char *const orders[] = {"self", "total", NULL};
static const char *const symbol_sides[] = {"host", "backend", NULL}; /* enum ember_otlp_symbols */

int ember_usage_error(const struct ember_cli *c, const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", c->name);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '%s --help'.\n", c->name);
	return EMBER_EXIT_USAGE;
}

/* ---- arguments that need more than a range ------------------------------------------- */

static int opt_pid(struct ember_cli *c, const char *arg)
{
	uint64_t v;

	if (ember_parse_u64(arg, 1, EMBER_CORE_MAX_PID, &v))
		return ember_usage_error(c, "bad PID '%s'", arg);
	if (kill((pid_t)v, 0) && errno != EPERM) /* EPERM: it exists */
		return ember_usage_error(c, "no process with PID %s", arg);
	if (c->npids == EMBER_MAX_PIDS)
		return ember_usage_error(c, "too many -p (the limit is %s)", STR(EMBER_MAX_PIDS));
	c->pids[c->npids++] = (int32_t)v;
	c->choices[c->nchoices++] = (struct ember_cli_choice){"pid", arg};
	return 0;
}

/* --cgroup, --unit, --container, --pod: checked and looked up once all are given. */
static int opt_cgroup(struct ember_cli *c, const char *arg)
{
	if (c->ncgroups == EMBER_SELECT_MAX_CGROUPS)
		return ember_usage_error(c, "too many cgroups chosen (the limit is %s)",
		                         STR(EMBER_SELECT_MAX_CGROUPS));
	c->ncgroups++;
	c->choices[c->nchoices++] = (struct ember_cli_choice){c->option, arg};
	return 0;
}

static int opt_output(struct ember_cli *c, const char *arg)
{
	enum ember_format f;

	if (c->noutputs == EMBER_MAX_OUTPUTS)
		return ember_usage_error(c, "too many -o (the limit is %s)",
		                         STR(EMBER_MAX_OUTPUTS));
	if (ember_format_from_path(arg, &f) || strlen(arg) < 2 ||
	    (f == EMBER_FORMAT_OTLP && c->cmd->bit != RECORD))
		return ember_usage_error(
		    c,
		    c->cmd->bit == RECORD ? "cannot tell the format of '%s' from its name: end it "
					    "in .html, .pb.gz, .folded or .otlp"
					  : "cannot tell the format of '%s' from its name: end it "
					    "in .html, .pb.gz or .folded",
		    arg);
	if (c->cmd->bit == DIFF && f != EMBER_FORMAT_HTML)
		return ember_usage_error(c, "a diff is written as HTML: name the output %s.html",
		                         "diff");
	c->outputs[c->noutputs++] = arg;
	return 0;
}

/* Waits shorter than MIN are counted, not recorded. */
static int opt_off_cpu(struct ember_cli *c, const char *arg)
{
	uint64_t ms;

	if (ember_parse_duration_ms(arg ? arg : "1ms", &ms) || ms > 3600 * 1000)
		return ember_usage_error(c, "bad --off-cpu minimum '%s': e.g. --off-cpu=5ms", arg);
	c->off_cpu_min_ns = ms * 1000000;
	return 0;
}

static int opt_interpreters(struct ember_cli *c, const char *arg)
{
	if (ember_interp_parse_list(arg, &c->interpreters))
		return ember_usage_error(c,
		                         "bad --interpreters '%s': give a list of python, ruby, "
		                         "php, perl, jvm and v8, or all or none",
		                         arg);
	c->interpreters_given = true;
	return 0;
}

static int opt_header(struct ember_cli *c, const char *arg)
{
	if (c->notlp_headers == EMBER_OTLP_MAX_HEADERS || !strpbrk(arg, "=:"))
		return ember_usage_error(c,
		                         "bad --otlp-header '%s': give NAME=VALUE (at most "
		                         "32 headers)",
		                         arg);
	c->otlp_headers[c->notlp_headers++] = arg;
	return 0;
}

static int opt_format(struct ember_cli *c, const char *arg)
{
	enum ember_format f;

	if (c->nformats == EMBER_CLI_MAX_FORMATS || ember_format_parse(arg, &f))
		return ember_usage_error(c, "bad --format '%s': give folded, pprof, html or otlp",
		                         arg);
	c->formats[c->nformats++] = f;
	return 0;
}

/* ---- the table -------------------------------------------------------------------------- */

/* clang-format off */
const struct ember_option ember_options[] = {
	{"duration", 'd', "SECONDS", false, RECORD, EMBER_OPT_DURATION, FIELD(duration_ms), 1, UINT32_MAX * 1000ull,
	 .help = "how long to record (also 30s, 5m, 1h); default: until Ctrl-C",
	 .doc = "How long to record (also 30s, 5m, 1h). Default: until Ctrl-C, then the outputs are written complete. With a COMMAND, the duration ends only the recording.",
	 .example = "10"},
	{"frequency", 'F', "HZ", false, SAMPLING, EMBER_OPT_NUMBER, FIELD(sample_hz), 1, EMBER_MAX_HZ,
	 .help = "samples per second per CPU (1-" STR(EMBER_MAX_HZ) "); default 19", .example = "99"},
	{"pid", 'p', "PID", false, SAMPLING, EMBER_OPT_CUSTOM, .parse = opt_pid,
	 .help = "sample only this process (repeatable)", .example = "1"},
	{"cgroup", 0, "PATH", false, SAMPLING, EMBER_OPT_CUSTOM, .parse = opt_cgroup,
	 .help = "sample only that cgroup v2 subtree (repeatable, as the\nnext three): its processes, new ones too, filtered in eBPF",
	 .doc = "Sample only the tasks of that cgroup v2 subtree (repeatable), filtered in eBPF: PATH from the hierarchy's root or under /sys/fs/cgroup. Processes that enter it later are sampled, and a cgroup made again at PATH (a restarted service) too; a PATH that does not exist yet is accepted with a warning.",
	 .example = "/"},
	{"unit", 0, "NAME", false, SAMPLING, EMBER_OPT_CUSTOM, .parse = opt_cgroup,
	 .help = "a systemd unit's (nginx.service), across restarts",
	 .doc = "The cgroup of a systemd unit (nginx or nginx.service), the host's, or else one of a container's own systemd (a machine booted with systemd-nspawn). This and the next two are searched by name in the shallowest directories of the hierarchy (two matches are refused: give --cgroup), by a child of ember that runs as the symbolizer's user, without any capability.",
	 .example = "init.scope"},
	{"container", 0, "ID", false, SAMPLING, EMBER_OPT_CUSTOM, .parse = opt_cgroup,
	 .help = "a container's (docker, podman, containerd, CRI-O):\nits id, or a unique prefix of it",
	 .doc = "The cgroup of a container (docker, podman, containerd, CRI-O): its id or a unique prefix of at least 4 hex digits.",
	 .example = "3f2a9c"},
	{"pod", 0, "UID", false, SAMPLING, EMBER_OPT_CUSTOM, .parse = opt_cgroup,
	 .help = "a Kubernetes pod's (its metadata.uid)",
	 .example = "0d8c5e7e-1c1a-4f2b-9b0e-123456789abc"},
	{"run-as", 0, "USER", false, RECORD, EMBER_OPT_STRING, FIELD(run_as), .max = 255,
	 .help = "run COMMAND as USER; default: the user of sudo",
	 .doc = "Run COMMAND as USER, with USER's groups; default: the user who ran sudo (SUDO_UID), else ember's own.",
	 .example = "nobody"},
	{"off-cpu", 0, "MIN", true, SAMPLING, EMBER_OPT_CUSTOM, .parse = opt_off_cpu,
	 .help = "also record where threads wait (waits of MIN, default 1ms)",
	 .doc = "Also record where threads wait (off-CPU time, waits of at least MIN, default 1ms; needs Linux 6.16 or later).",
	 .example = "5ms"},
	{"view", 0, "VIEW", false, SYMBOLIZES | FILES, EMBER_OPT_CHOICE, FIELD(view), .choices = views,
	 .help = "cpu, off-cpu or both: what .folded holds, what .html\nand tables show first; default cpu",
	 .doc = "cpu, off-cpu or both: what a .folded output holds (CPU samples, or microseconds waited), which view an .html output opens with, and what top and diff count. pprof and OTLP profiles carry both.",
	 .example = "both"},
	{"memory-budget", 0, "BYTES", false, SYMBOLIZES, EMBER_OPT_SIZE, FIELD(memory_budget), 16u << 20, 1ull << 40,
	 .help = "the symbolizer's resident memory (64M, 1G); default 64M",
	 .doc = "The symbolizer's resident memory (64M, 1G, ...; at least 16M; default 64M). A file is read only if what reading it takes fits the room left: one whose DWARF does not fit keeps its symbols alone (counted in objcache.dwarf_deferred_for_budget) and is read again 30 s later; one whose symbols do not fit is tried again 2 s later (objcache.files_deferred_for_budget). Past the budget, freed memory goes back to the system, then the parsed-file cache shrinks and the idlest processes are forgotten; if that is not enough, files not yet read stay unsymbolized (symbolizer.frames_shed) until an eighth of the budget is free again.",
	 .example = "64M"},
	{"cache-bytes", 0, "BYTES", false, SYMBOLIZER, EMBER_OPT_SIZE, FIELD(cache_bytes), 1u << 20, 1ull << 40,
	 .help = "parsed-file cache, measured; default 3/8 of --memory-budget (24M)",
	 .doc = "The parsed-file cache, measured (libelf's and libdw's memory included); default seven eighths of --memory-budget (56M of the default 64M), within the room the resident size leaves: a large file's expanded DWARF kept, its inlined functions named at every address.",
	 .example = "24M"},
	{"output", 'o', "FILE", false, RECORD, EMBER_OPT_CUSTOM, .parse = opt_output,
	 .help = "write FILE; its name sets the format:\n.html flame graph, .pb.gz pprof, .folded folded\nstacks, .otlp OTLP (repeatable); default profile.html",
	 .doc = "Write FILE; its name sets the format: .html an interactive flame graph (one self-contained file), .pb.gz pprof, .folded folded stacks (one line per stack: comm;outermost;...;leaf COUNT), .otlp one OTLP ExportProfilesServiceRequest in binary protobuf. Repeatable. Default: profile.html (none with --otlp).",
	 .example = "profile.html"},
	{"output", 'o', "OUTPUT", false, REPORT | DIFF, EMBER_OPT_CUSTOM, .parse = opt_output,
	 .help = "write OUTPUT; its name sets the format: .html, .pb.gz\nor .folded (diff: .html only; report: repeatable)",
	 .example = "out.html"},
	{"interpreters", 0, "LIST", false, SYMBOLIZES, EMBER_OPT_CUSTOM, .parse = opt_interpreters,
	 .help = "runtimes whose frames are read: a list of python,\nruby, php, perl, jvm and v8, or all (the default) or none",
	 .doc = "Whose interpreted frames are read from the processes' memory: a comma-separated list of runtimes (python, ruby, php, perl, jvm, v8 for Node.js), or all (the default) or none.",
	 .example = "python,ruby"},
	{"signatures", 0, NULL, false, SYMBOLIZES, EMBER_OPT_FLAG, FIELD(signatures),
	 .help = "name Java methods with their parameter types:\nSplit.leafA(long), not Split.leafA",
	 .doc = "Name Java methods with their parameter types, as Java writes them (Split.handle(int, long, long[]) rather than Split.handle): overloads become frames of their own."},
	{"user", 0, "NAME", false, RECORD, EMBER_OPT_STRING, FIELD(user), .max = 255,
	 .help = "user the symbolizer runs as; default nobody", .example = "nobody"},
	{"user", 0, "NAME", false, COLLECTOR, EMBER_OPT_STRING, FIELD(user), .max = 255,
	 .help = "user (and group) the symbolizer runs as; default ember",
	 .doc = "User (and its group) the symbolizer runs as: the collector accepts a symbolizer only of this uid and gid (SO_PEERCRED). Default ember.",
	 .example = "nobody"},
	{"user", 0, "NAME", false, SYMBOLIZER, EMBER_OPT_STRING, FIELD(user), .max = 255,
	 .help = "user to become when started as root",
	 .doc = "User to become when started as root (the symbolizer never runs as root: started as root without --user, it refuses).",
	 .example = "nobody"},
	{"runtime-dir", 0, "DIR", false, COLLECTOR, EMBER_OPT_STRING, FIELD(runtime_dir), .max = 80,
	 .help = "where the socket lives; default " EMBER_RUNTIME_DIR, .example = "/run/ember"},
	{"debug-dir", 0, "DIR", false, SAMPLING, EMBER_OPT_STRING, FIELD(debug_dir), .max = EMBER_CORE_PATH_LEN - 1,
	 .help = "debug files by build id; default /usr/lib/debug", .example = "/usr/lib/debug"},
	{"ring-size", 0, "BYTES", false, SAMPLING, EMBER_OPT_SIZE, FIELD(ring_size), EMBER_RING_MIN_SIZE, EMBER_RING_MAX_SIZE,
	 .help = "sample ring per connection; default: 2 s of samples", .example = "8M"},
	{"log-level", 0, "LEVEL", false, SAMPLING | SYMBOLIZER | EMBER_CMD_CHECK, EMBER_OPT_CHOICE, FIELD(log_level), .choices = levels,
	 .help = "error, warning, info or debug; default info", .example = "debug"},
	{"no-progress", 0, NULL, false, RECORD, EMBER_OPT_FLAG, FIELD(no_progress),
	 .help = "no progress line (there is one only on a terminal)"},
	{"connect", 0, "PATH", false, SYMBOLIZER, EMBER_OPT_STRING, FIELD(connect), .max = 107,
	 .help = "the collector's socket; default " EMBER_RUNTIME_DIR "/" EMBER_SOCKET_NAME,
	 .example = "/run/ember/collector.sock"},
	{"output-dir", 0, "DIR", false, SYMBOLIZER, EMBER_OPT_STRING, FIELD(output_dir),
	 .help = "where the interval files go (writable by the user);\nrequired",
	 .doc = "Where the interval files go, one per format and interval (ember-YYYYMMDDTHHMMSSZ.folded, .pb.gz, .html, .otlp: written under a hidden name, renamed into place when complete); it must be writable by the symbolizer's user. Required.",
	 .example = "/var/lib/ember/profiles"},
	{"format", 0, "FORMAT", false, SYMBOLIZER, EMBER_OPT_CUSTOM, .parse = opt_format,
	 .help = "folded, pprof, html or otlp (repeatable); default\nfolded and pprof", .example = "pprof"},
	{"keep", 0, "N", false, SYMBOLIZER, EMBER_OPT_NUMBER, FIELD(keep), 0, 1000000,
	 .help = "intervals kept per format, 0 for all; default 60", .example = "10"},
	{"stats", 0, NULL, false, REPORT, EMBER_OPT_FLAG, FIELD(stats),
	 .help = "print host, time, samples and every counter of the\nrecording (lost samples, unwinding, symbols, caches)"},
	{"trace", 0, "ID", false, REPORT | TOP, EMBER_OPT_STRING, FIELD(trace), .max = 49,
	 .help = "only the samples of trace ID (32 hex digits), or of\none span of it (ID:SPAN, 16 more)",
	 .doc = "Only the samples linked to trace ID (32 hex digits, as OTLP links and the pprof label trace_id give it), or to one span of it (ID:SPAN, the span's 16 hex digits): a flame graph or table of what that request ran. Samples are linked when the program published OpenTelemetry thread contexts.",
	 .example = "4bf92f3577b34da6a3ce929d0e0e4736"},
	{"rows", 'n', "ROWS", false, TOP, EMBER_OPT_NUMBER, FIELD(top_rows), 1, 1000000,
	 .help = "how many functions; default 20", .example = "30"},
	{"sort", 0, "ORDER", false, TOP, EMBER_OPT_CHOICE, FIELD(top_order), .choices = orders,
	 .help = "self or total; default self", .example = "total"},
	{"otlp", 0, "URL", false, SYMBOLIZES, EMBER_OPT_STRING, FIELD(otlp), .max = 2047, .group = EXPORT,
	 .help = "ship profiles live: http(s):// OTLP/HTTP, grpc(s):// gRPC",
	 .doc = "Ship profiles live: http:// or https:// for OTLP/HTTP (binary protobuf, path /v1development/profiles unless given), grpc:// or grpcs:// for OTLP/gRPC. The OTEL_EXPORTER_OTLP_* variables (and their OTEL_EXPORTER_OTLP_PROFILES_* forms, which win), OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES apply too; options win over them.",
	 .example = "http://127.0.0.1:4318"},
	{"interval", 0, "DURATION", false, RECORD, EMBER_OPT_DURATION, FIELD(interval_ms), 1000, UINT32_MAX * 1000ull, .group = EXPORT,
	 .help = "ship a profile every DURATION; default 10s", .example = "10s"},
	{"interval", 0, "DURATION", false, SYMBOLIZER, EMBER_OPT_DURATION, FIELD(interval_ms), 1000, UINT32_MAX * 1000ull,
	 .help = "reporting interval (30s, 5m, ...) of the files and of\nOTLP; default 60s for files, 10s for OTLP", .example = "30s"},
	{"service-name", 0, "NAME", false, SYMBOLIZES, EMBER_OPT_STRING, FIELD(service_name), .max = 127, .group = EXPORT,
	 .help = "service.name of every resource", .example = "web"},
	{"otlp-header", 0, "NAME=VALUE", false, SYMBOLIZES, EMBER_OPT_CUSTOM, .parse = opt_header, .group = EXPORT,
	 .help = "extra header, e.g. Authorization=Bearer... (repeatable)", .example = "X-Scope-OrgID=a"},
	{"otlp-ca", 0, "FILE", false, SYMBOLIZES, EMBER_OPT_STRING, FIELD(otlp_ca), .max = 1023, .group = EXPORT,
	 .help = "CA certificates (PEM) to verify the endpoint", .example = "/etc/ssl/certs/ca-certificates.crt"},
	{"otlp-cert", 0, "FILE", false, SYMBOLIZES, EMBER_OPT_STRING, FIELD(otlp_cert), .max = 1023, .group = EXPORT,
	 .help = "client certificate (PEM), with --otlp-key", .example = "/etc/ember/client.pem"},
	{"otlp-key", 0, "FILE", false, SYMBOLIZES, EMBER_OPT_STRING, FIELD(otlp_key), .max = 1023, .group = EXPORT,
	 .help = "the client certificate's key (PEM)", .example = "/etc/ember/client.key"},
	{"otlp-timeout", 0, "DURATION", false, SYMBOLIZES, EMBER_OPT_DURATION, FIELD(otlp_timeout_ms), 1, 3600 * 1000, .group = EXPORT,
	 .help = "per attempt; default 10s", .example = "10s"},
	{"otlp-compression", 0, "KIND", false, SYMBOLIZES, EMBER_OPT_CHOICE, FIELD(otlp_compression), .choices = compressions, .group = EXPORT,
	 .help = "gzip or none; default gzip", .example = "none"},
	{"otlp-queue-size", 0, "BYTES", false, SYMBOLIZES, EMBER_OPT_SIZE, FIELD(otlp_queue_bytes), 4096, 1ull << 32, .group = EXPORT,
	 .help = "delivery queue bound; default 8M", .example = "8M"},
	{"otlp-max-request", 0, "BYTES", false, SYMBOLIZES, EMBER_OPT_SIZE, FIELD(otlp_max_request_bytes), 64 << 10, 1ull << 30, .group = EXPORT,
	 .help = "largest request; a larger profile goes as several; default 3840K (a default Collector and Pyroscope take 4M)", .example = "16M"},
	{"otlp-symbols", 0, "WHO", false, SYMBOLIZES, EMBER_OPT_CHOICE, FIELD(otlp_symbols), .choices = symbol_sides, .group = EXPORT,
	 .help = "host (ember names native frames; default) or backend (left to a backend with debuginfod)", .example = "backend"},
	{"otlp-deadline", 0, "DURATION", false, SYMBOLIZES, EMBER_OPT_DURATION, FIELD(otlp_deadline_ms), 0, 3600 * 1000, .group = EXPORT,
	 .help = "how long the end waits for delivery; default 30s", .example = "5s"},
};
/* clang-format on */

const size_t ember_noptions = ARRAY_SIZE(ember_options);

void ember_cli_init(struct ember_cli *c, const struct ember_command *cmd)
{
	memset(c, 0, sizeof(*c));
	c->cmd = cmd;
	c->name = "ember";
	c->sample_hz = 19;
	c->off_cpu_min_ns = EMBER_OFF_CPU_OFF;
	c->log_level = EMBER_LOG_INFO;
	c->keep = 60;
	c->top_rows = 20;
	c->otlp_compression = UINT32_MAX; /* as the environment says */
	c->otlp_deadline_ms = EMBER_OTLP_DEFAULT_DEADLINE_MS;
}

/* ---- parsing ------------------------------------------------------------------------------ */

/* "1, 2 or 3" of a choice's names. */
static void list_choices(const char *const *choices, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; choices[i] && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s",
		                      i == 0            ? ""
		                      : !choices[i + 1] ? " or "
		                                        : ", ",
		                      choices[i]);
}

static int bad_value(struct ember_cli *c, const struct ember_option *op, const char *arg,
                     const char *want)
{
	fprintf(stderr, "%s: bad --%s '%s': give %s\nTry '%s --help'.\n", c->name, op->name, arg,
	        want, c->name);
	return EMBER_EXIT_USAGE;
}

/* Reads op's argument into its field. Returns 0 or an exit code after saying what is wrong. */
static int take(const struct ember_option *op, struct ember_cli *c, const char *arg)
{
	void *field = (char *)c + op->field;
	char want[128];
	uint64_t v;

	switch (op->kind) {
	case EMBER_OPT_FLAG:
		*(bool *)field = true;
		return 0;
	case EMBER_OPT_STRING:
		if (op->max && strlen(arg) > op->max)
			return bad_value(c, op, arg, "a shorter one");
		*(const char **)field = arg;
		return 0;
	case EMBER_OPT_NUMBER:
	case EMBER_OPT_DURATION:
	case EMBER_OPT_SIZE:
		if (op->kind == EMBER_OPT_NUMBER ? ember_parse_u64(arg, 0, UINT64_MAX, &v)
		    : op->kind == EMBER_OPT_SIZE ? ember_parse_size(arg, &v)
		                                 : ember_parse_duration_ms(arg, &v))
			v = op->min -
			    1; /* out of range (from 0 it wraps to the top): refused below */
		if (v >= op->min && v <= op->max) {
			*(uint64_t *)field = v;
			return 0;
		}
		if (op->kind == EMBER_OPT_NUMBER)
			snprintf(want, sizeof(want), "%llu to %llu", (unsigned long long)op->min,
			         (unsigned long long)op->max);
		else
			snprintf(want, sizeof(want), "%s, e.g. %s",
			         op->kind == EMBER_OPT_SIZE ? "a size (1048576, 512k, 8M, 1G)"
			                                    : "a duration (30s, 5m, 1h, 250ms)",
			         op->example);
		return bad_value(c, op, arg, want);
	case EMBER_OPT_CHOICE:
		for (unsigned int i = 0; op->choices[i]; i++)
			if (!strcmp(arg, op->choices[i])) {
				*(unsigned int *)field = i;
				return 0;
			}
		list_choices(op->choices, want, sizeof(want));
		return bad_value(c, op, arg, want);
	case EMBER_OPT_CUSTOM:
		return op->parse(c, arg);
	}
	return EMBER_EXIT_USAGE;
}

/* The entry of option number id (an index into the table, or a short name) for cmd. */
static const struct ember_option *entry_for(int id, unsigned int cmd, const char **other)
{
	const char *name = id >= 256 ? ember_options[id - 256].name : NULL;

	*other = NULL;
	for (size_t i = 0; i < ember_noptions; i++) {
		const struct ember_option *op = &ember_options[i];

		if (name ? strcmp(op->name, name) : op->short_name != id)
			continue;
		if (op->commands & cmd)
			return op;
		for (size_t k = 0; k < ember_ncommands && !*other; k++)
			if (op->commands & ember_commands[k].bit)
				*other = ember_commands[k].name;
	}
	return NULL;
}

/* getopt_long's tables, from every option of every command (a misplaced option is then
 * named as another command's, not as unknown). */
static void getopt_tables(bool stop, struct option *longopts, char *shortopts)
{
	size_t n = 0, ns = 0;

	shortopts[ns++] = stop ? '+' : ':';
	if (stop)
		shortopts[ns++] = ':';
	shortopts[ns++] = 'h';
	for (size_t i = 0; i < ember_noptions; i++) {
		const struct ember_option *op = &ember_options[i];
		bool seen = false;

		for (size_t j = 0; j < i; j++)
			seen |= !strcmp(ember_options[j].name, op->name);
		if (seen)
			continue;
		longopts[n++] = (struct option){op->name,
		                                !op->arg           ? no_argument
		                                : op->optional_arg ? optional_argument
		                                                   : required_argument,
		                                NULL, 256 + (int)i};
		if (op->short_name) {
			shortopts[ns++] = op->short_name;
			if (op->arg)
				shortopts[ns++] = ':';
		}
	}
	longopts[n++] = (struct option){"help", no_argument, NULL, 'h'};
	longopts[n] = (struct option){NULL, 0, NULL, 0};
	shortopts[ns] = '\0';
}

/* A usage error about argv[optind - 1]: unknown, or without its argument. */
static int bad_option(struct ember_cli *c, int opt, const char *word)
{
	if (opt == ':')
		fprintf(stderr, "%s: %s needs an argument\n", c->name, word);
	else
		fprintf(stderr, "%s: unknown option %s\n", c->name, word);
	fprintf(stderr, "Try '%s --help'.\n", c->name);
	return EMBER_EXIT_USAGE;
}

int ember_options_parse(const struct ember_command *cmd, struct ember_cli *c, int argc, char **argv)
{
	struct option longopts[ARRAY_SIZE(ember_options) + 2];
	char shortopts[2 * ARRAY_SIZE(ember_options) + 8];
	int opt, err;

	getopt_tables(cmd->stop_at_argument, longopts, shortopts);
	optind = 0; /* 0, not 1: glibc then reads the ordering ('+') of this optstring again */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const struct ember_option *op;
		const char *other;

		if (opt == 'h') {
			ember_options_usage(cmd, stdout);
			return EMBER_EXIT_OK;
		}
		if (opt == '?' || opt == ':')
			return bad_option(c, opt, argv[optind - 1]);
		op = entry_for(opt, cmd->bit, &other);
		if (!op && other) {
			fprintf(stderr,
			        "%s: %s is an option of `ember %s`, not of this command\n"
			        "Try '%s --help'.\n",
			        c->name, argv[optind - 1 - (optarg && optarg == argv[optind - 1])],
			        other, c->name);
			return EMBER_EXIT_USAGE;
		}
		if (!op)
			return bad_option(c, '?', argv[optind - 1]);
		c->option = op->name;
		if ((err = take(op, c, optarg)))
			return err;
	}
	c->args = argv + optind;
	c->nargs = argc - optind;
	if (cmd->positional_max >= 0 && c->nargs > cmd->positional_max)
		return ember_usage_error(c, "unexpected argument '%s'",
		                         c->args[cmd->positional_max]);
	return -1;
}

/* ---- --help and the man pages ----------------------------------------------------------- */

#define HELP_COLUMN 34

static bool takes(const struct ember_option *op, unsigned int cmd)
{
	return (op->commands & cmd) != 0;
}

/* The option groups a command has, in table order: NULL (the plain options) first. */
static size_t groups_of(unsigned int cmd, const char **out, size_t max)
{
	size_t n = 1;

	out[0] = NULL;
	for (size_t i = 0; i < ember_noptions; i++) {
		bool seen = false;

		if (!takes(&ember_options[i], cmd) || !ember_options[i].group)
			continue;
		for (size_t g = 1; g < n; g++)
			seen |= !strcmp(out[g], ember_options[i].group);
		if (!seen && n < max)
			out[n++] = ember_options[i].group;
	}
	return n;
}

static bool in_group(const struct ember_option *op, const char *group)
{
	return group ? op->group && !strcmp(op->group, group) : !op->group;
}

static void usage_option(const struct ember_option *op, FILE *f)
{
	char flag[8] = "", name[96];
	int col;

	if (op->short_name)
		snprintf(flag, sizeof(flag), "-%c,", op->short_name);
	snprintf(name, sizeof(name),
	         !op->arg           ? "--%s"
	         : op->optional_arg ? "--%s[=%s]"
	                            : "--%s %s",
	         op->name, op->arg);
	col = fprintf(f, "  %-4s%s", flag, name);
	fprintf(f, "%*s", col < HELP_COLUMN ? HELP_COLUMN - col : 1, "");
	for (const char *h = op->help; *h; h++)
		if (*h == '\n')
			fprintf(f, "\n%*s", HELP_COLUMN, "");
		else
			fputc(*h, f);
	fputc('\n', f);
}

void ember_options_usage(const struct ember_command *cmd, FILE *f)
{
	const char *groups[8];
	size_t ngroups = groups_of(cmd->bit, groups, ARRAY_SIZE(groups));

	fprintf(f, "usage: ");
	for (const char *s = cmd->synopsis; *s; s++)
		fprintf(f, *s == '\n' ? "\n       " : "%c", *s);
	fprintf(f, "\n\n%s\n", cmd->description);
	for (size_t g = 0; g < ngroups; g++) {
		fprintf(f, "\n%s%s", groups[g] ? groups[g] : "", groups[g] ? ":\n" : "");
		for (size_t i = 0; i < ember_noptions; i++)
			if (takes(&ember_options[i], cmd->bit) &&
			    in_group(&ember_options[i], groups[g]))
				usage_option(&ember_options[i], f);
		if (!g)
			fprintf(f, "  -h, --help%*sthis text\n", HELP_COLUMN - 12, "");
	}
}

/* Text in roff: a minus sign is \-, a backslash \e, and no line may start a request. */
static void man_text(const char *s, FILE *f)
{
	bool line_start = true;

	for (; *s; s++) {
		if (line_start && (*s == '.' || *s == '\''))
			fputs("\\&", f);
		if (*s == '-')
			fputs("\\-", f);
		else if (*s == '\\')
			fputs("\\e", f);
		else
			fputc(*s == '\n' ? ' ' : *s, f);
		line_start = false;
	}
}

static void man_option(const struct ember_option *op, FILE *f)
{
	fputs(".TP\n", f);
	fputs(op->arg ? ".BI \"" : ".B \"", f);
	if (op->short_name)
		fprintf(f, "\\-%c, ", op->short_name);
	fputs("\\-\\-", f);
	man_text(op->name, f);
	if (op->arg)
		fprintf(f, "%s\" \"%s\"%s", op->optional_arg ? "[=" : " ", op->arg,
		        op->optional_arg ? " ]" : "");
	else
		fputc('"', f);
	fputc('\n', f);
	if (op->doc) {
		man_text(op->doc, f);
	} else { /* --help's words as a sentence */
		fputc(toupper((unsigned char)op->help[0]), f);
		man_text(op->help + 1, f);
		fputc('.', f);
	}
	fputc('\n', f);
}

void ember_options_man(unsigned int command, FILE *f)
{
	const char *groups[8];
	size_t ngroups = groups_of(command, groups, ARRAY_SIZE(groups));

	for (size_t g = 0; g < ngroups; g++) {
		if (groups[g])
			fprintf(f, ".SS %s\n", groups[g]);
		for (size_t i = 0; i < ember_noptions; i++)
			if (takes(&ember_options[i], command) &&
			    in_group(&ember_options[i], groups[g]))
				man_option(&ember_options[i], f);
	}
}
