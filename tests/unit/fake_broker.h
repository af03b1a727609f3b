/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A collector's broker for unit tests, on a thread at the other end of a
 * socket pair: it answers the symbolizer's requests as the real one would,
 * from this test process itself (its maps, its mapped files, its
 * executable) or from canned texts (a process's maps, kallsyms, a cgroup
 * list), and counts the requests by kind.
 */
#ifndef EMBER_TESTS_FAKE_BROKER_H
#define EMBER_TESTS_FAKE_BROKER_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "ipc/proto.h"
#include "symbolizer/client/broker_client.h"
#include "symbolizer/process/maps_parser.h"

struct fake_broker {
	struct ember_broker_client client; /* the symbolizer's end */
	int sock;                          /* the broker's end */
	pthread_t thread;
	/* What it answers; set before the request is made. */
	const char *maps_text;     /* NULL: this process's own /proc/self/maps */
	int maps_error;            /* answer MAPS with this (e.g. -ESRCH: the process is gone) */
	int file_error;            /* answer MAPPED_FILE with this */
	const char *kallsyms_text; /* NULL: -ENOENT */
	const char *cgroup_text;   /* NULL: -ENOENT */
	const char *perf_map_path; /* PERF_MAP opens this file; NULL: -ENOENT */
	atomic_int proc_file_busy; /* answer PROC_FILE with -EAGAIN this many more times */
	atomic_uint requests[EMBER_BROKER_WHAT_MAX];
};

static inline int fake_broker_memfd(const char *text)
{
	int fd = memfd_create("fake-broker", MFD_CLOEXEC);
	size_t len = strlen(text);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	return fd;
}

/* The file this process maps at start, opened as the broker opens a mapped file. */
static inline int fake_broker_mapped_file(uint64_t start)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	struct ember_maps m;
	const struct ember_map_entry *e;
	char *text = NULL;
	long len = ember_maps_read_fd(fd, &text);
	int out = -ENOENT;

	close(fd);
	if (len < 0 || ember_maps_parse(text, (size_t)len, &m)) {
		free(text);
		return -EIO;
	}
	e = ember_maps_find(&m, start);
	if (e && e->start == start && e->kind == EMBER_MAP_FILE) {
		out = open(ember_maps_path(&m, e), O_RDONLY | O_CLOEXEC);
		if (out < 0)
			out = -errno;
	}
	ember_maps_free(&m);
	free(text);
	return out;
}

static inline int fake_broker_answer(struct fake_broker *b, const struct ember_msg_broker_req *r)
{
	switch (r->what) {
	case EMBER_BROKER_MAPS:
		if (b->maps_error)
			return b->maps_error;
		return b->maps_text ? fake_broker_memfd(b->maps_text)
		                    : open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	case EMBER_BROKER_MAPPED_FILE:
		return b->file_error ? b->file_error : fake_broker_mapped_file(r->addr);
	case EMBER_BROKER_KALLSYMS:
		return b->kallsyms_text ? fake_broker_memfd(b->kallsyms_text) : -ENOENT;
	case EMBER_BROKER_PROC_FILE:
		if (atomic_load(&b->proc_file_busy) > 0) {
			atomic_fetch_sub(&b->proc_file_busy, 1);
			return -EAGAIN;
		}
		if (!strcmp(r->arg, "cgroup"))
			return b->cgroup_text ? fake_broker_memfd(b->cgroup_text) : -ENOENT;
		if (!strcmp(r->arg, "exe"))
			return open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
		return -EPERM;
	case EMBER_BROKER_PERF_MAP: {
		int fd = b->perf_map_path ? open(b->perf_map_path, O_RDONLY | O_CLOEXEC) : -1;

		return fd >= 0 ? fd : -ENOENT;
	}
	default:
		return -ENOENT;
	}
}

static inline void *fake_broker_run(void *arg)
{
	struct fake_broker *b = arg;
	union ember_msg m;
	int nfds, err;

	for (;;) {
		struct pollfd p = {.fd = b->sock, .events = POLLIN};
		struct ember_msg_broker_req r;
		struct stat st;
		int fd;

		err = ember_msg_recv(b->sock, &m, NULL, 0, &nfds);
		if (err == -EAGAIN) {
			poll(&p, 1, -1);
			continue;
		}
		if (err)
			break;
		r = m.broker_req;
		if (m.hdr.type != EMBER_MSG_BROKER_REQ || r.what >= EMBER_BROKER_WHAT_MAX)
			continue;
		atomic_fetch_add(&b->requests[r.what], 1);
		fd = fake_broker_answer(b, &r);
		ember_msg_init(&m, EMBER_MSG_BROKER_REPLY, 0);
		m.broker_reply.id = r.id;
		m.broker_reply.error = fd < 0 ? fd : 0;
		/* As the collector's broker: the opened file's identity rides with the reply. */
		if (fd >= 0 && !fstat(fd, &st)) {
			m.broker_reply.file.dev_major = major(st.st_dev);
			m.broker_reply.file.dev_minor = minor(st.st_dev);
			m.broker_reply.file.ino = st.st_ino;
		}
		ember_msg_send(b->sock, &m, fd >= 0 ? &fd : NULL, fd >= 0);
		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

static inline void fake_broker_start(struct fake_broker *b)
{
	int sv[2];

	memset(b, 0, sizeof(*b));
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ember_broker_client_init(&b->client, sv[0]);
	b->sock = sv[1];
	ck_assert_int_eq(pthread_create(&b->thread, NULL, fake_broker_run, b), 0);
}

static inline void fake_broker_stop(struct fake_broker *b)
{
	shutdown(b->client.sock, SHUT_RDWR);
	pthread_join(b->thread, NULL);
	close(b->client.sock);
	close(b->sock);
}

static inline unsigned int fake_broker_requests(struct fake_broker *b, uint32_t what)
{
	return atomic_load(&b->requests[what]);
}

#endif
