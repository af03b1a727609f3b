// SPDX-License-Identifier: Apache-2.0
#include "collector/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector/run_loop.h"
#include "shared/err.h"
#include "shared/log.h"

#define CHILD_SOCK_FD   3
#define CHILD_FIRST_OUT 4
#define MAX_ARGS        (16 + 2 * EMBER_MAX_OUTPUTS + 64) /* 64: export settings passed through */

int ember_symbolizer_path(char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		snprintf(buf, size, "%s/ember-symbolizer", dirname(self));
		if (access(buf, X_OK) == 0)
			return 0;
	}
	snprintf(buf, size, "%s/ember-symbolizer", EMBER_LIBEXECDIR);
	if (access(buf, X_OK) == 0)
		return 0;
	log_error("cannot find ember-symbolizer next to ember or in %s; reinstall ember",
	          EMBER_LIBEXECDIR);
	return -ENOENT;
}

/* In the child: moves each descriptor to its fixed number and closes everything else. */
static int arrange_fds(const struct ember_record_opts *o, int sock)
{
	int high[1 + EMBER_MAX_OUTPUTS], n = 1 + (int)o->noutputs;

	/* The socket, then the outputs: first out of the way, so that no source is
	 * overwritten by an earlier dup2. */
	for (int i = 0; i < n; i++)
		if ((high[i] = fcntl(i ? o->outputs[i - 1].fd : sock, F_DUPFD_CLOEXEC, 64)) < 0)
			return -1;
	for (int i = 0; i < n; i++)
		if (dup2(high[i], CHILD_SOCK_FD + i) < 0)
			return -1;
	return (int)syscall(SYS_close_range, CHILD_SOCK_FD + n, ~0u, 0);
}

int ember_spawn_symbolizer(const struct ember_record_opts *o, int sock, pid_t *pid_out,
                           int *pidfd_out)
{
	char path[PATH_MAX], uid[32], gid[32], progress[48], outs[EMBER_MAX_OUTPUTS][PATH_MAX + 32];
	const char *argv[MAX_ARGS + 16];
	sigset_t all;
	int argc = 0, err;
	pid_t pid;

	if (o->noutputs > EMBER_MAX_OUTPUTS)
		return -E2BIG;
	err = ember_symbolizer_path(path, sizeof(path));
	if (err)
		return err;
	snprintf(uid, sizeof(uid), "--uid=%u", (unsigned)o->uid);
	snprintf(gid, sizeof(gid), "--gid=%u", (unsigned)o->gid);
	argv[argc++] = "ember-symbolizer";
	argv[argc++] = "--socket-fd=3";
	argv[argc++] = uid;
	argv[argc++] = gid;
	for (size_t i = 0; i < o->noutputs; i++) {
		snprintf(outs[i], sizeof(outs[i]), "%d:%s:%s", CHILD_FIRST_OUT + (int)i,
		         o->outputs[i].format, o->outputs[i].path);
		argv[argc++] = "--output-fd";
		argv[argc++] = outs[i];
	}
	if (o->progress) { /* the symbolizer draws it: it knows what it has written */
		snprintf(progress, sizeof(progress), "--progress=%" PRIu64, o->duration_ms / 1000);
		argv[argc++] = progress;
	}
	if (o->otlp_url) {
		argv[argc++] = "--otlp";
		argv[argc++] = o->otlp_url;
	}
	for (int i = 0; o->symbolizer_args && o->symbolizer_args[i] && argc < MAX_ARGS + 14; i++)
		argv[argc++] = o->symbolizer_args[i];
	argv[argc] = NULL;

	pid = fork();
	if (pid < 0)
		return neg_errno();
	if (pid == 0) {
		/* The parent blocks SIGINT/SIGTERM for its signalfd; the child starts clean,
		 * and dies with its parent rather than outliving a crashed collector. */
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* Its own process group: a Ctrl-C at the terminal reaches only the
		 * collector, which then asks the symbolizer to finish its outputs. */
		setpgid(0, 0);
		if (arrange_fds(o, sock) < 0)
			_exit(127);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	*pid_out = pid;
	*pidfd_out = (int)syscall(SYS_pidfd_open, pid, 0);
	if (*pidfd_out < 0)
		return neg_errno();
	return 0;
}

/* In the command's child: becomes its user, waits at the gate, runs the command. */
static void run_command(const struct ember_command *c, int gate)
{
	const char *name = strrchr(c->argv[0], '/') ? strrchr(c->argv[0], '/') + 1 : c->argv[0];
	sigset_t none;
	char go;

	/* Its samples before the exec are the command's, and named so. */
	prctl(PR_SET_NAME, name);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (c->nofile.rlim_max)
		setrlimit(RLIMIT_NOFILE, &c->nofile);
	if (c->user && (initgroups(c->user, c->gid) || setgid(c->gid) || setuid(c->uid) ||
	                setenv("HOME", c->home, 1) || setenv("USER", c->user, 1) ||
	                setenv("LOGNAME", c->user, 1))) {
		log_error("cannot run the command as %s: %s", c->user, strerror(errno));
		_exit(126);
	}
	/* End of file: the recording could not start, and the command must not run unprofiled. */
	if (read(gate, &go, 1) != 1)
		_exit(126);
	close(gate);
	execvp(c->argv[0], c->argv);
	log_error("cannot run %s: %s", c->argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

int ember_command_start(struct ember_command *c)
{
	int gate[2];

	if (pipe2(gate, O_CLOEXEC) < 0)
		return neg_errno();
	c->pid = fork();
	if (c->pid == 0)
		run_command(c, gate[0]);
	close(gate[0]);
	c->gate = gate[1];
	if (c->pid < 0)
		return neg_errno();
	c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	return c->pidfd < 0 ? neg_errno() : 0;
}

void ember_command_release(struct ember_command *c, bool go)
{
	if (c->gate < 0)
		return;
	if (go && write(c->gate, "g", 1) != 1)
		log_warn("cannot start the command: %s", strerror(errno));
	close(c->gate);
	c->gate = -1;
}
