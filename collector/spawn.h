/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starts ember-symbolizer as a child of `ember record`: a fresh program
 * (exec) that inherits only its configuration, its end of the control
 * socket and the files the front end opened for it, and that is never
 * root: the child changes user and drops every capability before the exec.
 *
 * Starts the command of `ember record -- COMMAND` too: forked early, it
 * becomes its user (the one who ran sudo, or --run-as) and then waits at a
 * gate until sampling is ready, so that it is sampled from its first
 * instruction; it runs in ember's process group, where the terminal's Ctrl-C
 * reaches it.
 */
#ifndef EMBER_COLLECTOR_SPAWN_H
#define EMBER_COLLECTOR_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

struct ember_command {
	char *const *argv;
	uid_t uid;
	gid_t gid;
	const char *user, *home; /* NULL: it runs as ember does; else it becomes user */
	const gid_t *groups;     /* the user's supplementary groups, found by the front end */
	size_t ngroups;
	struct rlimit nofile; /* what it gets (ember raises its own) */
	pid_t pid;
	int pidfd;
	int gate; /* write end: a byte lets it run, closing it makes it exit unrun (126) */
};

/* Forks the command, stopped at its gate. Returns 0 or a negative errno. */
int ember_command_start(struct ember_command *c);
/* Opens the gate (go) or closes it without a word (the command then exits 126). */
void ember_command_release(struct ember_command *c, bool go);

struct ember_core_config;

/*
 * Forks and execs the symbolizer c names (its program, configuration and passed descriptors)
 * with sock, its end of the control socket; the child becomes c's symbolizer user, without
 * any capability, before the exec. Returns 0 and its pid and pidfd, or a negative errno.
 */
int ember_spawn_symbolizer(const struct ember_core_config *c, int sock, pid_t *pid, int *pidfd);

#endif
