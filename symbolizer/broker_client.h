/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer's side of the control socket: it asks the collector's
 * broker for descriptors and notices the collector's own messages (FLUSH)
 * that arrive while it waits for a reply.
 */
#ifndef EMBER_SYMBOLIZER_BROKER_CLIENT_H
#define EMBER_SYMBOLIZER_BROKER_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "ipc/proto.h"

#define EMBER_BROKER_TIMEOUT_MS 10000

struct ember_broker_client {
	int sock;
	uint32_t seq;
	uint32_t next_id;
	/* A FLUSH that arrived while waiting for a reply. */
	bool flush_pending;
	struct ember_msg_flush flush;
	bool closed; /* the collector went away or broke the protocol */
	uint64_t requests, failures;
	uint64_t late_replies; /* replies to requests that had timed out, dropped */
};

void ember_broker_client_init(struct ember_broker_client *c, int sock);

/* Sends msg (header filled in here). Returns 0 or a negative errno. */
int ember_broker_client_send(struct ember_broker_client *c, union ember_msg *msg);

/*
 * Asks for a descriptor. Returns the descriptor or a negative errno (the
 * broker's refusal, -ETIMEDOUT, or -ECONNRESET when the collector is gone).
 */
int ember_broker_request(struct ember_broker_client *c, uint32_t what, uint32_t pid, uint64_t addr,
                         const char *arg);

/*
 * Receives one message that is not a broker reply (HELLO's answer, FLUSH),
 * waiting up to timeout_ms (-1: forever). Descriptors go to fds.
 */
int ember_broker_client_recv(struct ember_broker_client *c, union ember_msg *m, int *fds,
                             int max_fds, int *nfds, int timeout_ms);

#endif
