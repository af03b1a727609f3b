// SPDX-License-Identifier: Apache-2.0
/* Control-socket messages: validation of size, magic, version, type; descriptor refusal. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_main.h"
#include "ipc/proto.h"

static int sv[2];

static void setup(void)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

static void teardown(void)
{
	close(sv[0]);
	close(sv[1]);
}

START_TEST(roundtrip_with_descriptors)
{
	union ember_msg out, in;
	int fds[3], got[3], n = 0;

	ember_msg_init(&out, EMBER_MSG_WELCOME, 7);
	out.welcome.sample_hz = 99;
	for (int i = 0; i < 3; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ck_assert_int_eq(ember_msg_send(sv[0], &out, fds, 3), 0);
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, got, 3, &n), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_uint_eq(in.hdr.type, EMBER_MSG_WELCOME);
	ck_assert_uint_eq(in.welcome.sample_hz, 99);
	ck_assert_uint_eq(in.hdr.seq, 7);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_ge(fcntl(got[i], F_GETFD), 0);
		close(got[i]);
		close(fds[i]);
	}
}
END_TEST

START_TEST(failed_receive_leaves_no_descriptor)
{
	union ember_msg out, in;
	int fds[2] = {open("/dev/null", O_RDONLY | O_CLOEXEC),
	              open("/dev/null", O_RDONLY | O_CLOEXEC)};
	int got = -1, n = -1;

	/* One descriptor too many: the one that fit is closed too, and its place is -1. */
	ember_msg_init(&out, EMBER_MSG_BROKER_REPLY, 1);
	ck_assert_int_eq(ember_msg_send(sv[0], &out, fds, 2), 0);
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, &got, 1, &n), -EPROTO);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(got, -1);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

START_TEST(descriptors_refused_when_none_expected)
{
	union ember_msg out, in;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), n = -1;

	ember_msg_init(&out, EMBER_MSG_HELLO, 1);
	ck_assert_int_eq(ember_msg_send(sv[0], &out, &fd, 1), 0);
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, NULL, 0, &n), -EPROTO);
	ck_assert_int_eq(n, 0);
	close(fd);
}
END_TEST

static int send_raw(const void *buf, size_t len)
{
	return (int)send(sv[0], buf, len, 0);
}

START_TEST(truncated_oversized_and_malformed_are_rejected)
{
	union ember_msg m, in;
	unsigned char big[EMBER_MSG_MAX + 100];
	int n;

	ember_msg_init(&m, EMBER_MSG_HELLO, 1);
	/* Truncated. */
	send_raw(&m, sizeof(m.hdr) + 2);
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, NULL, 0, &n), -EBADMSG);
	/* Shorter than a header. */
	send_raw(&m, 3);
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, NULL, 0, &n), -EBADMSG);
	/* Oversized: larger than any message (MSG_TRUNC). */
	memset(big, 0, sizeof(big));
	memcpy(big, &m, sizeof(m.hello));
	send_raw(big, sizeof(big));
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, NULL, 0, &n), -EBADMSG);
	/* Wrong magic. */
	m.hdr.magic ^= 1;
	send_raw(&m, sizeof(m.hello));
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, NULL, 0, &n), -EPROTO);
	m.hdr.magic ^= 1;
	/* Length field disagrees with the packet. */
	m.hdr.length += 8;
	send_raw(&m, sizeof(m.hello));
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, NULL, 0, &n), -EBADMSG);
	m.hdr.length -= 8;
	/* Unknown type. */
	m.hdr.type = 999;
	send_raw(&m, sizeof(m.hello));
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, NULL, 0, &n), -EBADMSG);
	/* Nothing left over: the next valid message still works. */
	ember_msg_init(&m, EMBER_MSG_HELLO, 2);
	ck_assert_int_eq(ember_msg_send(sv[0], &m, NULL, 0), 0);
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, NULL, 0, &n), 0);
}
END_TEST

START_TEST(version_mismatch_is_a_protocol_error)
{
	union ember_msg m, in;
	int n;

	ember_msg_init(&m, EMBER_MSG_HELLO, 1);
	m.hdr.version = EMBER_PROTO_VERSION + 1;
	send_raw(&m, sizeof(m.hello));
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, NULL, 0, &n), -EPROTO);
}
END_TEST

START_TEST(closed_peer_and_empty_socket)
{
	union ember_msg in;
	int n;

	ck_assert_int_eq(ember_msg_recv(sv[1], &in, NULL, 0, &n), -EAGAIN);
	close(sv[0]);
	sv[0] = open("/dev/null", O_RDONLY);
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, NULL, 0, &n), -ECONNRESET);
}
END_TEST

START_TEST(every_type_has_a_size)
{
	for (uint16_t t = 1; t < EMBER_MSG_TYPE_MAX; t++) {
		union ember_msg m;

		ck_assert_uint_gt(ember_msg_size(t), sizeof(struct ember_msg_hdr) - 1);
		ember_msg_init(&m, (enum ember_msg_type)t, 0);
		ck_assert_int_eq(ember_msg_validate(&m, ember_msg_size(t)), 0);
	}
	ck_assert_uint_eq(ember_msg_size(0), 0);
	ck_assert_uint_eq(ember_msg_size(EMBER_MSG_TYPE_MAX), 0);
}
END_TEST

/* An interpreter row's message ends in its row: between its header and the largest row. */
START_TEST(interp_row_sizes)
{
	uint8_t row[EMBER_INTERP_MAX_ROW + 1] = {1, 2, 3};
	union ember_msg m, in;
	int n;

	ck_assert_int_eq(
	    ember_msg_interp_row(&m, 42, EMBER_RUNTIME_PYTHON, EMBER_INTERP_ROW_SET, row, 24), 0);
	ck_assert_uint_eq(m.hdr.length, EMBER_MSG_INTERP_ROW_HEADER + 24);
	ck_assert_int_eq(ember_msg_send(sv[0], &m, NULL, 0), 0);
	ck_assert_int_eq(ember_msg_recv(sv[1], &in, NULL, 0, &n), 0);
	ck_assert_uint_eq(in.interp_row.pid, 42);
	ck_assert_uint_eq(in.interp_row.runtime, EMBER_RUNTIME_PYTHON);
	ck_assert_uint_eq(in.interp_row.row[2], 3);
	/* REMOVE: the header alone. */
	ck_assert_int_eq(
	    ember_msg_interp_row(&m, 42, EMBER_RUNTIME_PYTHON, EMBER_INTERP_ROW_REMOVE, NULL, 0),
	    0);
	ck_assert_int_eq(ember_msg_validate(&m, EMBER_MSG_INTERP_ROW_HEADER), 0);
	/* Shorter than its header, longer than the largest row: refused. */
	m.hdr.length = EMBER_MSG_INTERP_ROW_HEADER - 4;
	ck_assert_int_eq(ember_msg_validate(&m, EMBER_MSG_INTERP_ROW_HEADER - 4), -EBADMSG);
	m.hdr.length = sizeof(m.interp_row) + 8;
	ck_assert_int_eq(ember_msg_validate(&m, sizeof(m.interp_row) + 8), -EBADMSG);
	ck_assert_int_eq(ember_msg_interp_row(&m, 42, EMBER_RUNTIME_PYTHON, EMBER_INTERP_ROW_SET,
	                                      row, sizeof(row)),
	                 -EINVAL);
}
END_TEST

START_TEST(init_from_and_broker_reply)
{
	struct ember_msg_broker_req req = {.hdr = {.magic = 1, .type = EMBER_MSG_HELLO, .seq = 5},
	                                   .id = 9,
	                                   .pid = 42,
	                                   .arg = "exe"};
	struct ember_broker_file f = {.flags = EMBER_BROKER_STALLED, .dev_major = 8};
	union ember_msg m;

	/* The header is the type's, whatever the body's says; the body is copied whole. */
	ember_msg_init_from(&m, EMBER_MSG_BROKER_REQ, 3, &req);
	ck_assert_int_eq(ember_msg_validate(&m, sizeof(m.broker_req)), 0);
	ck_assert_uint_eq(m.hdr.type, EMBER_MSG_BROKER_REQ);
	ck_assert_uint_eq(m.hdr.seq, 3);
	ck_assert_uint_eq(m.broker_req.id, 9);
	ck_assert_uint_eq(m.broker_req.pid, 42);
	ck_assert_str_eq(m.broker_req.arg, "exe");
	/* A descriptor says error 0; a negative errno is the error. */
	ember_msg_broker_reply(&m, 4, 9, 7, &f);
	ck_assert_int_eq(ember_msg_validate(&m, sizeof(m.broker_reply)), 0);
	ck_assert_uint_eq(m.hdr.seq, 4);
	ck_assert_uint_eq(m.broker_reply.id, 9);
	ck_assert_int_eq(m.broker_reply.error, 0);
	ck_assert_uint_eq(m.broker_reply.file.dev_major, 8);
	ember_msg_broker_reply(&m, 4, 9, -ETIMEDOUT, &f);
	ck_assert_int_eq(m.broker_reply.error, -ETIMEDOUT);
	ck_assert_uint_eq(m.broker_reply.file.flags, EMBER_BROKER_STALLED);
}
END_TEST

static Suite *proto_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *tc = tcase_create("proto");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, roundtrip_with_descriptors);
	tcase_add_test(tc, descriptors_refused_when_none_expected);
	tcase_add_test(tc, failed_receive_leaves_no_descriptor);
	tcase_add_test(tc, truncated_oversized_and_malformed_are_rejected);
	tcase_add_test(tc, version_mismatch_is_a_protocol_error);
	tcase_add_test(tc, closed_peer_and_empty_socket);
	tcase_add_test(tc, every_type_has_a_size);
	tcase_add_test(tc, interp_row_sizes);
	tcase_add_test(tc, init_from_and_broker_reply);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(proto_suite)
