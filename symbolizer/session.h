/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One connection to a collector: handshake, enter the sandbox, then read the
 * sample ring, symbolize and aggregate, and write the outputs: in `ember
 * record` whenever the collector asks for a flush; as a daemon once per
 * reporting interval, on SIGHUP (a new interval starts) and on SIGTERM or
 * when the collector goes away (the interval so far is written, then the
 * session ends).
 *
 * With a live exporter the session also cuts the profile every export
 * interval on its own clock: each interval is encoded as OTLP and queued for
 * the export thread, then, when files are written too, merged into the
 * profile the files are written from (the whole run, or the daemon's file
 * interval). The end of a session ships the last, partial interval and
 * waits for delivery until a deadline.
 */
#ifndef EMBER_SYMBOLIZER_SESSION_H
#define EMBER_SYMBOLIZER_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/export/export_queue.h"
#include "symbolizer/formats/profile_writer.h"
#include "symbolizer/formats/rotate.h"
#include "ipc/proto.h"

/* Live OTLP export and the resource configuration of OTLP outputs. */
struct ember_session_export {
	struct ember_exporter *exporter; /* NULL: no live export */
	uint64_t interval_ns;            /* the profile is shipped every interval_ns */
	uint64_t delivery_deadline_ns;   /* how long the end of a session waits for delivery */
	char service_name[128];          /* see profile.h */
	char resource_attrs[1024];
	uint32_t otlp_symbols; /* see profile.h */
};

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
	enum ember_view view;  /* what folded outputs hold and the flame graph opens with */
	uint32_t interpreters; /* 1u << runtime (bpf/interp.h): its frames are read */
	uint32_t interp_flags; /* EMBER_INTERP_* (interp_ops.h): how their frames are named */
	size_t memory_budget;  /* resident bytes the symbolizer keeps within; 0: the default */
	/* `ember record` on a terminal: a status line redrawn on stderr; of progress_s seconds
	 * (0: until stopped). */
	bool progress;
	uint64_t progress_s;
	/* Called after the handshake, before the first record is read; an error ends the session.
	 */
	int (*enter_sandbox)(void *ctx);
	void *sandbox_ctx;
	struct ember_session_export export;
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
