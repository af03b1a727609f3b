/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A scripted HTTP/1.1 server on 127.0.0.1 for the exporter's tests: each
 * request gets the next scripted answer (a status, perhaps Retry-After, or a
 * hang); it counts requests and bytes. Real sockets, real libcurl on the
 * other side.
 */
#ifndef EMBER_TESTS_MINI_HTTP_H
#define EMBER_TESTS_MINI_HTTP_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MINI_MAX_SCRIPT 64

struct mini_answer {
	int status;      /* 0: hang (never answer) */
	int retry_after; /* seconds, or 0 */
};

struct mini_http {
	int listen_fd;
	int port;
	pthread_t thread;
	atomic_bool stop;
	pthread_mutex_t lock;
	struct mini_answer script[MINI_MAX_SCRIPT];
	int nscript, next;
	int default_status;
	atomic_int requests;     /* requests received */
	atomic_int answered_ok;  /* 2xx answers sent */
	atomic_llong body_bytes; /* bodies received */
	double request_times[256];
};

static double mini_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads until the end of the headers and the body; returns the body length or -1. */
static long mini_read_request(struct mini_http *m, int fd)
{
	char buf[65536];
	size_t have = 0;
	char *end = NULL;
	long clen = 0, body_have;

	while (!end) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t n;

		if (atomic_load(&m->stop))
			return -1;
		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			return -1;
		have += (size_t)n;
		buf[have] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (!end && have >= sizeof(buf) - 1)
			return -1;
	}
	{
		char *cl = strcasestr(buf, "Content-Length:");

		if (cl)
			clen = strtol(cl + 15, NULL, 10);
	}
	body_have = (long)(have - (size_t)(end + 4 - buf));
	while (body_have < clen) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0)
			return -1;
		body_have += n;
	}
	return clen;
}

static void mini_serve(struct mini_http *m, int fd)
{
	for (;;) {
		struct mini_answer a;
		long len = mini_read_request(m, fd);
		char resp[256];
		int n, idx;

		if (len < 0)
			return;
		idx = atomic_fetch_add(&m->requests, 1);
		if (idx < 256)
			m->request_times[idx] = mini_now();
		atomic_fetch_add(&m->body_bytes, len);
		pthread_mutex_lock(&m->lock);
		if (m->next < m->nscript)
			a = m->script[m->next++];
		else
			a = (struct mini_answer){m->default_status, 0};
		pthread_mutex_unlock(&m->lock);
		if (!a.status) {
			while (!atomic_load(&m->stop)) {
				struct pollfd p = {fd, POLLIN, 0};

				/* Hang until the client gives up (closes) or the test ends. */
				if (poll(&p, 1, 100) > 0) {
					char junk[4096];

					if (read(fd, junk, sizeof(junk)) <= 0)
						return;
				}
			}
			return;
		}
		n = snprintf(resp, sizeof(resp),
		             "HTTP/1.1 %d Scripted\r\nContent-Length: 0\r\n%s%.0d%s\r\n", a.status,
		             a.retry_after ? "Retry-After: " : "", a.retry_after,
		             a.retry_after ? "\r\n" : "");
		/* Counted before the write: once written, the client may see the answer and
		 * the test read the count before this thread runs again. */
		if (a.status >= 200 && a.status < 300)
			atomic_fetch_add(&m->answered_ok, 1);
		if (write(fd, resp, (size_t)n) != n)
			return;
	}
}

static void *mini_thread(void *arg)
{
	struct mini_http *m = arg;

	while (!atomic_load(&m->stop)) {
		struct pollfd p = {m->listen_fd, POLLIN, 0};
		int fd;

		if (poll(&p, 1, 100) <= 0)
			continue;
		fd = accept(m->listen_fd, NULL, NULL);
		if (fd < 0)
			continue;
		mini_serve(m, fd);
		close(fd);
	}
	return NULL;
}

static inline void mini_start(struct mini_http *m, int default_status)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);

	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
	m->default_status = default_status;
	m->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(m->listen_fd, 0);
	ck_assert_int_eq(bind(m->listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(m->listen_fd, 8), 0);
	ck_assert_int_eq(getsockname(m->listen_fd, (struct sockaddr *)&a, &len), 0);
	m->port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&m->thread, NULL, mini_thread, m), 0);
}

static inline void mini_script(struct mini_http *m, int status, int retry_after)
{
	pthread_mutex_lock(&m->lock);
	ck_assert_int_lt(m->nscript, MINI_MAX_SCRIPT);
	m->script[m->nscript++] = (struct mini_answer){status, retry_after};
	pthread_mutex_unlock(&m->lock);
}

static inline void mini_stop(struct mini_http *m)
{
	atomic_store(&m->stop, true);
	pthread_join(m->thread, NULL);
	close(m->listen_fd);
}

#endif
