// SPDX-License-Identifier: Apache-2.0
#include "collector/peer.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <string.h>

#include "bpf/records.h"
#include "shared/cleanup.h"
#include "shared/log.h"

#define MAX_MESSAGES_PER_WAKEUP 64

void ember_peer_init(struct ember_peer *p, const struct ember_peer_config *config)
{
	memset(p, 0, sizeof(*p));
	p->sock = -1;
	p->config = *config;
	p->ring.data_fd = p->ring.pos_fd = p->ring.event_fd = -1;
}

void ember_peer_attach(struct ember_peer *p, int sock, int pid)
{
	int fl = fcntl(sock, F_GETFL);

	if (fl >= 0)
		fcntl(sock, F_SETFL, fl | O_NONBLOCK);
	p->sock = sock;
	p->pid = pid;
	p->gen++;
	p->state = EMBER_PEER_AWAIT_HELLO;
	p->seq = 0;
	p->flushed = false;
}

bool ember_peer_connected(const struct ember_peer *p)
{
	return p->state != EMBER_PEER_NONE;
}

void ember_peer_detach(struct ember_peer *p, struct ember_drain *drain)
{
	p->sock = ember_safe_close(p->sock);
	if (drain->ring == &p->ring)
		drain->ring = NULL;
	if (p->ring.hdr)
		ember_ring_producer_destroy(&p->ring);
	if (p->tables)
		ember_tables_reset(p->tables);
	p->state = EMBER_PEER_NONE;
}

static int send_msg(struct ember_peer *p, union ember_msg *m, const int *fds, int nfds)
{
	int err;

	m->hdr.seq = ++p->seq;
	err = ember_msg_send(p->sock, m, fds, nfds);
	/* A peer that does not read its socket cannot hold the collector up. */
	if (err)
		log_warn_errno(err, "symbolizer connection: cannot send %s: %m",
		               ember_msg_type_name(m->hdr.type));
	return err;
}

/* What a handler may use besides the peer. */
struct peer_call {
	struct ember_broker *broker;
	struct ember_drain *drain;
	uint64_t now_ns;
};

static int on_hello(struct ember_peer *p, const struct peer_call *c, const union ember_msg *in)
{
	union ember_msg out;
	int err;

	if (in->hello.records_version != EMBER_RECORDS_VERSION) {
		ember_msg_init(&out, EMBER_MSG_REJECT, 0);
		out.reject.error = -EPROTONOSUPPORT;
		snprintf(out.reject.reason, sizeof(out.reject.reason),
		         "record version %u, collector has %u: install matching versions",
		         in->hello.records_version, EMBER_RECORDS_VERSION);
		send_msg(p, &out, NULL, 0);
		log_warn("symbolizer speaks record version %u, this collector %u: refused",
		         in->hello.records_version, EMBER_RECORDS_VERSION);
		return -EPROTONOSUPPORT;
	}
	/* A fresh ring for every connection: a previous peer keeps nothing it can write. */
	err = ember_ring_producer_create(&p->ring, p->config.ring_size);
	if (err)
		return log_error_errno(err, "cannot create the sample ring: %m");
	ember_msg_init_from(&out, EMBER_MSG_WELCOME, 0, &p->config.welcome);
	out.welcome.records_version = EMBER_RECORDS_VERSION;
	out.welcome.ring_size = p->ring.size;
	err = send_msg(p, &out, (int[]){p->ring.data_fd, p->ring.pos_fd, p->ring.event_fd}, 3);
	if (err)
		return err;
	p->state = EMBER_PEER_ACTIVE;
	c->drain->ring = &p->ring;
	log_info("symbolizer (pid %d) connected", p->pid);
	return 0;
}

int ember_peer_send_reply(struct ember_peer *p, uint32_t id, int fd,
                          const struct ember_broker_file *f)
{
	union ember_msg out;
	int err;

	ember_msg_broker_reply(&out, 0, id, fd, f);
	err = send_msg(p, &out, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
	ember_closep(&fd);
	return err;
}

static int on_broker_req(struct ember_peer *p, const struct peer_call *c, const union ember_msg *in)
{
	struct ember_broker_file file;
	int fd = ember_broker_handle(c->broker, &in->broker_req, c->now_ns, &file);

	/* It may wait: a worker makes it, whose answer comes when it is done or its deadline
	 * passed. */
	if (fd == -EINPROGRESS) {
		fd = p->pool ? ember_pool_submit(p->pool, &in->broker_req, p->gen, c->now_ns, &file)
		             : -EIO;
		if (!fd)
			return 0;
		fd = ember_broker_complete(c->broker, &in->broker_req, fd, c->now_ns);
	}
	return ember_peer_send_reply(p, in->broker_req.id, fd, &file);
}

static int on_unwind(struct ember_peer *p, const struct peer_call *c, const union ember_msg *in)
{
	/* No mapping list for a process that exited (or was never seen here): its entry in
	 * the unwinder's map would outlive it, as nothing deletes it any more. A message of
	 * the right form is dropped, not refused: the symbolizer may be a little late. */
	if (in->hdr.type == EMBER_MSG_UNWIND_PROC && in->unwind_proc.total &&
	    ember_procs_check(c->broker->procs, in->unwind_proc.pid, c->now_ns, UINT64_MAX))
		return 0;
	/* Nor an interpreter row: the exit that would remove it has come and gone. */
	if (in->hdr.type == EMBER_MSG_INTERP_ROW && in->interp_row.op == EMBER_INTERP_ROW_SET &&
	    ember_procs_check(c->broker->procs, in->interp_row.pid, c->now_ns, UINT64_MAX))
		return 0;
	return p->tables ? ember_tables_handle(p->tables, in) : -EPROTO;
}

static int on_flushed(struct ember_peer *p, const struct peer_call *c, const union ember_msg *in)
{
	(void)c;
	p->state = EMBER_PEER_ACTIVE;
	p->flushed = true;
	p->flush_status = in->flushed.status;
	return 0;
}

static int on_drain(struct ember_peer *p, const struct peer_call *c, const union ember_msg *in)
{
	(void)c, (void)in;
	p->drain_asked = true;
	return 0;
}

#define IN(state) (1u << (state))
#define LIVE      (IN(EMBER_PEER_ACTIVE) | IN(EMBER_PEER_FLUSHING))

typedef int peer_handler_fn(struct ember_peer *p, const struct peer_call *c,
                            const union ember_msg *in);

/*
 * What the symbolizer may send, and when (as OpenSSH's monitor table). A
 * message in any other state, or of a type not listed, ends the connection.
 * FLUSHED answers the one FLUSH asked: it is a violation at any other time.
 */
/* clang-format off */
static const struct peer_handler {
	unsigned int states;
	peer_handler_fn *handle;
} handlers[EMBER_MSG_TYPE_MAX] = {
	/*                           allowed in                  handler */
	[EMBER_MSG_HELLO]        = {IN(EMBER_PEER_AWAIT_HELLO), on_hello},
	[EMBER_MSG_BROKER_REQ]   = {LIVE,                       on_broker_req},
	[EMBER_MSG_UNWIND_TABLE] = {LIVE,                       on_unwind},
	[EMBER_MSG_UNWIND_ROWS]  = {LIVE,                       on_unwind},
	[EMBER_MSG_UNWIND_PROC]  = {LIVE,                       on_unwind},
	[EMBER_MSG_UNWIND_FILE]  = {LIVE,                       on_unwind},
	[EMBER_MSG_INTERP_ROW]   = {LIVE,                       on_unwind},
	[EMBER_MSG_FLUSHED]      = {IN(EMBER_PEER_FLUSHING),    on_flushed},
	[EMBER_MSG_DRAIN]        = {LIVE,                       on_drain},
};
/* clang-format on */

bool ember_peer_allows(enum ember_peer_state state, uint32_t type)
{
	return type < EMBER_MSG_TYPE_MAX && handlers[type].handle &&
	       (handlers[type].states & IN(state));
}

int ember_peer_on_readable(struct ember_peer *p, struct ember_broker *broker,
                           struct ember_drain *drain, uint64_t now_ns)
{
	const struct peer_call call = {broker, drain, now_ns};

	for (int i = 0; i < MAX_MESSAGES_PER_WAKEUP; i++) {
		union ember_msg msg;
		int nfds, err;

		/* max_fds 0: any descriptor the peer sends is closed and is a violation. */
		err = ember_msg_recv(p->sock, &msg, NULL, 0, &nfds);
		if (err == -EAGAIN)
			return 0;
		if (err == -ECONNRESET) {
			log_info("symbolizer (pid %d) disconnected", p->pid);
			return err;
		}
		if (err)
			return log_warn_errno(
			    err, "symbolizer (pid %d) broke the protocol (%m): disconnecting it",
			    p->pid);
		err = ember_peer_allows(p->state, msg.hdr.type)
		          ? handlers[msg.hdr.type].handle(p, &call, &msg)
		          : -EPROTO;
		if (err == -EPROTO)
			log_warn("symbolizer (pid %d) sent %s in state %d: disconnecting it",
			         p->pid, ember_msg_type_name(msg.hdr.type), p->state);
		if (err)
			return err;
	}
	return 0;
}

int ember_peer_send_flush(struct ember_peer *p, struct ember_drain *drain, bool final)
{
	union ember_msg out;
	int err;

	if (p->state != EMBER_PEER_ACTIVE)
		return p->state == EMBER_PEER_FLUSHING ? -EALREADY : -ENOTCONN;
	ember_drain_flush_lost(drain);
	ember_msg_init(&out, EMBER_MSG_FLUSH, 0);
	out.flush.head = p->ring.head;
	out.flush.final = final;
	out.flush.lost_unreported = ember_drain_lost_samples(drain->pending_lost);
	p->flushed = false;
	err = send_msg(p, &out, NULL, 0);
	if (!err) {
		memset(drain->pending_lost, 0, sizeof(drain->pending_lost));
		p->state = EMBER_PEER_FLUSHING;
	}
	ember_ring_notify(&p->ring);
	return err;
}
