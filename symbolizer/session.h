/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One connection to a collector: handshake, enter the sandbox, then read the
 * sample ring, symbolize and aggregate, and write the outputs: in `ember
 * record` whenever the collector asks for a flush; as a daemon once per
 * reporting interval, on SIGHUP (a new interval starts) and on SIGTERM or
 * when the collector goes away (the interval so far is written, then the
 * session ends).
 */
#ifndef EMBER_SYMBOLIZER_SESSION_H
#define EMBER_SYMBOLIZER_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "output.h"
#include "rotate.h"

#define EMBER_MAX_OUTPUTS 16

struct ember_session_opts {
	int sock;
	/* `ember record`: each output is rewritten completely at every flush. */
	struct ember_output outputs[EMBER_MAX_OUTPUTS];
	size_t noutputs;
	/* Daemon (rotation set): one set of files per interval of interval_ms. */
	struct ember_rotation *rotation;
	uint64_t interval_ms;
	int signal_fd; /* -1, or a signalfd for SIGTERM, SIGINT and SIGHUP */
	size_t objcache_bytes;
	/* Called after the handshake, before the first record is read; an error ends the session. */
	int (*enter_sandbox)(void *ctx);
	void *sandbox_ctx;
};

/*
 * Runs until a final flush or SIGTERM/SIGINT (returns 0); -EAGAIN when the
 * collector closed the connection during the handshake (it has another
 * symbolizer or refused this user: try again later); -ECONNRESET when it
 * went away afterwards (a daemon has written its interval so far); another
 * negative errno on failure.
 */
int ember_session_run(const struct ember_session_opts *o);

#endif
