/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starts ember-symbolizer as a child of `ember record`: a fresh program
 * (exec) that inherits only its end of the control socket and the output
 * files the collector opened for it, and drops to the configured user
 * before it reads any record.
 */
#ifndef EMBER_COLLECTOR_SPAWN_H
#define EMBER_COLLECTOR_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ipc/proto.h"

struct ember_output_spec {
	const char *path;
	const char *format; /* "folded", "pprof", "html", "otlp" */
	int fd;
	bool created; /* this run created it: removed again if the run fails */
};

struct ember_spawn_opts {
	uid_t uid;
	gid_t gid;
	int sock_fd;
	const struct ember_output_spec *outputs;
	size_t noutputs;
	const char *otlp_url;          /* or NULL */
	const char *log_level;         /* "info", "debug", ... */
	const char *const *extra_args; /* passed through, NULL-terminated, may be NULL */
};

/* The path of ember-symbolizer: beside this program, else the libexec dir. */
int ember_symbolizer_path(char *buf, size_t size);

/* Forks and execs the symbolizer. Returns 0 and its pid and pidfd, or a negative errno. */
int ember_spawn_symbolizer(const struct ember_spawn_opts *o, pid_t *pid, int *pidfd);

#endif
