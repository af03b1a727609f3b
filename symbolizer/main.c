// SPDX-License-Identifier: Apache-2.0
/*
 * ember-symbolizer: the unprivileged half of ember. Started by `ember record`
 * (or as a daemon), it drops to its own user before it reads any record and
 * from then on works only with descriptors the collector hands it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "output.h"
#include "sandbox.h"
#include "session.h"
#include "shared/err.h"
#include "shared/log.h"
#include "shared/str.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ember-symbolizer --socket-fd=N --uid UID --gid GID "
		   "[--output-fd N:FORMAT:PATH]... [--log-level LEVEL]\n"
		   "       ember-symbolizer report|diff|top ARGS...\n"
		   "Started by `ember record`, `ember report`, `ember diff` and `ember top`.\n");
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

enum { OPT_SOCKET_FD = 256, OPT_UID, OPT_GID, OPT_OUTPUT_FD, OPT_LOG_LEVEL, OPT_CACHE };

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket-fd", required_argument, NULL, OPT_SOCKET_FD},
		{"uid", required_argument, NULL, OPT_UID},
		{"gid", required_argument, NULL, OPT_GID},
		{"output-fd", required_argument, NULL, OPT_OUTPUT_FD},
		{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
		{"cache-bytes", required_argument, NULL, OPT_CACHE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct ember_session_opts so;
	struct ember_sandbox_opts sb = {0};
	uint64_t v;
	bool have_uid = false, have_gid = false;
	int c, level, err;

	ember_log_init("ember-symbolizer", EMBER_LOG_INFO);
	if (argc > 1 && ember_command_known(argv[1])) {
		ember_log_init("ember", EMBER_LOG_INFO);
		return ember_command_run(argc - 1, argv + 1);
	}
	so.sock = -1;
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
			so.objcache_bytes = v;
			break;
		case 'h':
			usage(stdout);
			return EMBER_EXIT_OK;
		default:
			usage(stderr);
			return EMBER_EXIT_USAGE;
		}
	}
	if (so.sock < 0 || !have_uid || !have_gid || optind != argc) {
		usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	err = ember_sandbox_drop_privileges(&sb);
	if (err)
		return EMBER_EXIT_FAILURE;
	err = ember_session_run(&so);
	return err ? EMBER_EXIT_FAILURE : EMBER_EXIT_OK;
bad:
	fprintf(stderr, "ember-symbolizer: bad argument '%s'\n", optarg);
	usage(stderr);
	return EMBER_EXIT_USAGE;
}
