// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/client/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/clock.h"
#include "shared/err.h"
#include "shared/fs_class.h"
#include "shared/helper_proc.h"
#include "shared/log.h"

enum { OP_COPY = 1, OP_PREAD = 2 };
enum { ANSWER_PROGRESS = 1, ANSWER_DONE = 2 };

struct job {
	uint32_t op, id;
	uint64_t off, len; /* PREAD: the range; COPY: len is the most it copies */
};

/* PROGRESS after fstat and after every chunk, then DONE (COPY: with the memfd; PREAD:
 * followed by the bytes). */
struct answer {
	uint32_t type, id;
	int64_t result; /* bytes, or a negative errno */
	uint64_t done;
};

#define CHUNK (1u << 20)

/* ---- a reader process ------------------------------------------------------------------ */

static int send_answer(int sock, const struct answer *a, const void *data, size_t len, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov[2] = {{(void *)a, sizeof(*a)}, {(void *)data, len}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};

	if (fd >= 0) {
		struct cmsghdr *c;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? neg_errno() : 0;
}

/* fd's bytes into a sealed memfd, saying how far it got after every chunk. */
static int64_t copy(int sock, const struct job *j, int fd, char *buf, int *out)
{
	struct answer a = {ANSWER_PROGRESS, j->id, 0, 0};
	uint64_t off = 0;
	struct stat st;
	int mfd;

	/* fstat may wait (FUSE asks its daemon): the first progress says it did not. */
	if (fstat(fd, &st) < 0 || send_answer(sock, &a, NULL, 0, -1))
		return neg_errno();
	mfd = memfd_create("ember-copy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return neg_errno();
	for (;;) {
		/* A pipe is read as it comes (tests use one that never delivers). */
		ssize_t n =
		    S_ISFIFO(st.st_mode) ? read(fd, buf, CHUNK) : pread(fd, buf, CHUNK, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || off + (uint64_t)n > j->len ||
		    pwrite(mfd, buf, (size_t)n, (off_t)off) != n) {
			a.result = n == 0                       ? 0
			           : n < 0                      ? neg_errno()
			           : off + (uint64_t)n > j->len ? -EFBIG
			                                        : -EIO;
			break;
		}
		off += (uint64_t)n;
		a.done = off;
		if (send_answer(sock, &a, NULL, 0, -1))
			return -EPIPE;
	}
	if (a.result) {
		close(mfd);
		return a.result;
	}
	fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
	*out = mfd;
	return (int64_t)off;
}

/* One job at a time until the symbolizer closes the socket or goes (shared/helper_proc.h). */
static void serve(int sock, void *ctx)
{
	static char buf[CHUNK];

	(void)ctx;
	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct job j;
		struct iovec iov = {&j, sizeof(j)};
		struct msghdr mh = {.msg_iov = &iov,
		                    .msg_iovlen = 1,
		                    .msg_control = cbuf,
		                    .msg_controllen = sizeof(cbuf)};
		struct cmsghdr *c;
		struct answer a = {ANSWER_DONE, 0, -EINVAL, 0};
		int fd = -1, out = -1;
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		c = CMSG_FIRSTHDR(&mh);
		if (c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
		a.id = j.id;
		/* Begun: the deadline runs from now, not from a wait for the CPU (a loaded host).
		 */
		if (n == sizeof(j) &&
		    send_answer(sock, &(struct answer){ANSWER_PROGRESS, j.id, 0, 0}, NULL, 0, -1))
			_exit(0);
		if (n == sizeof(j) && fd >= 0 && j.op == OP_COPY)
			a.result = copy(sock, &j, fd, buf, &out);
		else if (n == sizeof(j) && fd >= 0 && j.op == OP_PREAD &&
		         j.len <= EMBER_READ_MAX_PREAD)
			a.result = (n = pread(fd, buf, j.len, (off_t)j.off)) < 0 ? neg_errno() : n;
		if (fd >= 0)
			close(fd);
		n = send_answer(sock, &a, buf,
		                j.op == OP_PREAD && a.result > 0 ? (size_t)a.result : 0, out);
		if (out >= 0)
			close(out);
		if (n)
			_exit(0);
	}
}

int ember_readers_start(struct ember_readers *rs, unsigned int n, int (*confine)(void *ctx),
                        void *ctx)
{
	int err = 0;

	memset(rs, 0, sizeof(*rs));
	rs->deadline_ns = EMBER_READ_DEADLINE_NS;
	for (unsigned int i = 0; i < n && i < EMBER_READERS && !err; i++) {
		struct ember_reader *r = &rs->readers[i];

		err = ember_helper_start(confine, serve, ctx, &r->pid, &r->sock);
		r->dev = -1;
		rs->n += !err;
	}
	return rs->n ? 0 : err ? err : -EINVAL;
}

void ember_readers_stop(struct ember_readers *rs)
{
	for (unsigned int i = 0; i < rs->n; i++)
		if (rs->readers[i].sock >= 0)
			close(rs->readers[i].sock);
	rs->n = 0;
}

/* ---- what stalled -------------------------------------------------------------------------- */

static int find_dev(struct ember_readers *rs, const struct ember_read_of *of, bool add)
{
	int free_slot = -1;

	for (int i = 0; i < EMBER_READ_MAX_DEVICES; i++) {
		struct ember_stalled_dev *d = &rs->devs[i];

		if (!d->used) {
			free_slot = free_slot < 0 ? i : free_slot;
			continue;
		}
		if (d->major == of->major && d->minor == of->minor &&
		    (of->major || of->minor || d->pid == of->pid))
			return i;
	}
	if (!add || free_slot < 0)
		return -1;
	rs->devs[free_slot] = (struct ember_stalled_dev){.used = true,
	                                                 .pid = of->pid,
	                                                 .major = of->major,
	                                                 .minor = of->minor,
	                                                 .fs_magic = of->fs_magic};
	return free_slot;
}

static const char *dev_name(const struct ember_stalled_dev *d, char name[96])
{
	return ember_stall_name(d->pid, d->major, d->minor, d->fs_magic, name, 96);
}

static void answers_again(struct ember_readers *rs, int i)
{
	struct ember_stalled_dev *d = &rs->devs[i];
	char name[96];

	if (!d->stalled)
		return;
	d->stalled = false;
	d->backoff_ns = 0;
	if (d->given_up) /* not for what only the broker saw stall: it says so itself */
		log_info("reading %s works again", dev_name(d, name));
}

static void mark_stalled(struct ember_readers *rs, int d, uint64_t now_ns)
{
	struct ember_stalled_dev *sd = &rs->devs[d];

	sd->backoff_ns = sd->backoff_ns ? sd->backoff_ns * 2 : EMBER_READ_BACKOFF_NS;
	if (sd->backoff_ns > EMBER_READ_BACKOFF_MAX_NS)
		sd->backoff_ns = EMBER_READ_BACKOFF_MAX_NS;
	sd->retry_ns = now_ns + sd->backoff_ns;
	sd->stalled = true;
}

/* A stuck reader's late answers: it is free again. */
static void drain(struct ember_readers *rs, struct ember_reader *r)
{
	for (;;) {
		char buf[sizeof(struct answer) + EMBER_READ_MAX_PREAD];
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = {buf, sizeof(buf)};
		struct msghdr mh = {.msg_iov = &iov,
		                    .msg_iovlen = 1,
		                    .msg_control = cbuf,
		                    .msg_controllen = sizeof(cbuf)};
		struct answer a;
		ssize_t n = recvmsg(r->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;

		if (c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int))) {
			int fd;

			memcpy(&fd, CMSG_DATA(c), sizeof(int));
			close(fd);
		}
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < (ssize_t)sizeof(a)) { /* gone */
			close(r->sock);
			r->sock = -1;
			return;
		}
		memcpy(&a, buf, sizeof(a));
		/* Late: its device (or process) answers, but slowly. It stays refused until
		 * its back-off ends, and the back-off goes on growing: only a read within the
		 * deadline ends the stall. Else one that answers late every time would cost
		 * a full deadline on every read. */
		if (a.type == ANSWER_DONE && a.id == r->job) {
			rs->late++;
			r->stuck = false;
			r->dev = -1;
			return;
		}
	}
}

/* ---- reading through a reader -------------------------------------------------------------- */

/*
 * The reader for a job on of: a free one, but not the last for a file (that one is kept for
 * processes' maps and memory), and none for a device that stalled while its back-off runs or
 * a reader still waits on it. Returns it, or NULL with *err (-ETIMEDOUT, -EBUSY); *dev is the
 * device's index, or -1.
 */
static struct ember_reader *pick_reader(struct ember_readers *rs, const struct ember_read_of *of,
                                        uint64_t now, int *dev, int *err)
{
	struct ember_reader *r = NULL;
	unsigned int nfree = 0;
	bool waited_on = false;
	int d;

	for (unsigned int i = 0; i < rs->n; i++)
		if (rs->readers[i].sock >= 0 && rs->readers[i].stuck)
			drain(rs, &rs->readers[i]);
	*dev = d = find_dev(rs, of, false);
	for (unsigned int i = 0; i < rs->n; i++) {
		struct ember_reader *ri = &rs->readers[i];

		if (ri->sock >= 0 && !ri->stuck && nfree++ == 0)
			r = ri;
		waited_on |= ri->sock >= 0 && ri->stuck && d >= 0 && ri->dev == d;
	}
	/* A stalled device or process is read again after its back-off, but not while a
	 * reader still waits on it: that one is its probe (it comes back when its device
	 * answers), and each retry would leave one more reader waiting. */
	if (d >= 0 && rs->devs[d].stalled &&
	    (rs->finishing || now < rs->devs[d].retry_ns || waited_on)) {
		rs->devs[d].refused++;
		rs->refused++;
		*err = -ETIMEDOUT;
		return NULL;
	}
	/* The last free reader is kept for processes' maps and memory: every file system that
	 * stalls could take one otherwise, and then no process would be named any more. */
	if (!r || (nfree < 2 && (of->major || of->minor))) {
		rs->refused++;
		*err = -EBUSY;
		return NULL;
	}
	return r;
}

/* Hands job j and the descriptor fd to reader r. Returns 0 or -EIO (the reader is gone). */
static int send_job(struct ember_readers *rs, struct ember_reader *r, struct job *j, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {j, sizeof(*j)};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	j->id = r->job = ++rs->next_job;
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(r->sock, &mh, MSG_NOSIGNAL) < 0) {
		close(r->sock);
		r->sock = -1;
		return -EIO;
	}
	return 0;
}

/* The reader missed its deadline: it is left waiting (stuck) and its device marked stalled. */
static int give_up(struct ember_readers *rs, struct ember_reader *r, const struct ember_read_of *of,
                   uint64_t start, uint64_t now)
{
	char name[96];
	int d;

	r->stuck = true;
	rs->given_up++;
	rs->abandoned++;
	d = find_dev(rs, of, true);
	r->dev = d;
	if (d >= 0) {
		struct ember_stalled_dev *sd = &rs->devs[d];
		bool was = sd->stalled;

		sd->given_up++;
		mark_stalled(rs, d, now);
		if (!was)
			log_warn("reading %s took longer than %.1f s: given up, its frames stay "
			         "addresses; tried again in %.0f s",
			         dev_name(sd, name), (double)(now - start) / 1e9,
			         (double)sd->backoff_ns / 1e9);
	}
	return -ETIMEDOUT;
}

/* Whether an answer of n bytes (with descriptor got) fits job j: else the reader broke its
 * protocol. */
static bool answer_ok(const struct job *j, const struct answer *a, ssize_t n, int got)
{
	return n >= (ssize_t)sizeof(*a) && a->id == j->id &&
	       (a->type == ANSWER_PROGRESS || a->type == ANSWER_DONE) &&
	       (got >= 0) == (a->type == ANSWER_DONE && j->op == OP_COPY && a->result >= 0) &&
	       !(a->type == ANSWER_DONE && j->op == OP_PREAD && a->result >= 0 &&
	         (uint64_t)a->result != (uint64_t)n - sizeof(*a));
}

/*
 * Runs job j on fd (of: whose file or memory it reads) in a reader and waits for its answer
 * under the deadline: given up (-ETIMEDOUT) and the device marked stalled when it misses it.
 * Fills buf (cap bytes) for a PREAD, the memfd of a COPY in *out. Returns the answer's result.
 */
static int64_t run(struct ember_readers *rs, struct job *j, int fd, const struct ember_read_of *of,
                   void *buf, size_t cap, int *out)
{
	uint64_t start = ember_monotonic_ns(), done = 0;
	struct ember_reader *r;
	bool begun = false;
	int d, err;

	r = pick_reader(rs, of, start, &d, &err);
	if (!r)
		return err;
	if ((err = send_job(rs, r, j, fd)))
		return err;
	for (;;) {
		/* One second from when the reader began (it says so; it gets four to begin), and
		 * one more for every EMBER_READ_MIN_RATE bytes that arrived. */
		uint64_t deadline = start + (begun ? rs->deadline_ns : 4 * rs->deadline_ns) +
		                    done / EMBER_READ_MIN_RATE * 1000000000ull;
		uint64_t now = ember_monotonic_ns();
		char abuf[sizeof(struct answer) + EMBER_READ_MAX_PREAD],
		    cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec aiov = {abuf, sizeof(abuf)};
		struct msghdr amh = {.msg_iov = &aiov,
		                     .msg_iovlen = 1,
		                     .msg_control = cbuf,
		                     .msg_controllen = sizeof(cbuf)};
		struct pollfd p = {.fd = r->sock, .events = POLLIN};
		struct answer a = {0};
		struct cmsghdr *c;
		int got = -1;
		ssize_t n;

		if (now >= deadline)
			return give_up(rs, r, of, start, now);
		if (poll(&p, 1, (int)((deadline - now) / 1000000u) + 1) <= 0)
			continue;
		n = recvmsg(r->sock, &amh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		c = n > 0 ? CMSG_FIRSTHDR(&amh) : NULL;
		if (c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&got, CMSG_DATA(c), sizeof(int));
		if (n < 0 && errno == EAGAIN)
			continue;
		memcpy(&a, abuf, n >= (ssize_t)sizeof(a) ? sizeof(a) : 0);
		if (!answer_ok(j, &a, n, got)) {
			if (got >= 0)
				close(got);
			log_warn("a reader (pid %d) broke its protocol: it is not used any more",
			         (int)r->pid);
			close(r->sock);
			r->sock = -1;
			return -EIO;
		}
		if (a.type == ANSWER_PROGRESS) {
			if (!begun)
				start = ember_monotonic_ns();
			begun = true;
			done = a.done;
			continue;
		}
		if (d >= 0)
			answers_again(rs, d);
		if (j->op == OP_PREAD && a.result > 0)
			memcpy(buf, abuf + sizeof(a),
			       (size_t)a.result <= cap ? (size_t)a.result : cap);
		if (out)
			*out = got;
		return a.result;
	}
}

int ember_readers_copy(struct ember_readers *rs, int fd, const struct ember_read_of *of,
                       uint64_t max_bytes)
{
	struct job j = {.op = OP_COPY, .len = max_bytes};
	int out = -1;
	int64_t r = run(rs, &j, fd, of, NULL, 0, &out);

	if (r < 0)
		return (int)r;
	rs->copies++;
	rs->bytes += (uint64_t)r;
	return out;
}

ssize_t ember_readers_pread(struct ember_readers *rs, int fd, void *buf, size_t len, uint64_t off,
                            const struct ember_read_of *of)
{
	struct job j = {.op = OP_PREAD,
	                .off = off,
	                .len = len < EMBER_READ_MAX_PREAD ? len : EMBER_READ_MAX_PREAD};

	return (ssize_t)run(rs, &j, fd, of, buf, j.len, NULL);
}

void ember_readers_note_stall(struct ember_readers *rs, uint32_t pid, uint32_t major,
                              uint32_t minor, uint32_t fs_magic, bool stalled)
{
	struct ember_read_of of = {pid, major, minor, fs_magic};
	int d = (major || minor || stalled) ? find_dev(rs, &of, true) : -1;

	if (d < 0)
		return;
	rs->devs[d].refused++;
	if (fs_magic)
		rs->devs[d].fs_magic = fs_magic;
	/* What stalled the broker's open would stall a read too: it is refused here at once
	 * (until its back-off ends), not after a deadline of its own. */
	if (stalled && !rs->devs[d].stalled)
		mark_stalled(rs, d, ember_monotonic_ns());
}

void ember_readers_report_stats(const struct ember_readers *rs, const struct ember_stat_sink *sink)
{
	uint64_t fs = 0;

	for (int i = 0; i < EMBER_READ_MAX_DEVICES; i++) {
		const struct ember_stalled_dev *d = &rs->devs[i];
		char name[96], type[16];

		if (!d->used || !(d->major || d->minor))
			continue;
		fs++;
		snprintf(name, sizeof(name), "broker.stalled_fs.%" PRIu32 ":%" PRIu32 ".%s",
		         d->major, d->minor, ember_fs_name(d->fs_magic, type));
		ember_stat(sink, name, d->given_up + d->refused);
	}
	ember_stat(sink, "broker.stalled_fs", fs);
	ember_stat(sink, "symbolizer.stalled_reads", rs->given_up + rs->refused);
	ember_stat(sink, "symbolizer.readers_abandoned", rs->abandoned);
	ember_stat(sink, "symbolizer.remote_copies", rs->copies);
}
