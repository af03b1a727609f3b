// SPDX-License-Identifier: Apache-2.0
/*
 * bench/broker: how many broker requests a second ember-collector serves.
 *
 *   ember-broker-bench SOCKET PID ADDR COUNT    connect as the symbolizer, then for each
 *                                               request kind time COUNT requests, one at
 *                                               a time (as the symbolizer asks), about PID
 *   ember-broker-bench --direct PID ADDR COUNT  the same files opened by this process
 *                                               itself (root), without a broker: the peer
 *
 * Kinds: maps (/proc/PID/maps), mapped-file (the file mapped at ADDR in PID,
 * a local file), proc-file (/proc/PID/cgroup). Prints
 * "KIND N requests/s (M us each)" per kind. COUNT stays below the broker's
 * burst (10000) so its rate cap does not show; run.py pauses between kinds.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bpf/records.h"
#include "ipc/endpoint.h"
#include "ipc/proto.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int recv_wait(int sock, union ember_msg *m, int *fd, int *nfds)
{
	for (;;) {
		struct pollfd p = {.fd = sock, .events = POLLIN};
		int err = ember_msg_recv(sock, m, fd, 1, nfds);

		if (err != -EAGAIN)
			return err;
		if (poll(&p, 1, 5000) <= 0)
			return -ETIMEDOUT;
	}
}

static int handshake(int sock)
{
	union ember_msg m;
	int fds[3], nfds = 0, err;

	ember_msg_init(&m, EMBER_MSG_HELLO, 1);
	m.hello.records_version = EMBER_RECORDS_VERSION;
	m.hello.pid = (uint32_t)getpid();
	err = ember_msg_send(sock, &m, NULL, 0);
	for (int i = 0; !err && i < 500; i++) {
		err = ember_msg_recv(sock, &m, fds, 3, &nfds);
		if (err != -EAGAIN)
			break;
		err = 0;
		usleep(10000);
	}
	if (err || m.hdr.type != EMBER_MSG_WELCOME || nfds != 3)
		return err ? err : -EPROTO;
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return 0;
}

/* One request, answered: the descriptor or a negative errno. */
static int ask(int sock, uint32_t what, uint32_t pid, uint64_t addr, const char *arg)
{
	static uint32_t id;
	union ember_msg m;
	int fd = -1, nfds = 0, err;

	ember_msg_init(&m, EMBER_MSG_BROKER_REQ, 2);
	m.broker_req.id = ++id;
	m.broker_req.what = what;
	m.broker_req.pid = pid;
	m.broker_req.addr = addr;
	if (arg)
		snprintf(m.broker_req.arg, sizeof(m.broker_req.arg), "%s", arg);
	err = ember_msg_send(sock, &m, NULL, 0);
	/* A FLUSH or another message in between is skipped. */
	while (!err) {
		err = recv_wait(sock, &m, &fd, &nfds);
		if (err || (m.hdr.type == EMBER_MSG_BROKER_REPLY && m.broker_reply.id == id))
			break;
		if (nfds)
			close(fd);
	}
	if (err)
		return err;
	return m.broker_reply.error ? m.broker_reply.error : fd;
}

/* The same work the broker does for a mapped file, by this process itself. */
static int direct(uint32_t what, uint32_t pid, uint64_t addr)
{
	char path[128], line[4096];
	FILE *f;
	int fd;

	if (what == EMBER_BROKER_MAPS || what == EMBER_BROKER_PROC_FILE) {
		snprintf(path, sizeof(path), "/proc/%" PRIu32 "/%s", pid,
		         what == EMBER_BROKER_MAPS ? "maps" : "cgroup");
		fd = open(path, O_RDONLY | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	fd = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;

		if (sscanf(line, "%llx-%llx", &s, &e) == 2 && s == addr) {
			snprintf(path, sizeof(path), "/proc/%" PRIu32 "/map_files/%llx-%llx", pid,
			         s, e);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			fd = fd < 0 ? -errno : fd;
			break;
		}
	}
	fclose(f);
	return fd;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		uint32_t what;
		const char *arg;
	} kinds[] = {
	    {"maps", EMBER_BROKER_MAPS, NULL},
	    {"mapped-file", EMBER_BROKER_MAPPED_FILE, NULL},
	    {"proc-file", EMBER_BROKER_PROC_FILE, "cgroup"},
	};
	bool is_direct = argc == 5 && !strcmp(argv[1], "--direct");
	uint32_t pid;
	uint64_t addr;
	long count;
	int sock = -1, err;

	if (argc != 5) {
		fprintf(stderr, "usage: ember-broker-bench SOCKET|--direct PID ADDR COUNT\n");
		return 2;
	}
	pid = (uint32_t)strtoul(argv[2], NULL, 10);
	addr = strtoull(argv[3], NULL, 16);
	count = strtol(argv[4], NULL, 10);
	if (!is_direct) {
		sock = ember_endpoint_connect(argv[1]);
		err = sock < 0 ? sock : handshake(sock);
		if (err) {
			fprintf(stderr, "ember-broker-bench: cannot connect to %s: %s\n", argv[1],
			        strerror(-err));
			return 1;
		}
	}
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		double t0 = now_s(), dt;
		long failed = 0;

		for (long i = 0; i < count; i++) {
			int fd = is_direct ? direct(kinds[k].what, pid, addr)
			                   : ask(sock, kinds[k].what, pid, addr, kinds[k].arg);

			if (fd < 0) {
				if (++failed == 1)
					fprintf(stderr, "%s: %s\n", kinds[k].name, strerror(-fd));
				if (fd == -ETIMEDOUT || fd == -ECONNRESET)
					return 1;
			} else {
				close(fd);
			}
		}
		dt = now_s() - t0;
		printf("%s %.0f requests/s (%.1f us each)%s\n", kinds[k].name, (double)count / dt,
		       dt * 1e6 / (double)count, failed ? " FAILED" : "");
		fflush(stdout);
		if (failed)
			return 1;
		/* The broker's token bucket refills (2000/s) before the next kind. */
		if (!is_direct && k + 1 < sizeof(kinds) / sizeof(kinds[0]))
			sleep((unsigned)(count / 2000 + 1));
	}
	return 0;
}
