// SPDX-License-Identifier: Apache-2.0
#include "shared/helper_proc.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shared/err.h"

int ember_helper_start(int (*confine)(void *ctx), void (*serve)(int sock, void *ctx), void *ctx,
                       pid_t *pid, int *sock)
{
	pid_t parent = getpid();
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return neg_errno();
	*pid = fork();
	if (*pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC), err = null;

#ifdef EMBER_SANITIZER_REPORT_FD
		/* A sanitized build's reports reach the test's log (tests/sanitizer/report.c). */
		if (fcntl(EMBER_SANITIZER_REPORT_FD, F_GETFD) >= 0)
			err = EMBER_SANITIZER_REPORT_FD;
#endif
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(err, 2) < 0)
			_exit(1);
		close_range(3, (unsigned int)sv[1] - 1, 0);
		close_range((unsigned int)sv[1] + 1, ~0u, 0);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent ||
		    confine(ctx))
			_exit(1);
		serve(sv[1], ctx);
		_exit(0);
	}
	close(sv[1]);
	if (*pid < 0) {
		close(sv[0]);
		return neg_errno();
	}
	*sock = sv[0];
	return 0;
}
