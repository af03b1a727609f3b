/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer's broker client against a scripted collector on a
 * socketpair: a late reply to a request that timed out is dropped, not
 * taken for the answer and not a reason to disconnect; a reply with a
 * future id or a descriptor on an error is a protocol violation; a mapped
 * file is kept for the program's processes that are gone by the time their
 * frames are read.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/client/broker_client.h"

struct pair {
	int client, collector;
};

static struct pair make_pair(void)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	return (struct pair){.client = sv[0], .collector = sv[1]};
}

/* The collector's side: a reply for id carrying fd (or an error without one). */
static void reply(int sock, uint32_t id, int32_t error, int fd)
{
	union ember_msg m;

	ember_msg_init(&m, EMBER_MSG_BROKER_REPLY, 0);
	m.broker_reply.id = id;
	m.broker_reply.error = error;
	ck_assert_int_eq(ember_msg_send(sock, &m, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0), 0);
}

START_TEST(late_reply_is_dropped)
{
	struct pair p = make_pair();
	struct ember_broker_client c;
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(devnull, 0);
	ember_broker_client_init(&c, p.client);
	c.next_id = 5;                     /* requests 1-5 went before; 5 timed out here */
	reply(p.collector, 5, 0, devnull); /* its answer comes late */
	reply(p.collector, 6, 0, devnull); /* then the answer to this one */
	int fd = ember_broker_request(&c, EMBER_BROKER_MAPS, 1, 0, NULL);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(c.late_replies, 1);
	ck_assert(!c.closed);
	close(fd);
	/* The connection is still usable. */
	reply(p.collector, 7, -ENOENT, -1);
	ck_assert_int_eq(ember_broker_request(&c, EMBER_BROKER_MAPS, 1, 0, NULL), -ENOENT);
	ck_assert(!c.closed);
	close(devnull);
	close(p.client);
	close(p.collector);
}
END_TEST

START_TEST(future_id_or_fd_with_error_disconnects)
{
	struct pair p = make_pair();
	struct ember_broker_client c;
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

	ember_broker_client_init(&c, p.client);
	reply(p.collector, 9, 0, devnull); /* an id never asked for */
	ck_assert_int_eq(ember_broker_request(&c, EMBER_BROKER_MAPS, 1, 0, NULL), -EPROTO);
	ck_assert(c.closed);

	close(p.client);
	close(p.collector);
	p = make_pair();
	ember_broker_client_init(&c, p.client);
	reply(p.collector, 1, -EACCES, devnull); /* an error that carries a descriptor */
	ck_assert_int_eq(ember_broker_request(&c, EMBER_BROKER_MAPS, 1, 0, NULL), -EPROTO);
	ck_assert(c.closed);
	close(devnull);
	close(p.client);
	close(p.collector);
}
END_TEST

START_TEST(mapped_files_are_kept_for_gone_processes)
{
	struct pair p = make_pair();
	struct ember_broker_client c;
	int file = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), fd;
	struct stat a, b;
	uint32_t id = 0;

	ck_assert_int_ge(file, 0);
	ember_broker_client_init(&c, p.client);
	/* Opened through a living process: handed over, and kept. */
	reply(p.collector, ++id, 0, file);
	fd = ember_broker_mapped_file(&c, 10, 0x1000, 8, 1, 42);
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* Another process of the program, gone: the same file. */
	reply(p.collector, ++id, -ESRCH, -1);
	fd = ember_broker_mapped_file(&c, 11, 0x2000, 8, 1, 42);
	ck_assert_int_ge(fd, 0);
	ck_assert(!fstat(fd, &a) && !fstat(file, &b) && a.st_ino == b.st_ino);
	close(fd);
	ck_assert_uint_eq(c.kept_served, 1);
	/* Not another file (device or inode), and not for a stall. */
	reply(p.collector, ++id, -ESRCH, -1);
	ck_assert_int_eq(ember_broker_mapped_file(&c, 11, 0x2000, 8, 2, 42), -ESRCH);
	reply(p.collector, ++id, -EPERM, -1);
	ck_assert_int_eq(ember_broker_mapped_file(&c, 11, 0x2000, 8, 1, 43), -EPERM);
	reply(p.collector, ++id, -ETIMEDOUT, -1);
	ck_assert_int_eq(ember_broker_mapped_file(&c, 11, 0x2000, 8, 1, 42), -ETIMEDOUT);
	/* Bounded: as many files more push the least recently used out. */
	for (uint64_t ino = 100; ino < 100 + EMBER_BROKER_KEPT_FILES; ino++) {
		reply(p.collector, ++id, 0, file);
		fd = ember_broker_mapped_file(&c, 12, 0x3000, 8, 1, ino);
		ck_assert_int_ge(fd, 0);
		close(fd);
	}
	reply(p.collector, ++id, -ESRCH, -1);
	ck_assert_int_eq(ember_broker_mapped_file(&c, 11, 0x2000, 8, 1, 42), -ESRCH);
	reply(p.collector, ++id, -ENOENT, -1);
	fd = ember_broker_mapped_file(&c, 11, 0x2000, 8, 1, 100 + EMBER_BROKER_KEPT_FILES - 1);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert(!c.closed);
	for (int i = 0; i < EMBER_BROKER_KEPT_FILES; i++)
		if (c.kept[i].ino)
			close(c.kept[i].fd);
	close(file);
	close(p.client);
	close(p.collector);
}
END_TEST

static Suite *broker_client_suite(void)
{
	Suite *s = suite_create("broker_client");
	TCase *tc = tcase_create("replies");

	tcase_add_test(tc, late_reply_is_dropped);
	tcase_add_test(tc, future_id_or_fd_with_error_disconnects);
	tcase_add_test(tc, mapped_files_are_kept_for_gone_processes);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(broker_client_suite)
