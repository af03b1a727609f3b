// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/client/broker_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "shared/clock.h"
#include "shared/log.h"
#include "shared/str.h"

void ember_broker_client_init(struct ember_broker_client *c, int sock)
{
	memset(c, 0, sizeof(*c));
	c->sock = sock;
}

int ember_broker_client_send(struct ember_broker_client *c, union ember_msg *msg)
{
	int err;

	msg->hdr.seq = ++c->seq;
	err = ember_msg_send(c->sock, msg, NULL, 0);
	if (err)
		c->closed = true;
	return err;
}

static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n;

	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? 0 : -ETIMEDOUT;
}

/* Receives one message, waiting up to timeout_ms. */
static int recv_one(struct ember_broker_client *c, union ember_msg *m, int *fds, int max_fds,
                    int *nfds, int timeout_ms)
{
	int err;

	for (;;) {
		err = ember_msg_recv(c->sock, m, fds, max_fds, nfds);
		if (err != -EAGAIN)
			break;
		err = wait_readable(c->sock, timeout_ms);
		if (err)
			return err;
	}
	if (err)
		c->closed = true;
	return err;
}

int ember_broker_client_recv(struct ember_broker_client *c, union ember_msg *m, int *fds,
                             int max_fds, int *nfds, int timeout_ms)
{
	if (c->flush_pending) {
		c->flush_pending = false;
		memcpy(&m->flush, &c->flush, sizeof(c->flush));
		*nfds = 0;
		return 0;
	}
	return recv_one(c, m, fds, max_fds, nfds, timeout_ms);
}

/*
 * A process's map (its lock), and a file on a file system that can stop answering, are
 * read by a reader under a deadline: the caller gets the copy. A process's memory is read
 * through the readers by whoever reads it; an executable's identity comes with the reply.
 */
static int copy_if_it_may_wait(struct ember_broker_client *c, uint32_t what, uint32_t pid, int fd)
{
	struct ember_read_of of = {pid, c->last.dev_major, c->last.dev_minor, c->last.fs_magic};
	int copy;

	/* A snapshot (EMBER_BROKER_SNAPSHOT) is a memfd: its reads wait on nothing. */
	if (!c->readers || what == EMBER_BROKER_MEM || what == EMBER_BROKER_PROC_FILE ||
	    (c->last.flags & EMBER_BROKER_SNAPSHOT) ||
	    (what != EMBER_BROKER_MAPS && !(c->last.flags & EMBER_BROKER_REMOTE)))
		return fd;
	if (what == EMBER_BROKER_MAPS)
		of.major = of.minor = 0;
	copy = ember_readers_copy(c->readers, fd, &of, EMBER_READ_MAX_COPY);
	close(fd);
	if (copy < 0)
		c->failures++;
	return copy;
}

int ember_broker_request(struct ember_broker_client *c, uint32_t what, uint32_t pid, uint64_t addr,
                         const char *arg)
{
	uint64_t deadline = ember_monotonic_ns() + EMBER_BROKER_TIMEOUT_MS * 1000000ull;
	union ember_msg m;
	uint32_t id;
	int err;

	if (c->closed)
		return -ECONNRESET;
	ember_msg_init(&m, EMBER_MSG_BROKER_REQ, 0);
	id = ++c->next_id;
	m.broker_req.id = id;
	m.broker_req.what = what;
	m.broker_req.pid = pid;
	m.broker_req.addr = addr;
	if (arg)
		ember_strlcpy(m.broker_req.arg, arg, sizeof(m.broker_req.arg));
	c->requests++;
	err = ember_broker_client_send(c, &m);
	if (err)
		return err;
	for (;;) {
		uint64_t now = ember_monotonic_ns();
		int fd = -1, nfds = 0;

		if (now >= deadline) {
			c->failures++;
			return -ETIMEDOUT;
		}
		err = recv_one(c, &m, &fd, 1, &nfds, (int)((deadline - now) / 1000000ull) + 1);
		if (err) {
			c->failures++;
			return err;
		}
		if (m.hdr.type == EMBER_MSG_FLUSH && !nfds && !c->flush_pending) {
			memcpy(&c->flush, &m.flush, sizeof(c->flush));
			c->flush_pending = true;
			continue;
		}
		/*
		 * Requests go one at a time, so a reply with an earlier id answers a
		 * request that timed out here (a collector slowed down, not a broken
		 * one): drop it and keep waiting for ours.
		 */
		if (m.hdr.type == EMBER_MSG_BROKER_REPLY && m.broker_reply.id < id &&
		    m.broker_reply.id > 0) {
			if (nfds)
				close(fd);
			c->late_replies++;
			continue;
		}
		if (m.hdr.type != EMBER_MSG_BROKER_REPLY || m.broker_reply.id != id ||
		    (m.broker_reply.error == 0) != (nfds == 1) || m.broker_reply.error > 0) {
			if (nfds)
				close(fd);
			log_error("collector sent an unexpected %s: disconnecting",
			          ember_msg_type_name(m.hdr.type));
			c->closed = true;
			return -EPROTO;
		}
		c->last = m.broker_reply.file;
		if (m.broker_reply.error) {
			c->failures++;
			if (c->last.flags & EMBER_BROKER_STALLED) {
				c->stalled_refused++;
				c->stalled_deadline +=
				    !!(c->last.flags & EMBER_BROKER_MISSED_DEADLINE);
				if (c->readers)
					ember_readers_note_stall(
					    c->readers, pid, c->last.dev_major, c->last.dev_minor,
					    c->last.fs_magic, m.broker_reply.error == -ETIMEDOUT);
			}
			return m.broker_reply.error;
		}
		return copy_if_it_may_wait(c, what, pid, fd);
	}
}

int ember_broker_mapped_file(struct ember_broker_client *c, uint32_t pid, uint64_t start,
                             uint32_t dev_major, uint32_t dev_minor, uint64_t ino)
{
	int fd = ember_broker_request(c, EMBER_BROKER_MAPPED_FILE, pid, start, NULL);
	struct ember_kept_file *k = NULL, *oldest = &c->kept[0];

	for (int i = 0; i < EMBER_BROKER_KEPT_FILES && !k && ino; i++) {
		struct ember_kept_file *e = &c->kept[i];

		if (e->ino == ino && e->dev_major == dev_major && e->dev_minor == dev_minor)
			k = e;
		else if (e->used < oldest->used)
			oldest = e;
	}
	/* Another file at that address now (the caller's maps are of an earlier program of the
	 * process, or of another process with the PID): not the one asked for, whose table or
	 * symbols would be built from it. By inode only: an overlay's file is opened as its
	 * layer's, whose device is not the one maps names. */
	if (fd >= 0 && ino && c->last.ino && c->last.ino != ino) {
		close(fd);
		c->not_the_file++;
		return -ESTALE;
	}
	/* Gone, or no such mapping any more: the file as another process had it. */
	if (fd == -ESRCH || fd == -EPERM || fd == -ENOENT) {
		int kept = k ? fcntl(k->fd, F_DUPFD_CLOEXEC, 0) : -1;

		if (kept < 0)
			return fd;
		k->used = ++c->kept_clock;
		c->kept_served++;
		return kept;
	}
	/* A copy of a file on a file system that can stall is memory: not kept. */
	if (fd < 0 || !ino || (c->last.flags & EMBER_BROKER_REMOTE))
		return fd;
	if (!k) {
		k = oldest;
		if (k->ino)
			close(k->fd);
		*k = (struct ember_kept_file){dev_major, dev_minor, ino, 0, -1};
		k->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (k->fd < 0)
			k->ino = 0;
	}
	k->used = ++c->kept_clock;
	return fd;
}

void ember_broker_client_report_stats(const struct ember_broker_client *c,
                                      const struct ember_stat_sink *sink)
{
	ember_stat(sink, "broker.requests", c->requests);
	ember_stat(sink, "broker.failures", c->failures);
	ember_stat(sink, "broker.late_replies", c->late_replies);
	ember_stat(sink, "broker.kept_files_served", c->kept_served);
	ember_stat(sink, "broker.mapped_files_not_the_file", c->not_the_file);
}
