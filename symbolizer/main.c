// SPDX-License-Identifier: Apache-2.0
/*
 * ember-symbolizer: the unprivileged half of ember. Started by `ember record`
 * (--socket-fd) or as a daemon (--output-dir), it becomes its own user,
 * connects, and enters its sandbox before it reads any record; from then on
 * it works only with descriptors the collector hands it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "daemon.h"
#include "ipc/endpoint.h"
#include "output.h"
#include "sandbox.h"
#include "session.h"
#include "shared/err.h"
#include "shared/log.h"
#include "shared/str.h"

#define DEFAULT_INTERVAL_MS (60 * 1000)
#define DEFAULT_KEEP	    60

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ember-symbolizer --output-dir DIR [OPTIONS]     (daemon)\n"
		"       ember-symbolizer --socket-fd=N --uid UID --gid GID [--output-fd N:FORMAT:PATH]...\n"
		"                                                        (started by `ember record`)\n"
		"       ember-symbolizer report|diff|top ARGS...          (`ember report`, ...)\n"
		"\n"
		"As a daemon it connects to ember-collector, waiting for it with back-off, and\n"
		"writes one file per format and interval into DIR (renamed into place when\n"
		"complete). SIGHUP starts a new interval; SIGTERM writes the current one and exits.\n"
		"\n"
		"  --connect PATH        the collector's socket; default %s/%s\n"
		"  --output-dir DIR      where the interval files go (must be writable by the user)\n"
		"  --format FORMAT       folded, pprof or html (repeatable); default folded and pprof\n"
		"  --interval DURATION   reporting interval (30s, 5m, ...); default 60s\n"
		"  --keep N              intervals kept per format, 0 for all; default %d\n"
		"  --user NAME           user to become when started as root\n"
		"  --log-level LEVEL     error, warning, info or debug; default info\n",
		EMBER_RUNTIME_DIR, EMBER_SOCKET_NAME, DEFAULT_KEEP);
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

static int parse_level(const char *s)
{
	static const char *const names[] = {"error", "warning", "info", "debug"};

	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
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
		log_error("cannot open the output directory %s: %s; create it for this user",
			  output_dir, strerror(errno));
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

enum {
	OPT_SOCKET_FD = 256,
	OPT_UID,
	OPT_GID,
	OPT_OUTPUT_FD,
	OPT_LOG_LEVEL,
	OPT_CACHE,
	OPT_CONNECT,
	OPT_OUTPUT_DIR,
	OPT_FORMAT,
	OPT_INTERVAL,
	OPT_KEEP,
	OPT_USER,
};

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket-fd", required_argument, NULL, OPT_SOCKET_FD},
		{"uid", required_argument, NULL, OPT_UID},
		{"gid", required_argument, NULL, OPT_GID},
		{"output-fd", required_argument, NULL, OPT_OUTPUT_FD},
		{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
		{"cache-bytes", required_argument, NULL, OPT_CACHE},
		{"connect", required_argument, NULL, OPT_CONNECT},
		{"output-dir", required_argument, NULL, OPT_OUTPUT_DIR},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"interval", required_argument, NULL, OPT_INTERVAL},
		{"keep", required_argument, NULL, OPT_KEEP},
		{"user", required_argument, NULL, OPT_USER},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct ember_session_opts so;
	static struct ember_daemon_opts d = {
		.socket_path = EMBER_RUNTIME_DIR "/" EMBER_SOCKET_NAME,
		.interval_ms = DEFAULT_INTERVAL_MS,
		.rotation = {.keep = DEFAULT_KEEP},
	};
	struct ember_sandbox_opts sb = {.change_user = true, .die_with_parent = true};
	const char *output_dir = NULL, *user = NULL;
	enum ember_format fmt;
	uint64_t v;
	bool have_uid = false, have_gid = false;
	int c, level, err;

	ember_log_init("ember-symbolizer", EMBER_LOG_INFO);
	if (argc > 1 && ember_command_known(argv[1])) {
		ember_log_init("ember", EMBER_LOG_INFO);
		return ember_command_run(argc - 1, argv + 1);
	}
	so.sock = -1;
	so.signal_fd = -1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_SOCKET_FD:
			if (ember_parse_u64(optarg, 0, 1023, &v))
				goto bad;
			so.sock = (int)v;
			break;
		case OPT_UID:
			if (ember_parse_u64(optarg, 1, UINT32_MAX - 1, &v))
				goto bad;
			sb.uid = (uid_t)v;
			have_uid = true;
			break;
		case OPT_GID:
			if (ember_parse_u64(optarg, 0, UINT32_MAX - 1, &v))
				goto bad;
			sb.gid = (gid_t)v;
			have_gid = true;
			break;
		case OPT_OUTPUT_FD:
			if (so.noutputs == EMBER_MAX_OUTPUTS ||
			    parse_output(optarg, &so.outputs[so.noutputs]))
				goto bad;
			so.noutputs++;
			break;
		case OPT_LOG_LEVEL:
			level = parse_level(optarg);
			if (level < 0)
				goto bad;
			ember_log_set_level((enum ember_log_level)level);
			break;
		case OPT_CACHE:
			if (ember_parse_u64(optarg, 1 << 20, 1ull << 40, &v))
				goto bad;
			so.objcache_bytes = d.objcache_bytes = v;
			break;
		case OPT_CONNECT:
			d.socket_path = optarg;
			break;
		case OPT_OUTPUT_DIR:
			output_dir = optarg;
			break;
		case OPT_FORMAT:
			if (ember_format_parse(optarg, &fmt) || d.rotation.nformats == EMBER_FORMAT_MAX)
				goto bad;
			d.rotation.formats[d.rotation.nformats++] = fmt;
			break;
		case OPT_INTERVAL:
			if (ember_parse_duration_ms(optarg, &v) || v < 1000)
				goto bad;
			d.interval_ms = v;
			break;
		case OPT_KEEP:
			if (ember_parse_u64(optarg, 0, 1000000, &v))
				goto bad;
			d.rotation.keep = (unsigned int)v;
			break;
		case OPT_USER:
			user = optarg;
			break;
		case 'h':
			usage(stdout);
			return EMBER_EXIT_OK;
		default:
			usage(stderr);
			return EMBER_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	if (so.sock < 0) {
		if (!output_dir) {
			fprintf(stderr, "ember-symbolizer: give --output-dir (daemon) or run "
					"`ember record`\n");
			usage(stderr);
			return EMBER_EXIT_USAGE;
		}
		return run_daemon(&d, output_dir, user);
	}
	if (!have_uid || !have_gid) {
		usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	/* Become the user at once; the rest of the sandbox after the handshake. */
	err = ember_sandbox_drop_privileges(&sb);
	if (err)
		return EMBER_EXIT_FAILURE;
	so.enter_sandbox = enter_record_sandbox;
	so.sandbox_ctx = &sb;
	err = ember_session_run(&so);
	return err ? EMBER_EXIT_FAILURE : EMBER_EXIT_OK;
bad:
	fprintf(stderr, "ember-symbolizer: bad argument '%s'\n", optarg);
	usage(stderr);
	return EMBER_EXIT_USAGE;
}
