// SPDX-License-Identifier: Apache-2.0
#include "collector/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/close_range.h>

#include "ipc/core_config.h"
#include "seccomp/caps.h"
#include "shared/err.h"
#include "shared/log.h"

/* In the child: its configuration, the socket, then the passed descriptors at their fixed
 * numbers (ipc/core_config.h); every other descriptor closes at the exec. Returns the
 * program's descriptor, moved out of their way, or -1. */
static int arrange_fds(const struct ember_core_config *c, int sock)
{
	int high[2 + EMBER_CORE_MAX_PASSED], n = 2 + (int)c->npassed;
	int exe = fcntl(c->symbolizer_exe_fd, F_DUPFD_CLOEXEC, 64);

	/* First out of the way, so that no source is overwritten by an earlier dup2. */
	for (int i = 0; i < n && exe >= 0; i++)
		if ((high[i] = fcntl(i == 0   ? c->symbolizer_config_fd
		                     : i == 1 ? sock
		                              : c->passed_fds[i - 2],
		                     F_DUPFD_CLOEXEC, 64)) < 0)
			return -1;
	for (int i = 0; i < n && exe >= 0; i++)
		if (dup2(high[i], EMBER_CONFIG_FD + i) < 0)
			return -1;
	/* Close-on-exec, not closed: the program's own descriptor must last until the exec. */
	if (exe < 0 || syscall(SYS_close_range, EMBER_CONFIG_FD + n, ~0u, CLOSE_RANGE_CLOEXEC))
		return -1;
	return exe;
}

int ember_spawn_symbolizer(const struct ember_core_config *c, int sock, pid_t *pid_out,
                           int *pidfd_out)
{
	char *const argv[] = {"ember-symbolizer", NULL};
	sigset_t all;
	pid_t pid = fork();
	int exe;

	if (pid < 0)
		return neg_errno();
	if (pid == 0) {
		/* The parent blocks SIGINT/SIGTERM for its signalfd; the child starts clean.
		 * Its own process group: a Ctrl-C at the terminal reaches only the collector,
		 * which then asks the symbolizer to finish its outputs. */
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setpgid(0, 0);
		/* Its user, no capability, then a parent-death signal (a change of user would
		 * clear one set before). */
		if ((exe = arrange_fds(c, sock)) < 0 ||
		    ember_caps_become(c->symbolizer_uid, c->symbolizer_gid) ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL))
			_exit(127);
		/* The program opened by the front end: a build tree only root may enter works. */
		syscall(SYS_execveat, exe, "", argv, environ, AT_EMPTY_PATH);
		_exit(127);
	}
	*pid_out = pid;
	*pidfd_out = (int)syscall(SYS_pidfd_open, pid, 0);
	return *pidfd_out < 0 ? neg_errno() : 0;
}

/* In the command's child: becomes its user, waits at the gate, runs the command. */
static void run_command(const struct ember_command *c, int gate, int gate_write)
{
	const char *name = strrchr(c->argv[0], '/') ? strrchr(c->argv[0], '/') + 1 : c->argv[0];
	sigset_t none;
	char go;

	close(gate_write); /* its own copy would keep the end of file from coming */
	/* Its samples before the exec are the command's, and named so. */
	prctl(PR_SET_NAME, name);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (c->nofile.rlim_max)
		setrlimit(RLIMIT_NOFILE, &c->nofile);
	if (c->user && (setgroups(c->ngroups, c->groups) || setgid(c->gid) || setuid(c->uid) ||
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
		run_command(c, gate[0], gate[1]);
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
