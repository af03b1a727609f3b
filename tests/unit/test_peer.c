// SPDX-License-Identifier: Apache-2.0
/* The collector's side of a connection: handshake, version mismatch, hostile messages,
 * and drops turning into LOST records. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_main.h"
#include "collector/peer.h"
#include "collector/ring_drain.h"
#include "ipc/ring_consumer.h"
#include "peer_spec.h"

static int sv[2];
static struct ember_peer peer;
static struct ember_procs procs;
static struct ember_broker broker;
static struct ember_drain drain;

static void setup(void)
{
	struct ember_peer_config pc = {.ring_size = 1 << 16, .welcome.sample_hz = 19};

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_int_eq(ember_procs_init(&procs, 64), 0);
	ember_broker_init(&broker, &procs);
	ember_drain_init(&drain, &procs);
	ember_peer_init(&peer, &pc);
	ember_peer_attach(&peer, sv[0], (int)getpid());
}

static void teardown(void)
{
	ember_peer_detach(&peer, &drain);
	ember_procs_free(&procs);
	close(sv[1]);
}

static void send_hello(uint32_t records_version)
{
	union ember_msg m;

	ember_msg_init(&m, EMBER_MSG_HELLO, 1);
	m.hello.records_version = records_version;
	ck_assert_int_eq(ember_msg_send(sv[1], &m, NULL, 0), 0);
}

START_TEST(handshake_hands_over_the_ring)
{
	union ember_msg m;
	int fds[3], n;

	send_hello(EMBER_RECORDS_VERSION);
	ck_assert_int_eq(ember_peer_on_readable(&peer, &broker, &drain, 0), 0);
	ck_assert_int_eq(peer.state, EMBER_PEER_ACTIVE);
	ck_assert_ptr_eq(drain.ring, &peer.ring);
	ck_assert_int_eq(ember_msg_recv(sv[1], &m, fds, 3, &n), 0);
	ck_assert_uint_eq(m.hdr.type, EMBER_MSG_WELCOME);
	ck_assert_int_eq(n, 3);
	ck_assert_uint_eq(m.welcome.sample_hz, 19);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}
END_TEST

START_TEST(version_mismatch_is_rejected)
{
	union ember_msg m;
	int n;

	send_hello(EMBER_RECORDS_VERSION + 1);
	ck_assert_int_eq(ember_peer_on_readable(&peer, &broker, &drain, 0), -EPROTONOSUPPORT);
	ck_assert_int_eq(ember_msg_recv(sv[1], &m, NULL, 0, &n), 0);
	ck_assert_uint_eq(m.hdr.type, EMBER_MSG_REJECT);
	ck_assert_ptr_nonnull(strstr(m.reject.reason, "version"));
	ck_assert_ptr_null(drain.ring);
}
END_TEST

START_TEST(messages_before_hello_end_the_connection)
{
	union ember_msg m;

	ember_msg_init(&m, EMBER_MSG_BROKER_REQ, 1);
	ck_assert_int_eq(ember_msg_send(sv[1], &m, NULL, 0), 0);
	ck_assert_int_eq(ember_peer_on_readable(&peer, &broker, &drain, 0), -EPROTO);
}
END_TEST

START_TEST(descriptors_from_the_peer_end_the_connection)
{
	union ember_msg m;
	int fd = open("/dev/null", O_RDONLY);

	ember_msg_init(&m, EMBER_MSG_HELLO, 1);
	m.hello.records_version = EMBER_RECORDS_VERSION;
	ck_assert_int_eq(ember_msg_send(sv[1], &m, &fd, 1), 0);
	ck_assert_int_eq(ember_peer_on_readable(&peer, &broker, &drain, 0), -EPROTO);
	ck_assert_int_ne(peer.state, EMBER_PEER_ACTIVE);
	close(fd);
}
END_TEST

START_TEST(broker_refuses_unseen_pids)
{
	union ember_msg m;
	int fds[3], n;

	send_hello(EMBER_RECORDS_VERSION);
	ck_assert_int_eq(ember_peer_on_readable(&peer, &broker, &drain, 0), 0);
	ck_assert_int_eq(ember_msg_recv(sv[1], &m, fds, 3, &n), 0);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	ember_msg_init(&m, EMBER_MSG_BROKER_REQ, 2);
	m.broker_req.id = 5;
	m.broker_req.what = EMBER_BROKER_MAPS;
	m.broker_req.pid = (uint32_t)getpid();
	ck_assert_int_eq(ember_msg_send(sv[1], &m, NULL, 0), 0);
	ck_assert_int_eq(ember_peer_on_readable(&peer, &broker, &drain, 0), 0);
	ck_assert_int_eq(ember_msg_recv(sv[1], &m, fds, 1, &n), 0);
	ck_assert_uint_eq(m.broker_reply.id, 5);
	ck_assert_int_eq(m.broker_reply.error, -EPERM);
	ck_assert_int_eq(n, 0);
	/* Once sampled, the same request is served with a read-only descriptor. */
	ck_assert_int_eq(ember_procs_note(&procs, (uint32_t)getpid(), 0, false), 0);
	ember_msg_init(&m, EMBER_MSG_BROKER_REQ, 3);
	m.broker_req.id = 6;
	m.broker_req.what = EMBER_BROKER_MAPS;
	m.broker_req.pid = (uint32_t)getpid();
	ck_assert_int_eq(ember_msg_send(sv[1], &m, NULL, 0), 0);
	ck_assert_int_eq(ember_peer_on_readable(&peer, &broker, &drain, 1), 0);
	ck_assert_int_eq(ember_msg_recv(sv[1], &m, fds, 1, &n), 0);
	ck_assert_int_eq(m.broker_reply.error, 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(fcntl(fds[0], F_GETFL) & O_ACCMODE, O_RDONLY);
	close(fds[0]);
}
END_TEST

static void drain_welcome(void)
{
	union ember_msg m;
	int fds[3], n;

	ck_assert_int_eq(ember_msg_recv(sv[1], &m, fds, 3, &n), 0);
	ck_assert_uint_eq(m.hdr.type, EMBER_MSG_WELCOME);
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* Brings the fixture's peer into state. */
static void enter(enum ember_peer_state state)
{
	union ember_msg m;
	int n;

	if (state == EMBER_PEER_AWAIT_HELLO)
		return;
	send_hello(EMBER_RECORDS_VERSION);
	ck_assert_int_eq(ember_peer_on_readable(&peer, &broker, &drain, 0), 0);
	drain_welcome();
	if (state == EMBER_PEER_FLUSHING) {
		ck_assert_int_eq(ember_peer_send_flush(&peer, &drain, true), 0);
		ck_assert_int_eq(ember_msg_recv(sv[1], &m, NULL, 0, &n), 0);
		ck_assert_uint_eq(m.hdr.type, EMBER_MSG_FLUSH);
		/* One flush at a time. */
		ck_assert_int_eq(ember_peer_send_flush(&peer, &drain, true), -EALREADY);
	}
	ck_assert_int_eq(peer.state, state);
}

START_TEST(dispatch_table_by_state)
{
	enum ember_peer_state state = (enum ember_peer_state)_i;

	for (uint32_t type = 0; type <= EMBER_MSG_TYPE_MAX; type++)
		ck_assert_msg(ember_peer_allows(state, type) == peer_spec_allows(state, type),
		              "state %d, %s", state, ember_msg_type_name((uint16_t)type));
	/* And the peer acts on it: each type a symbolizer could send, in this state. */
	for (uint32_t type = 1; type < EMBER_MSG_TYPE_MAX; type++) {
		union ember_msg m;
		int err;

		teardown();
		setup();
		enter(state);
		ember_msg_init(&m, (enum ember_msg_type)type, 2);
		if (type == EMBER_MSG_HELLO)
			m.hello.records_version = EMBER_RECORDS_VERSION;
		if (type == EMBER_MSG_BROKER_REQ) {
			m.broker_req.what = EMBER_BROKER_MAPS;
			m.broker_req.pid = (uint32_t)getpid(); /* never sampled */
		}
		ck_assert_int_eq(ember_msg_send(sv[1], &m, NULL, 0), 0);
		err = ember_peer_on_readable(&peer, &broker, &drain, 0);
		if (!peer_spec_allows(state, type)) {
			ck_assert_msg(err == -EPROTO, "%s in state %d: %d",
			              ember_msg_type_name((uint16_t)type), state, err);
			continue;
		}
		switch (type) {
		case EMBER_MSG_HELLO:
			ck_assert_int_eq(err, 0);
			ck_assert_int_eq(peer.state, EMBER_PEER_ACTIVE);
			drain_welcome();
			break;
		case EMBER_MSG_BROKER_REQ: {
			int n;

			/* Served (refused: the pid was never sampled), the connection kept. */
			ck_assert_int_eq(err, 0);
			ck_assert_int_eq(ember_msg_recv(sv[1], &m, NULL, 0, &n), 0);
			ck_assert_uint_eq(m.hdr.type, EMBER_MSG_BROKER_REPLY);
			ck_assert_int_eq(m.broker_reply.error, -EPERM);
			ck_assert_int_eq(peer.state, state);
			break;
		}
		case EMBER_MSG_FLUSHED:
			ck_assert_int_eq(err, 0);
			ck_assert(peer.flushed);
			ck_assert_int_eq(peer.state, EMBER_PEER_ACTIVE);
			/* A second FLUSHED, not asked for, ends the connection. */
			ember_msg_init(&m, EMBER_MSG_FLUSHED, 3);
			ck_assert_int_eq(ember_msg_send(sv[1], &m, NULL, 0), 0);
			ck_assert_int_eq(ember_peer_on_readable(&peer, &broker, &drain, 0),
			                 -EPROTO);
			break;
		case EMBER_MSG_DRAIN:
			/* Taken, the connection kept: the run loop drains now. */
			ck_assert_int_eq(err, 0);
			ck_assert(peer.drain_asked);
			ck_assert_int_eq(peer.state, state);
			peer.drain_asked = false;
			break;
		default:
			/* Unwind messages: allowed, but this peer takes no tables (tables NULL). */
			ck_assert_int_eq(err, -EPROTO);
			ck_assert_ptr_null(peer.tables);
		}
	}
}
END_TEST

static size_t fake_sample(unsigned char *buf, uint32_t tgid)
{
	struct ember_sample_event s = {
	    .kind = EMBER_EV_SAMPLE, .tgid = tgid, .tid = tgid, .kstack_len = 2, .ustack_len = 2};

	memcpy(buf, &s, sizeof(s));
	memset(buf + sizeof(s), 0x11, 32);
	return sizeof(s) + 32;
}

START_TEST(drops_become_lost_records)
{
	_Alignas(8) unsigned char buf[512];
	struct ember_ring_consumer cons;
	uint64_t drops[EMBER_DROP_MAX] = {0};
	uint64_t lost_total = 0, samples = 0;
	size_t len = fake_sample(buf, (uint32_t)getpid());
	union ember_msg m;
	int fds[3], n, r;
	uint16_t type;

	/* No consumer yet: counted as lost, reported once one connects. */
	ember_drain_on_sample(&drain, buf, len);
	ck_assert_uint_eq(drain.lost[EMBER_LOST_NO_CONSUMER], 1);
	send_hello(EMBER_RECORDS_VERSION);
	ck_assert_int_eq(ember_peer_on_readable(&peer, &broker, &drain, 0), 0);
	ck_assert_int_eq(ember_msg_recv(sv[1], &m, fds, 3, &n), 0);
	ck_assert_int_eq(ember_ring_consumer_open(&cons, fds[0], fds[1]), 0);
	/* Fill the ring past full, plus kernel-side drops. */
	for (int i = 0; i < 2000; i++)
		ember_drain_on_sample(&drain, buf, len);
	drops[EMBER_DROP_RINGBUF_FULL] = 7;
	ember_drain_account_bpf_drops(&drain, drops);
	ck_assert_uint_gt(drain.lost[EMBER_LOST_SAMPLE_RING], 0);
	/* A malformed kernel record is counted, not forwarded. */
	ember_drain_on_sample(&drain, buf, len - 8);
	ck_assert_uint_eq(drain.malformed, 1);
	/* Read everything, then let the pending LOST records in. */
	for (int round = 0; round < 3; round++) {
		while ((r = ember_ring_read(&cons, &type, buf, sizeof(buf))) >= 0) {
			if (type == EMBER_REC_SAMPLE)
				samples++;
			else if (type == EMBER_REC_LOST)
				lost_total += ((struct ember_rec_lost *)buf)->count;
		}
		ember_ring_release(&cons);
		ember_drain_flush_lost(&drain);
	}
	ck_assert_uint_eq(samples, drain.samples);
	/* Every sample is either delivered or reported lost. */
	ck_assert_uint_eq(samples + lost_total, 2001 + 7 + 1);
	ember_ring_consumer_close(&cons);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}
END_TEST

static Suite *peer_suite(void)
{
	Suite *s = suite_create("peer");
	TCase *tc = tcase_create("peer");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, handshake_hands_over_the_ring);
	tcase_add_test(tc, version_mismatch_is_rejected);
	tcase_add_test(tc, messages_before_hello_end_the_connection);
	tcase_add_test(tc, descriptors_from_the_peer_end_the_connection);
	tcase_add_test(tc, broker_refuses_unseen_pids);
	tcase_add_test(tc, drops_become_lost_records);
	tcase_add_loop_test(tc, dispatch_table_by_state, EMBER_PEER_AWAIT_HELLO,
	                    EMBER_PEER_STATE_MAX);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(peer_suite)
