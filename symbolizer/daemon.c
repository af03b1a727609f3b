// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "ipc/endpoint.h"
#include "symbolizer/session.h"
#include "shared/err.h"
#include "shared/log.h"

static int enter_sandbox(void *ctx)
{
	const struct ember_daemon_opts *o = ctx;
	int err = ember_sandbox_enter(&o->sandbox);

	if (!err)
		ember_sandbox_test_violation();
	return err;
}

/* Waits up to ms for a stop signal; true if one came (SIGHUP is ignored here). */
static bool wait_or_stop(int sigfd, int ms)
{
	struct pollfd p = {.fd = sigfd, .events = POLLIN};
	struct signalfd_siginfo si;

	if (poll(&p, 1, ms) <= 0 || read(sigfd, &si, sizeof(si)) != sizeof(si))
		return false;
	return si.ssi_signo != SIGHUP;
}

/* Connects to a collector running as root, retrying with back-off; -EINTR on a stop signal. */
static int connect_with_backoff(const struct ember_daemon_opts *o, int sigfd, int *delay_ms)
{
	bool told = false;

	for (;;) {
		struct ember_peer_cred cred = {.uid = (uid_t)-1};
		int fd = ember_endpoint_connect(o->socket_path);

		if (fd >= 0 && (ember_endpoint_peer(fd, &cred) || cred.uid != 0)) {
			log_error("%s is not served by root (uid %u): not a collector; refusing it",
			          o->socket_path, (unsigned)cred.uid);
			close(fd);
			fd = -EPERM;
		}
		if (fd >= 0)
			return fd;
		if (!told)
			log_info_errno(fd, "waiting for the collector at %s (%m)", o->socket_path);
		told = true;
		if (wait_or_stop(sigfd, *delay_ms))
			return -EINTR;
		*delay_ms = *delay_ms * 2 > EMBER_DAEMON_BACKOFF_MAX_MS
		                ? EMBER_DAEMON_BACKOFF_MAX_MS
		                : *delay_ms * 2;
	}
}

static int setup_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return neg_errno();
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int ember_daemon_run(struct ember_daemon_opts *o)
{
	struct ember_session_opts so = {
	    .rotation = &o->rotation,
	    .interval_ms = o->interval_ms,
	    .objcache_bytes = o->objcache_bytes,
	    .view = o->view,
	    .interpreters = o->interpreters,
	    .interp_flags = o->interp_flags,
	    .memory_budget = o->memory_budget,
	    .enter_sandbox = enter_sandbox,
	    .sandbox_ctx = o,
	    .export = o->export,
	};
	int delay_ms = EMBER_DAEMON_BACKOFF_MIN_MS, err;

	/* Connect as the configured user: the collector checks who connects. */
	if (ember_sandbox_drop_privileges(&o->sandbox))
		return EMBER_EXIT_FAILURE;
	if (faccessat(o->rotation.dir_fd, ".", W_OK, AT_EACCESS) < 0) {
		log_error_errno(
		    errno,
		    "uid %u cannot write the output directory: %m; make it writable for this "
		    "user",
		    (unsigned)geteuid());
		return EMBER_EXIT_FAILURE;
	}
	so.signal_fd = setup_signals();
	if (so.signal_fd < 0) {
		log_error_errno(so.signal_fd, "cannot set up signals: %m");
		return EMBER_EXIT_FAILURE;
	}
	for (;;) {
		so.sock = connect_with_backoff(o, so.signal_fd, &delay_ms);
		if (so.sock == -EINTR)
			return EMBER_EXIT_OK;
		err = ember_session_run(&so);
		close(so.sock);
		if (err != -EAGAIN)
			break;
		/* Refused before the sandbox closed (another symbolizer is still
		 * connected, or the collector expects another user): try again. */
		log_warn(
		    "the collector closed the connection during the handshake (another "
		    "symbolizer connected, or it expects another user: see its log); retrying");
		if (wait_or_stop(so.signal_fd, delay_ms))
			return EMBER_EXIT_OK;
		delay_ms = delay_ms * 2 > EMBER_DAEMON_BACKOFF_MAX_MS ? EMBER_DAEMON_BACKOFF_MAX_MS
		                                                      : delay_ms * 2;
	}
	if (err == -ECONNRESET) {
		log_info("the collector went away: exiting so that a fresh symbolizer is started");
		return EMBER_EXIT_OK;
	}
	return err ? EMBER_EXIT_FAILURE : EMBER_EXIT_OK;
}
