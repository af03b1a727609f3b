/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The collector's side of one symbolizer connection: handshake, sample ring,
 * broker requests, flushes. The peer is untrusted: every message is copied
 * and validated, descriptors it sends are refused, and any violation ends
 * the connection (sampling goes on, its records counted as lost).
 */
#ifndef EMBER_COLLECTOR_PEER_H
#define EMBER_COLLECTOR_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/broker.h"
#include "collector/broker_pool.h"
#include "ipc/proto.h"
#include "ipc/ring.h"
#include "collector/ring_drain.h"
#include "collector/table_loader.h"

struct ember_peer_config {
	size_t ring_size;
	/* What every symbolizer is told (the header, records version and ring size set here). */
	struct ember_msg_welcome welcome;
};

enum ember_peer_state {
	EMBER_PEER_NONE = 0,
	EMBER_PEER_AWAIT_HELLO,
	EMBER_PEER_ACTIVE,
	EMBER_PEER_FLUSHING, /* active, a FLUSH sent and its FLUSHED not yet back */
	EMBER_PEER_STATE_MAX,
};

struct ember_peer {
	int sock;
	int pid; /* as the kernel reports it (SO_PEERCRED, or the child's) */
	enum ember_peer_state state;
	uint32_t seq;
	struct ember_ring_producer ring;
	struct ember_peer_config config;
	/* Last FLUSHED reply. */
	bool flushed;
	int32_t flush_status;
	bool drain_asked;            /* a DRAIN came: the run loop drains now */
	struct ember_tables *tables; /* where unwind messages go; NULL: refused */
	struct ember_pool *pool;     /* opens requests that may wait (broker_pool.h) */
	uint64_t gen;                /* counts connections: a late answer finds its own */
};

void ember_peer_init(struct ember_peer *p, const struct ember_peer_config *config);
/* Takes ownership of a connected socket (made non-blocking here) to process pid. */
void ember_peer_attach(struct ember_peer *p, int sock, int pid);
/* Closes the connection and its ring; records go to "no consumer" from now on. */
void ember_peer_detach(struct ember_peer *p, struct ember_drain *drain);
bool ember_peer_connected(const struct ember_peer *p);
/* Handshake done: samples go to its ring (flushing or not). */
static inline bool ember_peer_active(const struct ember_peer *p)
{
	return p->state == EMBER_PEER_ACTIVE || p->state == EMBER_PEER_FLUSHING;
}
/* Whether the symbolizer may send a message of type in state (the peer's dispatch table). */
bool ember_peer_allows(enum ember_peer_state state, uint32_t type);

/*
 * Handles the messages waiting on the socket. Returns 0, or a negative errno
 * when the connection must end (closed by the peer, or a protocol violation,
 * already logged).
 */
int ember_peer_on_readable(struct ember_peer *p, struct ember_broker *broker,
                           struct ember_drain *drain, uint64_t now_ns);

/* Answers broker request id with fd (sent and closed) or a negative errno. */
int ember_peer_send_reply(struct ember_peer *p, uint32_t id, int fd,
                          const struct ember_broker_file *f);

/*
 * Asks the symbolizer to consume everything written so far and write its
 * outputs; its FLUSHED is accepted once, after this. -EALREADY while a flush
 * is under way, -ENOTCONN before the handshake.
 */
int ember_peer_send_flush(struct ember_peer *p, struct ember_drain *drain, bool final);

#endif
