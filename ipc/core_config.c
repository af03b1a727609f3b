// SPDX-License-Identifier: Apache-2.0
#include "ipc/core_config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "ipc/ring.h"
#include "shared/log.h"

#define MAX_OFF_CPU_MIN_NS (3600ull * 1000000000ull)
#define MAX_DURATION_MS    (366ull * 24 * 3600 * 1000)

/* An absolute path without "..": a cgroup below the chosen root stays below it. */
static bool path_ok(const char *p, size_t size)
{
	return ember_config_str_ok(p, size) && p[0] == '/' && !strstr(p, "..");
}

static int check_sampling(const struct ember_core_config *c, const char **why)
{
	EMBER_CONFIG_REFUSE_IF(c->mode < EMBER_CORE_RECORD || c->mode >= EMBER_CORE_MODE_MAX,
	                       "mode");
	EMBER_CONFIG_REFUSE_IF(c->log_level > EMBER_LOG_DEBUG, "log_level");
	EMBER_CONFIG_REFUSE_IF(c->flags & ~EMBER_CORE_FLAGS, "flags");
	EMBER_CONFIG_REFUSE_IF(c->sample_hz < 1 || c->sample_hz > EMBER_MAX_HZ, "sample_hz");
	EMBER_CONFIG_REFUSE_IF(c->off_cpu_min_ns != EMBER_OFF_CPU_OFF &&
	                           c->off_cpu_min_ns > MAX_OFF_CPU_MIN_NS,
	                       "off_cpu_min_ns");
	EMBER_CONFIG_REFUSE_IF(c->duration_ms > MAX_DURATION_MS, "duration_ms");
	EMBER_CONFIG_REFUSE_IF(c->ring_size && (c->ring_size < EMBER_RING_MIN_SIZE ||
	                                        c->ring_size > EMBER_RING_MAX_SIZE),
	                       "ring_size");
	EMBER_CONFIG_REFUSE_IF(c->npids > EMBER_MAX_PIDS, "npids");
	for (uint32_t i = 0; i < c->npids; i++)
		EMBER_CONFIG_REFUSE_IF(c->pids[i] < 1 || (uint32_t)c->pids[i] > EMBER_CORE_MAX_PID,
		                       "pids");
	return 0;
}

static int check_selection(const struct ember_core_config *c, const char **why)
{
	EMBER_CONFIG_REFUSE_IF(c->ncgroups > EMBER_SELECT_MAX_CGROUPS, "ncgroups");
	EMBER_CONFIG_REFUSE_IF(
	    !EMBER_CONFIG_STR_OK(c->cgroup_root) ||
		(c->ncgroups && !path_ok(c->cgroup_root, sizeof(c->cgroup_root))),
	    "cgroup_root");
	for (uint32_t i = 0; i < c->ncgroups; i++)
		EMBER_CONFIG_REFUSE_IF(!path_ok(c->cgroups[i].path, sizeof(c->cgroups[i].path)),
		                       "cgroups");
	EMBER_CONFIG_REFUSE_IF(!EMBER_CONFIG_STR_OK(c->selection) ||
	                           !EMBER_CONFIG_STR_OK(c->title) ||
	                           !EMBER_CONFIG_STR_OK(c->service),
	                       "selection");
	EMBER_CONFIG_REFUSE_IF(
	    !EMBER_CONFIG_STR_OK(c->debug_dir) ||
		(c->debug_dir[0] && !path_ok(c->debug_dir, sizeof(c->debug_dir))),
	    "debug_dir");
	return 0;
}

/* What `ember record` hands its symbolizer child; nothing in the other modes. */
static int check_symbolizer(const struct ember_core_config *c, const char **why)
{
	bool record = c->mode == EMBER_CORE_RECORD;

	EMBER_CONFIG_REFUSE_IF(!c->symbolizer_uid || c->symbolizer_uid == UINT32_MAX ||
	                           c->symbolizer_gid == UINT32_MAX,
	                       "symbolizer_uid: the symbolizer never runs as root");
	EMBER_CONFIG_REFUSE_IF(record != ember_config_fd_ok(c->symbolizer_exe_fd),
	                       "symbolizer_exe_fd");
	EMBER_CONFIG_REFUSE_IF(record != ember_config_fd_ok(c->symbolizer_config_fd),
	                       "symbolizer_config_fd");
	EMBER_CONFIG_REFUSE_IF(c->npassed > (record ? EMBER_CORE_MAX_PASSED : 0), "npassed");
	for (uint32_t i = 0; i < c->npassed; i++)
		EMBER_CONFIG_REFUSE_IF(!ember_config_fd_ok(c->passed_fds[i]), "passed_fds");
	EMBER_CONFIG_REFUSE_IF(c->noutputs > (record ? EMBER_MAX_OUTPUTS : 0), "noutputs");
	for (uint32_t i = 0; i < c->noutputs; i++) {
		const struct ember_core_output *o = &c->outputs[i];
		bool passed = false;

		for (uint32_t j = 0; j < c->npassed; j++)
			passed |= c->passed_fds[j] == o->fd;
		EMBER_CONFIG_REFUSE_IF(!passed || !EMBER_CONFIG_STR_OK(o->format) ||
		                           !EMBER_CONFIG_STR_OK(o->path) || !o->path[0],
		                       "outputs");
	}
	EMBER_CONFIG_REFUSE_IF(!EMBER_CONFIG_STR_OK(c->socket_path) ||
	                           (c->mode == EMBER_CORE_DAEMON) !=
	                               path_ok(c->socket_path, sizeof(c->socket_path)),
	                       "socket_path");
	EMBER_CONFIG_REFUSE_IF(!record && (c->duration_ms || c->flags),
	                       "duration_ms, flags: record only");
	return 0;
}

/* argc strings in argv_bytes, each ending in a NUL; the rest of the array unused. */
static int check_command(const struct ember_core_config *c, const char **why)
{
	const struct ember_core_command *k = &c->command;
	uint32_t strings = 0;

	EMBER_CONFIG_REFUSE_IF(k->argc > EMBER_CORE_MAX_ARGS || k->argv_bytes > sizeof(k->argv),
	                       "command");
	EMBER_CONFIG_REFUSE_IF(k->argc && c->mode != EMBER_CORE_RECORD, "command: record only");
	EMBER_CONFIG_REFUSE_IF(
	    !k->argc != !k->argv_bytes || (k->argc && k->argv[k->argv_bytes - 1]), "command.argv");
	for (uint32_t i = 0; i < k->argv_bytes; i++)
		strings += !k->argv[i];
	EMBER_CONFIG_REFUSE_IF(strings != k->argc || (k->argc && !k->argv[0]), "command.argv");
	EMBER_CONFIG_REFUSE_IF(k->set_user > 1 || k->ngroups > EMBER_CORE_MAX_GROUPS ||
	                           !EMBER_CONFIG_STR_OK(k->user) || !EMBER_CONFIG_STR_OK(k->home) ||
	                           (k->set_user && (!k->user[0] || k->home[0] != '/')),
	                       "command user");
	return 0;
}

int ember_core_config_check(const struct ember_core_config *c, const char **why)
{
	int err;

	*why = "";
	if ((err = check_sampling(c, why)) || (err = check_selection(c, why)) ||
	    (err = check_symbolizer(c, why)) || (err = check_command(c, why)))
		return err;
	return 0;
}
