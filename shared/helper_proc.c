// SPDX-License-Identifier: Apache-2.0
#include "shared/helper_proc.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shared/err.h"

#ifdef EMBER_SANITIZERS
/* The sanitizers' log of a sanitized program (tests/sanitizer/report.c; absent elsewhere). */
extern int ember_sanitizer_report_fd __attribute__((weak));
extern void ember_sanitizer_reports_to_stderr(void) __attribute__((weak));
#endif

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

#ifdef EMBER_SANITIZERS
		/* A sanitized build's reports reach the test's log (tests/sanitizer/report.c). */
		if (&ember_sanitizer_report_fd && ember_sanitizer_report_fd >= 0)
			err = ember_sanitizer_report_fd;
#endif
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(err, 2) < 0)
			_exit(1);
		close_range(3, (unsigned int)sv[1] - 1, 0);
		close_range((unsigned int)sv[1] + 1, ~0u, 0);
#ifdef EMBER_SANITIZERS
		/* That closed the log's descriptor: reports go to stderr, the log (above). */
		if (ember_sanitizer_reports_to_stderr)
			ember_sanitizer_reports_to_stderr();
#endif
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
