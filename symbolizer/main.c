// SPDX-License-Identifier: Apache-2.0
/*
 * ember-symbolizer: the unprivileged half of ember. Started by `ember record`
 * (--socket-fd) or as a daemon (--output-dir), it becomes its own user,
 * connects, and enters its sandbox before it reads any record; from then on
 * it works only with descriptors the collector hands it.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symbolizer/file_commands.h"
#include "symbolizer/host_check.h"
#include "symbolizer/interp/interp.h"
#include "symbolizer/process/cgroup_find.h"
#include "seccomp/caps.h"
#include "symbolizer/daemon.h"
#include "symbolizer/export/export_queue.h"
#include "symbolizer/export/export_config.h"
#include "ipc/endpoint.h"
#include "symbolizer/formats/profile_writer.h"
#include "symbolizer/memory/mem_budget.h"
#include "symbolizer/sandbox.h"
#include "symbolizer/symbols/sigbus_guard.h"
#include "symbolizer/session.h"
#include "shared/err.h"
#include "shared/log.h"
#include "shared/str.h"

#define DEFAULT_INTERVAL_MS (60 * 1000)
#define DEFAULT_KEEP        60

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: ember-symbolizer --output-dir DIR [OPTIONS]     (daemon)\n"
	    "       ember-symbolizer --socket-fd=N --uid UID --gid GID [--output-fd "
	    "N:FORMAT:PATH]...\n"
	    "         [--progress=SECONDS]                           (started by `ember record`)\n"
	    "       ember-symbolizer report|diff|top|check ARGS...    (`ember report`, ...)\n"
	    "       (named ember: every command of ember but record, which ember execs it with)\n"
	    "       ember-symbolizer find-cgroup unit|container|pod NAME [UID GID]  (--unit, ...)\n"
	    "\n"
	    "As a daemon it connects to ember-collector, waiting for it with back-off, and\n"
	    "writes one file per format and interval into DIR (renamed into place when\n"
	    "complete). SIGHUP starts a new interval; SIGTERM writes the current one and exits.\n"
	    "\n"
	    "  --connect PATH        the collector's socket; default %s/%s\n"
	    "  --output-dir DIR      where the interval files go (must be writable by the user)\n"
	    "  --format FORMAT       folded, pprof, html or otlp (repeatable); default folded and "
	    "pprof\n"
	    "  --interval DURATION   reporting interval (30s, 5m, ...) of the files and of OTLP;\n"
	    "                        default 60s for files, 10s for OTLP\n"
	    "  --keep N              intervals kept per format, 0 for all; default %d\n"
	    "  --view VIEW           cpu, off-cpu or both (with ember-collector --off-cpu): what\n"
	    "                        folded files hold and HTML files show first; default cpu\n"
	    "  --user NAME           user to become when started as root\n"
	    "  --log-level LEVEL     error, warning, info or debug; default info\n"
	    "  --interpreters LIST   interpreters whose frames are read: python (default) or none\n"
	    "  --memory-budget BYTES resident memory to stay within (64M, 1G, ...; at least\n"
	    "                        16M): a file is read only if it fits (else its symbols\n"
	    "                        alone, or later; counted), caches shrink first, then\n"
	    "                        files not yet read stay unsymbolized (counted); default 64M\n"
	    "  --cache-bytes BYTES   parsed-file cache, measured; default 24M\n"
	    "\n"
	    "Shipping profiles (both modes; also OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME,\n"
	    "OTEL_RESOURCE_ATTRIBUTES; options win):\n"
	    "  --otlp URL                 http://, https:// (OTLP/HTTP), grpc://, grpcs:// (gRPC)\n"
	    "  --service-name NAME        service.name of every resource\n"
	    "  --otlp-header NAME=VALUE   extra header, e.g. Authorization=Bearer... (repeatable)\n"
	    "  --otlp-ca FILE             CA certificates (PEM) to verify the endpoint\n"
	    "  --otlp-cert FILE           client certificate (PEM), with --otlp-key FILE\n"
	    "  --otlp-timeout DURATION    per attempt (default 10s)\n"
	    "  --otlp-compression gzip|none\n"
	    "  --otlp-queue-size BYTES    delivery queue bound (default 8M)\n"
	    "  --otlp-deadline DURATION   how long the end waits for delivery (default 30s)\n",
	    EMBER_RUNTIME_DIR, EMBER_SOCKET_NAME, DEFAULT_KEEP);
}

static void usage_ember(FILE *f)
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

/*
 * `ember COMMAND`: ember runs record itself (the collector role) and execs this program,
 * named ember, with every other command, which needs nothing of the collector.
 */
static int ember_front_end(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	ember_log_init("ember", EMBER_LOG_INFO);
	if (cmd && ember_command_known(cmd))
		return ember_command_run(argc - 1, argv + 1);
	if (cmd && !strcmp(cmd, "check"))
		return ember_check_command(argc - 1, argv + 1);
	if (cmd && (!strcmp(cmd, "version") || !strcmp(cmd, "--version"))) {
		printf("ember %s\n", EMBER_VERSION);
		return EMBER_EXIT_OK;
	}
	if (cmd && (!strcmp(cmd, "help") || !strcmp(cmd, "-h") || !strcmp(cmd, "--help"))) {
		usage_ember(stdout);
		return EMBER_EXIT_OK;
	}
	if (cmd)
		fprintf(stderr, "ember: unknown command '%s'\n", cmd);
	usage_ember(stderr);
	return EMBER_EXIT_USAGE;
}

/* What the command line says about export; applied over the environment. */
struct export_args {
	const char *url, *ca, *cert, *key, *compression, *service;
	const char *headers[EMBER_OTLP_MAX_HEADERS];
	size_t nheaders;
	uint64_t timeout_ms, queue_bytes, deadline_ms, interval_ms; /* 0: not given */
};

static const char *env(const char *name)
{
	return getenv(name);
}

/*
 * Builds the export configuration and fetches what the sandbox will forbid
 * later (TLS files, the endpoint's addresses). Returns 0, or an exit code.
 */
static int setup_export(const struct export_args *a, struct ember_export_config *cfg)
{
	char err[512] = "";
	int e;

	ember_export_config_init(cfg);
	e = ember_export_config_from(cfg, a->url, env, err, sizeof(err));
	for (size_t i = 0; !e && i < a->nheaders; i++)
		if (ember_export_config_add_header(cfg, a->headers[i])) {
			snprintf(err, sizeof(err),
			         "bad --otlp-header '%s': give NAME=VALUE (at most %d headers)",
			         a->headers[i], EMBER_OTLP_MAX_HEADERS);
			e = -EINVAL;
		}
	if (e) {
		log_error("%s", err);
		ember_export_config_free(cfg);
		return EMBER_EXIT_USAGE;
	}
	if (a->ca)
		ember_strlcpy(cfg->ca_file, a->ca, sizeof(cfg->ca_file));
	if (a->cert)
		ember_strlcpy(cfg->cert_file, a->cert, sizeof(cfg->cert_file));
	if (a->key)
		ember_strlcpy(cfg->key_file, a->key, sizeof(cfg->key_file));
	if (a->compression)
		cfg->gzip = !strcmp(a->compression, "gzip");
	if (a->timeout_ms)
		cfg->timeout_ms = a->timeout_ms;
	if (a->queue_bytes)
		cfg->queue_bytes = a->queue_bytes;
	/* What libcurl, OpenSSL and libc would otherwise read lazily, after the
	 * sandbox closed: the time zone (certificate checks) and, through
	 * curl_global_init, OpenSSL's configuration. */
	tzset();
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_error("cannot initialize libcurl");
		ember_export_config_free(cfg);
		return EMBER_EXIT_FAILURE;
	}
	e = ember_export_config_prepare(cfg, err, sizeof(err));
	if (e) {
		log_error("%s", err);
		ember_export_config_free(cfg);
		return EMBER_EXIT_FAILURE;
	}
	return 0;
}

static int parse_output(const char *arg, struct ember_output *o)
{
	char fmt[32];
	const char *c1 = strchr(arg, ':'), *c2;
	uint64_t fd;
	char num[16];

	if (!c1 || (size_t)(c1 - arg) >= sizeof(num))
		return -EINVAL;
	c2 = strchr(c1 + 1, ':');
	if (!c2 || (size_t)(c2 - c1 - 1) >= sizeof(fmt))
		return -EINVAL;
	memcpy(num, arg, (size_t)(c1 - arg));
	num[c1 - arg] = '\0';
	memcpy(fmt, c1 + 1, (size_t)(c2 - c1 - 1));
	fmt[c2 - c1 - 1] = '\0';
	if (ember_parse_u64(num, 3, 1023, &fd) || ember_format_parse(fmt, &o->format))
		return -EINVAL;
	if (fcntl((int)fd, F_GETFD) < 0)
		return -EBADF;
	o->fd = (int)fd;
	ember_strlcpy(o->path, c2 + 1, sizeof(o->path));
	return 0;
}

/* `ember record`'s child: the sandbox closes after the handshake. */
static int enter_record_sandbox(void *ctx)
{
	int err = ember_sandbox_enter(ctx);

	if (!err)
		ember_sandbox_test_violation();
	return err;
}

static int run_daemon(struct ember_daemon_opts *d, const char *output_dir, const char *user)
{
	int err;

	if (user) {
		struct passwd *pw = getpwnam(user);

		if (!pw) {
			log_error("no user '%s' for --user", user);
			return EMBER_EXIT_USAGE;
		}
		d->sandbox.uid = pw->pw_uid;
		d->sandbox.gid = pw->pw_gid;
		d->sandbox.change_user = true;
	} else if (geteuid() == 0) {
		log_error("started as root: give --user NAME (the user the collector expects)");
		return EMBER_EXIT_USAGE;
	}
	d->rotation.dir_fd = open(output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->rotation.dir_fd < 0) {
		log_error_errno(errno,
		                "cannot open the output directory %s: %m; create it for this user",
		                output_dir);
		return EMBER_EXIT_FAILURE;
	}
	d->sandbox.output_dir_fd = d->rotation.dir_fd;
	if (!d->rotation.nformats) {
		d->rotation.formats[d->rotation.nformats++] = EMBER_FORMAT_FOLDED;
		d->rotation.formats[d->rotation.nformats++] = EMBER_FORMAT_PPROF;
	}
	err = ember_daemon_run(d);
	close(d->rotation.dir_fd);
	return err;
}

/* `ember record`'s child: becomes its user at once, the rest of the sandbox after the handshake. */
static int run_record(struct ember_session_opts *so, struct ember_sandbox_opts *sb)
{
	if (ember_sandbox_drop_privileges(sb))
		return EMBER_EXIT_FAILURE;
	so->enter_sandbox = enter_record_sandbox;
	so->sandbox_ctx = sb;
	return ember_session_run(so) ? EMBER_EXIT_FAILURE : EMBER_EXIT_OK;
}

/* Sets up the export configuration and the exporter (its thread starts in the sandbox).
 * Returns 0 or an exit code. */
static int start_export(const struct export_args *a, struct ember_export_config *cfg,
                        struct ember_session_export *ex)
{
	int err = setup_export(a, cfg);

	if (err)
		return err;
	err = ember_exporter_create(cfg, &ex->exporter);
	if (err) {
		log_error_errno(
		    err, "cannot start the OTLP export to %s: %m%s", cfg->display,
		    err == -EPROTONOSUPPORT ? " (this libcurl lacks HTTP/2 or TLS support)" : "");
		ember_export_config_free(cfg);
		return EMBER_EXIT_FAILURE;
	}
	ex->interval_ns =
	    (a->interval_ms ? a->interval_ms : EMBER_OTLP_DEFAULT_INTERVAL_MS) * 1000000ull;
	ex->delivery_deadline_ns =
	    (a->deadline_ms ? a->deadline_ms : EMBER_OTLP_DEFAULT_DEADLINE_MS) * 1000000ull;
	log_debug("OTLP: shipping to %s every %.1f s", ember_exporter_endpoint(ex->exporter),
	          (double)ex->interval_ns / 1e9);
	return 0;
}

enum {
	OPT_SOCKET_FD = 256,
	OPT_UID,
	OPT_GID,
	OPT_OUTPUT_FD,
	OPT_LOG_LEVEL,
	OPT_CACHE,
	OPT_MEMORY_BUDGET,
	OPT_CONNECT,
	OPT_OUTPUT_DIR,
	OPT_FORMAT,
	OPT_INTERVAL,
	OPT_KEEP,
	OPT_USER,
	OPT_OTLP,
	OPT_OTLP_HEADER,
	OPT_OTLP_CA,
	OPT_OTLP_CERT,
	OPT_OTLP_KEY,
	OPT_OTLP_TIMEOUT,
	OPT_OTLP_COMPRESSION,
	OPT_OTLP_QUEUE,
	OPT_OTLP_DEADLINE,
	OPT_SERVICE,
	OPT_VIEW,
	OPT_INTERPRETERS,
	OPT_PROGRESS,
};

static int parse_export_option(int c, const char *arg, struct export_args *a)
{
	switch (c) {
	case OPT_OTLP:
		a->url = arg;
		return 0;
	case OPT_OTLP_HEADER:
		if (a->nheaders == EMBER_OTLP_MAX_HEADERS || !strpbrk(arg, "=:"))
			return -EINVAL;
		a->headers[a->nheaders++] = arg;
		return 0;
	case OPT_OTLP_CA:
		a->ca = arg;
		return 0;
	case OPT_OTLP_CERT:
		a->cert = arg;
		return 0;
	case OPT_OTLP_KEY:
		a->key = arg;
		return 0;
	case OPT_OTLP_TIMEOUT:
		return ember_parse_duration_ms(arg, &a->timeout_ms) || !a->timeout_ms ? -EINVAL : 0;
	case OPT_OTLP_COMPRESSION:
		a->compression = arg;
		return strcmp(arg, "gzip") && strcmp(arg, "none") ? -EINVAL : 0;
	case OPT_OTLP_QUEUE:
		return ember_parse_size(arg, &a->queue_bytes) || a->queue_bytes < 4096 ? -EINVAL
		                                                                       : 0;
	case OPT_OTLP_DEADLINE:
		return ember_parse_duration_ms(arg, &a->deadline_ms);
	case OPT_SERVICE:
		a->service = arg;
		return strlen(arg) >= 128 ? -EINVAL : 0;
	default:
		return -ENOENT;
	}
}

static const struct option longopts[] = {
    {"socket-fd", required_argument, NULL, OPT_SOCKET_FD},
    {"uid", required_argument, NULL, OPT_UID},
    {"gid", required_argument, NULL, OPT_GID},
    {"output-fd", required_argument, NULL, OPT_OUTPUT_FD},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"cache-bytes", required_argument, NULL, OPT_CACHE},
    {"memory-budget", required_argument, NULL, OPT_MEMORY_BUDGET},
    {"connect", required_argument, NULL, OPT_CONNECT},
    {"output-dir", required_argument, NULL, OPT_OUTPUT_DIR},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"keep", required_argument, NULL, OPT_KEEP},
    {"user", required_argument, NULL, OPT_USER},
    {"otlp", required_argument, NULL, OPT_OTLP},
    {"otlp-header", required_argument, NULL, OPT_OTLP_HEADER},
    {"otlp-ca", required_argument, NULL, OPT_OTLP_CA},
    {"otlp-cert", required_argument, NULL, OPT_OTLP_CERT},
    {"otlp-key", required_argument, NULL, OPT_OTLP_KEY},
    {"otlp-timeout", required_argument, NULL, OPT_OTLP_TIMEOUT},
    {"otlp-compression", required_argument, NULL, OPT_OTLP_COMPRESSION},
    {"otlp-queue-size", required_argument, NULL, OPT_OTLP_QUEUE},
    {"otlp-deadline", required_argument, NULL, OPT_OTLP_DEADLINE},
    {"service-name", required_argument, NULL, OPT_SERVICE},
    {"view", required_argument, NULL, OPT_VIEW},
    {"interpreters", required_argument, NULL, OPT_INTERPRETERS},
    {"progress", required_argument, NULL, OPT_PROGRESS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* What the command line builds: the options of both modes. */
struct cli {
	struct ember_session_opts so; /* `ember record`'s child (--socket-fd) */
	struct ember_daemon_opts d;   /* the daemon (--output-dir) */
	struct ember_sandbox_opts sb; /* `ember record`'s child's sandbox */
	struct export_args xa;
	const char *output_dir, *user;
	bool have_uid, have_gid;
};

/* Takes one option. Returns 0, -EINVAL (a bad argument) or -ENOENT (no such option). */
static int parse_option(struct cli *c, int opt, const char *arg)
{
	enum ember_log_level level;
	uint64_t v;

	switch (opt) {
	case OPT_SOCKET_FD:
		if (ember_parse_u64(arg, 0, 1023, &v))
			return -EINVAL;
		c->so.sock = (int)v;
		return 0;
	case OPT_UID:
		if (ember_parse_u64(arg, 1, UINT32_MAX - 1, &v))
			return -EINVAL;
		c->sb.uid = (uid_t)v;
		c->have_uid = true;
		return 0;
	case OPT_GID:
		if (ember_parse_u64(arg, 0, UINT32_MAX - 1, &v))
			return -EINVAL;
		c->sb.gid = (gid_t)v;
		c->have_gid = true;
		return 0;
	case OPT_OUTPUT_FD:
		if (c->so.noutputs == EMBER_MAX_OUTPUTS ||
		    parse_output(arg, &c->so.outputs[c->so.noutputs]))
			return -EINVAL;
		c->so.noutputs++;
		return 0;
	case OPT_LOG_LEVEL:
		if (ember_log_level_parse(arg, &level))
			return -EINVAL;
		ember_log_set_level(level);
		return 0;
	case OPT_CACHE:
		if (ember_parse_size(arg, &v) || v < (1u << 20) || v > (1ull << 40))
			return -EINVAL;
		c->so.objcache_bytes = c->d.objcache_bytes = v;
		return 0;
	case OPT_MEMORY_BUDGET:
		if (ember_parse_size(arg, &v) || v < (16u << 20) || v > (1ull << 40))
			return -EINVAL;
		c->so.memory_budget = c->d.memory_budget = v;
		return 0;
	case OPT_CONNECT:
		c->d.socket_path = arg;
		return 0;
	case OPT_OUTPUT_DIR:
		c->output_dir = arg;
		return 0;
	case OPT_FORMAT:
		if (c->d.rotation.nformats == EMBER_FORMAT_MAX ||
		    ember_format_parse(arg, &c->d.rotation.formats[c->d.rotation.nformats]))
			return -EINVAL;
		c->d.rotation.nformats++;
		return 0;
	case OPT_INTERVAL:
		if (ember_parse_duration_ms(arg, &v) || v < 1000)
			return -EINVAL;
		c->d.interval_ms = c->xa.interval_ms = v;
		return 0;
	case OPT_KEEP:
		if (ember_parse_u64(arg, 0, 1000000, &v))
			return -EINVAL;
		c->d.rotation.keep = (unsigned int)v;
		return 0;
	case OPT_USER:
		c->user = arg;
		return 0;
	case OPT_VIEW:
		if (ember_view_parse(arg, &c->so.view))
			return -EINVAL;
		c->d.view = c->so.view;
		return 0;
	case OPT_INTERPRETERS:
		if (ember_interp_parse_list(arg, &c->so.interpreters))
			return -EINVAL;
		c->d.interpreters = c->so.interpreters;
		return 0;
	case OPT_PROGRESS: /* `ember record` on a terminal: the status line, of SECONDS (0: none) */
		if (ember_parse_u64(arg, 0, UINT32_MAX, &c->so.progress_s))
			return -EINVAL;
		c->so.progress = true;
		return 0;
	default:
		return parse_export_option(opt, arg, &c->xa);
	}
}

/* Parses argv into c. Returns -1 to go on, or an exit code (help, a usage error). */
static int parse_args(struct cli *c, int argc, char **argv)
{
	int opt, idx = 0, err;

	while ((opt = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return EMBER_EXIT_OK;
		}
		err = parse_option(c, opt, optarg);
		if (err == -EINVAL)
			fprintf(stderr, "ember-symbolizer: bad --%s '%s'\n", longopts[idx].name,
			        optarg);
		if (err) {
			usage(stderr);
			return EMBER_EXIT_USAGE;
		}
	}
	if (optind != argc || (c->so.sock >= 0 && (!c->have_uid || !c->have_gid))) {
		usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	if (c->so.sock < 0 && !c->output_dir) {
		fprintf(stderr,
		        "ember-symbolizer: give --output-dir (daemon) or run `ember record`\n");
		usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	return -1;
}

/* Export set up (before the sandbox), then either mode. Returns an exit code. */
static int run(struct cli *c)
{
	struct ember_session_export *ex = &c->so.export;
	struct ember_export_config cfg;
	int err;

	if (ember_resource_config_from(env, ex->service_name, sizeof(ex->service_name),
	                               ex->resource_attrs, sizeof(ex->resource_attrs))) {
		log_error("OTEL_RESOURCE_ATTRIBUTES is not a list of key=value (at most 1 KiB)");
		return EMBER_EXIT_USAGE;
	}
	if (c->xa.service)
		ember_strlcpy(ex->service_name, c->xa.service, sizeof(ex->service_name));
	/* The TLS files are read (perhaps as root) and the endpoint resolved before
	 * the user changes and the sandbox closes. */
	if (c->xa.url && (err = start_export(&c->xa, &cfg, ex)))
		return err;
	/* Export: TCP to the endpoint's port only, and the export thread starts inside. */
	c->sb.network = c->d.sandbox.network = ex->exporter != NULL;
	c->sb.tcp_port = c->d.sandbox.tcp_port = ex->exporter ? cfg.port : 0;
	c->sb.threads_later = c->d.sandbox.threads_later = ex->exporter != NULL;
	c->d.export = *ex;
	err =
	    c->so.sock < 0 ? run_daemon(&c->d, c->output_dir, c->user) : run_record(&c->so, &c->sb);
	ember_exporter_destroy(ex->exporter);
	if (c->xa.url)
		curl_global_cleanup();
	return err;
}

int main(int argc, char **argv)
{
	static struct cli c = {
	    .so = {.sock = -1, .signal_fd = -1, .interpreters = EMBER_RUNTIMES_ALL},
	    .d =
		{
		    .socket_path = EMBER_RUNTIME_DIR "/" EMBER_SOCKET_NAME,
		    .interval_ms = DEFAULT_INTERVAL_MS,
		    .rotation = {.keep = DEFAULT_KEEP},
		    .interpreters = EMBER_RUNTIMES_ALL,
		},
	    .sb = {.change_user = true, .die_with_parent = true},
	};
	int code;

	ember_log_init("ember-symbolizer", EMBER_LOG_INFO);
	/* Before the sandbox, which forbids rt_sigaction: a file that shrinks while
	 * libelf has it mapped must not kill the symbolizer. */
	if (ember_sigbus_guard_install())
		return log_error_errno(-errno, "cannot install the SIGBUS handler: %m"), 1;
	if (argc > 1 && !strcmp(argv[1], "find-cgroup")) {
		/* Run by the collector as root: it reads the tree as UID:GID where it can switch
		 * (a unit or container without CAP_SETUID cannot), and without any capability. */
		uint64_t uid, gid;

		ember_log_init("ember", EMBER_LOG_INFO);
		if (argc == 6 && !ember_parse_u64(argv[4], 1, UINT32_MAX - 1, &uid) &&
		    !ember_parse_u64(argv[5], 1, UINT32_MAX - 1, &gid) && !getuid())
			(void)(setgroups(0, NULL) ||
			       setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) ||
			       setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid));
		ember_caps_limit(0);
		return ember_cgroup_find_command(argc == 6 ? 3 : argc - 1, argv + 1);
	}
	if (!strcmp(argv[0], "ember") ||
	    (argc > 1 && (ember_command_known(argv[1]) || !strcmp(argv[1], "check"))))
		return ember_front_end(argc, argv);
	ember_mem_tune();
	if ((code = parse_args(&c, argc, argv)) >= 0)
		return code;
	return run(&c);
}
