/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starts ember-symbolizer as a child of `ember record`: a fresh program
 * (exec) that inherits only its end of the control socket and the output
 * files the collector opened for it, and drops to the configured user
 * before it reads any record.
 */
#ifndef EMBER_COLLECTOR_SPAWN_H
#define EMBER_COLLECTOR_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

struct ember_record_opts;

/* The path of ember-symbolizer: beside this program, else the libexec dir. */
int ember_symbolizer_path(char *buf, size_t size);

/*
 * Forks and execs the symbolizer with sock (its end of the control socket) and o's
 * opened outputs, to run as o's user, with o's OTLP, log level and pass-through
 * arguments. Returns 0 and its pid and pidfd, or a negative errno.
 */
int ember_spawn_symbolizer(const struct ember_record_opts *o, int sock, pid_t *pid, int *pidfd);

#endif
