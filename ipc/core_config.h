/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember-collector's whole configuration, as the front end hands it over
 * (config_fd.h): what to sample, for how long, who the symbolizer runs as
 * and what it is handed, and the command of `ember record -- COMMAND`.
 *
 * Every string is a fixed array; every number has a range; descriptors are
 * numbers the front end passed beside the configuration. The collector
 * parses no command line: it checks this struct field by field
 * (ember_core_config_check) as it checks a message from its peer, and
 * refuses it whole if one field is out of bounds.
 */
#ifndef EMBER_IPC_CORE_CONFIG_H
#define EMBER_IPC_CORE_CONFIG_H

#include <stdint.h>

#include "bpf/records.h"
#include "ipc/config_fd.h"
#include "ipc/proto.h"

#define EMBER_CORE_CONFIG_VERSION 1

#define EMBER_MAX_HZ             10000
#define EMBER_MAX_PIDS           1024
#define EMBER_CORE_PATH_LEN      4096
#define EMBER_CORE_SOCKET_LEN    108                     /* sun_path */
#define EMBER_CORE_MAX_PASSED    (EMBER_MAX_OUTPUTS + 4) /* outputs, TLS files */
#define EMBER_CORE_COMMAND_BYTES (128u << 10)
#define EMBER_CORE_MAX_ARGS      8192
#define EMBER_CORE_MAX_GROUPS    1024
#define EMBER_CORE_MAX_PID       (1u << 22) /* PID_MAX_LIMIT */

/* The symbolizer child's descriptors: its configuration at EMBER_CONFIG_FD, the control
 * socket next, then the passed descriptors in their order. */
#define EMBER_SYMBOLIZER_SOCKET_FD 4
#define EMBER_SYMBOLIZER_PASSED_FD 5

enum ember_core_mode {
	EMBER_CORE_RECORD = 1, /* `ember record`: a symbolizer child, outputs, maybe a command */
	EMBER_CORE_DAEMON,     /* `ember collector`: serves symbolizers on socket_path */
	EMBER_CORE_CHECK,      /* `ember check`: loads the programs once and exits */
	EMBER_CORE_MODE_MAX,
};

#define EMBER_CORE_PROGRESS 0x1u /* a progress line is on the terminal: erase it before logging */
#define EMBER_CORE_EXPORT   0x2u /* profiles are shipped live: an undelivered one fails the run */
#define EMBER_CORE_FLAGS    (EMBER_CORE_PROGRESS | EMBER_CORE_EXPORT)

struct ember_core_output {
	int32_t fd; /* opened for the symbolizer (created or truncated), among passed_fds */
	char format[12];
	char path[EMBER_CORE_PATH_LEN]; /* named in messages; removed if the recording fails */
};

/* `ember record -- COMMAND`: started by the collector, stopped at a gate until sampling. */
struct ember_core_command {
	uint32_t argc;       /* 0: no command */
	uint32_t argv_bytes; /* argv holds argc NUL-terminated strings, back to back */
	uint32_t set_user;   /* 1: it becomes uid, gid and groups, with HOME, USER, LOGNAME */
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[EMBER_CORE_MAX_GROUPS];
	char user[256];
	char home[EMBER_CORE_PATH_LEN];
	char argv[EMBER_CORE_COMMAND_BYTES];
};

struct ember_core_config {
	struct ember_config_hdr hdr;
	uint32_t mode;           /* enum ember_core_mode */
	uint32_t log_level;      /* enum ember_log_level */
	uint32_t flags;          /* EMBER_CORE_* */
	uint32_t sample_hz;      /* 1 to EMBER_MAX_HZ */
	uint64_t off_cpu_min_ns; /* EMBER_OFF_CPU_OFF: no off-CPU samples */
	uint64_t duration_ms;    /* 0: until a signal (or the command's exit) */
	uint64_t ring_size;      /* 0: two seconds of samples */
	uint32_t npids;
	int32_t pids[EMBER_MAX_PIDS];
	/* Cgroup v2 subtrees (paths from the hierarchy's root, mounted at cgroup_root). */
	uint32_t ncgroups;
	char cgroup_root[128];
	struct ember_cgroup_path cgroups[EMBER_SELECT_MAX_CGROUPS];
	/* What the profile says was chosen (struct ember_msg_welcome). */
	char selection[EMBER_SELECTION_LEN];
	char title[EMBER_TITLE_LEN];
	char service[EMBER_TITLE_LEN];
	/* The symbolizer: who it runs as (the daemon's peers must be this user and group). */
	uint32_t symbolizer_uid, symbolizer_gid;
	/* `ember record`: its program (opened by the front end), its configuration (handed on
	 * unread), and the descriptors it is handed (outputs, TLS files). */
	int32_t symbolizer_exe_fd;
	int32_t symbolizer_config_fd;
	uint32_t npassed;
	int32_t passed_fds[EMBER_CORE_MAX_PASSED];
	uint32_t noutputs;
	struct ember_core_output outputs[EMBER_MAX_OUTPUTS];
	char debug_dir[EMBER_CORE_PATH_LEN];     /* "": /usr/lib/debug */
	char socket_path[EMBER_CORE_SOCKET_LEN]; /* the daemon's */
	struct ember_core_command command;
};

/*
 * Checks every field of a configuration read whole (ember_config_fd_read): ranges, strings
 * that end inside their arrays, descriptors that are open, what each mode needs and what it
 * must not have, a symbolizer that is not root. Returns 0, or -EINVAL with *why naming the
 * first field that is wrong.
 */
int ember_core_config_check(const struct ember_core_config *c, const char **why);

#endif
