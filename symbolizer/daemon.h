/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember-symbolizer as a daemon. It connects to the collector's socket (with
 * back-off while there is none), enters its sandbox, and writes one set of
 * outputs per reporting interval into its output directory.
 *
 * Its sandbox cannot name a socket path, so it cannot reconnect: when the
 * collector goes away it writes the interval so far and exits, and its
 * service manager (Restart=always) starts a fresh one, which waits for the
 * collector with back-off before it enters its own sandbox. A symbolizer
 * that is killed is replaced the same way; the collector counts the samples
 * it could not deliver meanwhile and reports them to the next one.
 */
#ifndef EMBER_SYMBOLIZER_DAEMON_H
#define EMBER_SYMBOLIZER_DAEMON_H

#include <stdint.h>

#include "symbolizer/formats/rotate.h"
#include "symbolizer/session.h"
#include "symbolizer/sandbox.h"

#define EMBER_DAEMON_BACKOFF_MIN_MS 100
#define EMBER_DAEMON_BACKOFF_MAX_MS 5000

struct ember_daemon_opts {
	const char *socket_path;
	struct ember_rotation rotation; /* dir_fd opened by the caller */
	uint64_t interval_ms;
	struct ember_sandbox_opts sandbox;
	size_t objcache_bytes;
	enum ember_view view;               /* of the folded and HTML files */
	uint32_t interpreters;              /* as ember_session_opts's */
	uint32_t interp_flags;              /* as ember_session_opts's */
	size_t memory_budget;               /* resident bytes; 0: the default */
	struct ember_session_export export; /* OTLP: the exporter, if any, and resources */
};

/* Runs until SIGTERM/SIGINT or the collector goes away; returns an exit code. */
int ember_daemon_run(struct ember_daemon_opts *o);

#endif
