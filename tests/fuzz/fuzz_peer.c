// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the collector's side of a symbolizer connection (collector/peer.c), every
 * state against every message type. A series of steps on a real socket pair: the collector
 * asks for a flush (ACTIVE -> FLUSHING), or the symbolizer sends a message of a chosen type
 * with the fuzzer's bytes (its header valid, or the fuzzer's bytes too), sometimes with a
 * descriptor beside it. Checked after each step:
 *   - the dispatch table is the protocol's (proto.h), written here on its own: HELLO only
 *     before the handshake, broker requests and unwind messages only after it, FLUSHED only
 *     while a flush is asked, nothing else ever; a message out of place, a header that does
 *     not check, a descriptor from the symbolizer: the connection ends (-EPROTO or -EBADMSG);
 *   - a HELLO taken is answered with WELCOME and the ring's three descriptors, and the peer
 *     is ACTIVE; a FLUSHED taken makes it ACTIVE again;
 *   - every broker request is answered (an id the symbolizer sent), a descriptor read-only;
 *   - the unwinder's maps (stood in for: fake_maps.h) hold only what the unwinder can follow,
 *     and after a connection ends they are empty.
 * Interpreter rows (INTERP_ROW) are not sent yet: fuzz_table_loader's maps stand in for
 * the unwinder's, not for the walkers'.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector/peer.h"
#include "collector/ring_drain.h"
#include "fake_maps.h"
#include "tests/unit/peer_spec.h"

#define SAMPLED_PID 42 /* a process the collector has seen: its UNWIND_PROC is taken */

static void finding(const char *what, long a)
{
	fprintf(stderr, "fuzz_peer: %s (%ld)\n", what, a);
	abort();
}

struct conn {
	int sv[2];
	struct ember_peer peer;
	struct ember_procs procs;
	struct ember_broker broker;
	struct ember_drain drain;
	struct ember_tables tables;
};

static void conn_open(struct conn *c)
{
	struct ember_peer_config pc = {.ring_size = 1 << 16, .welcome.sample_hz = 19};

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, c->sv))
		finding("no socketpair", errno);
	ember_peer_init(&c->peer, &pc);
	c->peer.tables = &c->tables;
	ember_peer_attach(&c->peer, c->sv[0], (int)getpid());
	ember_broker_new_peer(&c->broker);
}

/* The symbolizer's side reads what the collector sent; returns the types seen (a bit each). */
static uint32_t drain_replies(struct conn *c, const uint32_t *ids, size_t nids, bool *welcomed)
{
	uint32_t seen = 0;
	union ember_msg m;
	int fds[4], n;

	while (ember_msg_recv(c->sv[1], &m, fds, 4, &n) == 0) {
		seen |= 1u << m.hdr.type;
		if (m.hdr.type == EMBER_MSG_WELCOME) {
			if (n != 3)
				finding("WELCOME without the ring's three descriptors", n);
			*welcomed = true;
		} else if (m.hdr.type == EMBER_MSG_BROKER_REPLY) {
			bool asked = false;

			for (size_t i = 0; i < nids; i++)
				asked |= ids[i] == m.broker_reply.id;
			if (!asked)
				finding("a reply to a request never sent", m.broker_reply.id);
			if (n > 1 || (n == 1 && m.broker_reply.error))
				finding("a reply with a descriptor and an error", n);
			if (n == 1 && (fcntl(fds[0], F_GETFL) & O_ACCMODE) != O_RDONLY)
				finding("a descriptor handed out not read-only", fds[0]);
		} else if (n) {
			finding("descriptors beside a message", m.hdr.type);
		}
		for (int i = 0; i < n; i++)
			close(fds[i]);
	}
	return seen;
}

static void conn_close(struct conn *c)
{
	ember_peer_detach(&c->peer, &c->drain);
	maps_check_empty();
	close(c->sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool table_checked;
	struct conn c;
	uint32_t ids[64];
	size_t at = 0, nids = 0;
	uint64_t now = 1000000000;
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (!table_checked) {
		for (int s = 0; s < EMBER_PEER_STATE_MAX; s++)
			for (uint32_t t = 0; t < EMBER_MSG_TYPE_MAX + 4; t++)
				if (ember_peer_allows((enum ember_peer_state)s, t) !=
				    peer_spec_allows((enum ember_peer_state)s, t))
					finding("the dispatch table is not the protocol's", (long)(s * 100 + t));
		table_checked = true;
	}
	maps_clear();
	if (devnull < 0 || ember_procs_init(&c.procs, 64) ||
	    ember_tables_init(&c.tables, FD_TABLES, FD_BLOCKS, FD_FILES, fake_proc_fds, ROW_BUDGET))
		finding("cannot set up", errno);
	ember_broker_init(&c.broker, &c.procs);
	ember_drain_init(&c.drain, &c.procs);
	ember_procs_note(&c.procs, SAMPLED_PID, 0, false);
	conn_open(&c);
	while (at < size) {
		uint8_t op = data[at++];
		enum ember_peer_state before = c.peer.state;
		bool welcomed = false, raw = op & 0x40, with_fd = (op & 0xc0) == 0xc0;
		union ember_msg m;
		uint16_t type;
		size_t len, take;
		int err;

		if ((op & 3) == 0) {
			/* The collector asks for a flush (refused unless ACTIVE). */
			err = ember_peer_send_flush(&c.peer, &c.drain, op & 4);
			if (!err && (before != EMBER_PEER_ACTIVE || c.peer.state != EMBER_PEER_FLUSHING))
				finding("a flush in the wrong state", before);
			if (!(drain_replies(&c, ids, nids, &welcomed) & (1u << EMBER_MSG_FLUSH)) && !err)
				finding("a flush asked but not sent", before);
			continue;
		}
		if (at >= size)
			break;
		type = (uint16_t)(data[at++] % (EMBER_MSG_TYPE_MAX + 2));
		if (type == EMBER_MSG_INTERP_ROW)
			type = EMBER_MSG_UNWIND_PROC; /* see above */
		len = ember_msg_size(type);
		if (!len)
			len = sizeof(m.hdr) + 8; /* a type the protocol does not have */
		ember_msg_init(&m, type, (uint32_t)at);
		take = len - sizeof(m.hdr);
		if (raw)
			take = len; /* the header too: rarely a valid one */
		if (take > size - at)
			take = size - at;
		memcpy((char *)&m + (raw ? 0 : sizeof(m.hdr)), data + at, take);
		at += take;
		if (!raw)
			m.hdr.length = (uint32_t)len;
		if (type == EMBER_MSG_BROKER_REQ && nids < 64)
			ids[nids++] = m.broker_req.id;
		if (!with_fd && send(c.sv[1], &m, len, 0) != (ssize_t)len)
			finding("cannot send", errno);
		if (with_fd) {
			/* With a descriptor. */
			char cbuf[CMSG_SPACE(sizeof(int))] = {0};
			struct iovec iov = {.iov_base = &m, .iov_len = len};
			struct msghdr mh = {.msg_iov = &iov,
			                    .msg_iovlen = 1,
			                    .msg_control = cbuf,
			                    .msg_controllen = sizeof(cbuf)};
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &devnull, sizeof(int));
			if (sendmsg(c.sv[1], &mh, 0) != (ssize_t)len)
				finding("cannot send with a descriptor", errno);
		}
		err = ember_peer_on_readable(&c.peer, &c.broker, &c.drain, now += 1000000);
		drain_replies(&c, ids, nids, &welcomed);
		maps_check(&c.tables);
		if (with_fd || ember_msg_validate(&m, len)) {
			if (!err)
				finding("a descriptor or a bad header was taken", type);
		} else if (!peer_spec_allows(before, type)) {
			if (err != -EPROTO)
				finding("a message out of place did not end the connection", type);
		} else if (err) {
			/* Allowed, but its content refused (a version, a row): the connection ends. */
		} else if (type == EMBER_MSG_HELLO) {
			if (!welcomed || c.peer.state != EMBER_PEER_ACTIVE)
				finding("HELLO taken without WELCOME", c.peer.state);
		} else if (type == EMBER_MSG_FLUSHED) {
			if (c.peer.state != EMBER_PEER_ACTIVE || !c.peer.flushed)
				finding("FLUSHED taken, still flushing", c.peer.state);
		} else if (c.peer.state != before) {
			finding("the state changed", type);
		}
		if (welcomed && type != EMBER_MSG_HELLO)
			finding("WELCOME to something else than HELLO", type);
		if (err) {
			/* The connection ends; a new symbolizer connects. */
			conn_close(&c);
			conn_open(&c);
			nids = 0;
		}
	}
	conn_close(&c);
	ember_tables_free(&c.tables);
	ember_procs_free(&c.procs);
	close(devnull);
	return 0;
}
