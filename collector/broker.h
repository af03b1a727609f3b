/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The broker opens files for the symbolizer, which cannot open anything
 * itself. In the spirit of OpenSSH's monitor, every request type has one
 * entry in a dispatch table: whether it needs a recently sampled PID, a
 * validator for its arguments, and the function that opens the file. Every
 * reply is a read-only descriptor or a negative errno.
 */
#ifndef EMBER_COLLECTOR_BROKER_H
#define EMBER_COLLECTOR_BROKER_H

#include <stdint.h>
#include <sys/types.h>

#include "ipc/proto.h"
#include "collector/seen_pids.h"

struct ember_broker {
	struct ember_procs *procs;
	const char *debug_root;  /* "/usr/lib/debug" */
	uint64_t pid_max_age_ns; /* serve PIDs sampled at most this long ago */
	/* Token bucket capping the request rate. */
	uint32_t rate_per_s;
	uint32_t burst;
	double tokens;
	uint64_t refill_ns;
	uint64_t served[EMBER_BROKER_WHAT_MAX];
	uint32_t served_peer[EMBER_BROKER_WHAT_MAX]; /* to the current connection */
	uint64_t refused[EMBER_BROKER_WHAT_MAX];
	uint64_t rate_limited;
};

void ember_broker_init(struct ember_broker *b, struct ember_procs *procs);
/* A new symbolizer connected: the per-connection limits start again. */
void ember_broker_new_peer(struct ember_broker *b);

/*
 * Serves one request (already copied and size-checked by the protocol
 * layer). Returns a read-only descriptor the caller sends and closes, or a
 * negative errno for the reply.
 */
int ember_broker_handle(struct ember_broker *b, const struct ember_msg_broker_req *req,
                        uint64_t now_ns);

const char *ember_broker_what_name(uint32_t what);

/*
 * Opens a file a process names (a debug link) inside its root rootfd: resolved
 * never above it and through no symbolic link, and served only if it is a
 * regular file that anyone may read. Returns the descriptor or a negative errno.
 */
int ember_broker_open_in_root(int rootfd, const char *path);

#endif
