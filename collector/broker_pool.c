// SPDX-License-Identifier: Apache-2.0
#include "collector/broker_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "seccomp/caps.h"
#include "seccomp/policy.h"
#include "shared/cleanup.h"
#include "shared/err.h"
#include "shared/fs_class.h"
#include "shared/helper_proc.h"
#include "shared/log.h"

#define SEC 1e9

/* ---- a worker process ---------------------------------------------------------------- */

static int confine_worker(void *ctx)
{
	uint64_t keep = EMBER_CAP(CAP_SYS_PTRACE) | EMBER_CAP(CAP_DAC_READ_SEARCH) |
	                EMBER_CAP(CAP_CHECKPOINT_RESTORE);
	struct ember_policy_param params[] = {{"pid", (uint64_t)getpid()}};
	int err = ember_caps_limit(keep);

	(void)ctx;
	/* -EPERM: started without CAP_SETPCAP, the bounding set is the service manager's. */
	if (err && err != -EPERM)
		return err;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return neg_errno();
	return ember_policy_load(&ember_collector_policy, EMBER_POLICY_WORKER, params,
	                         ARRAY_SIZE(params));
}

/* What a worker is given: its pool (for the open to make) and broker, and its progress page. */
struct worker {
	const struct ember_pool *p;
	const struct ember_broker *b;
	struct ember_broker_progress *pg;
};

/* One open at a time until the collector closes the socket or goes. Nothing of the
 * collector's but the socket (shared/helper_proc.h): no peer, no outputs, no ring. */
static void serve(int sock, void *ctx)
{
	const struct worker *wk = ctx;
	struct ember_broker_progress *pg = wk->pg;

	for (;;) {
		struct pollfd pfd = {.fd = sock, .events = POLLIN};
		struct ember_broker_job job = {.progress = pg, .in_fd = -1, .out_fd = -1};

		union ember_msg in, out;
		int nfds = 0, fds[2], fd, err;

		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			_exit(1);
		err = ember_msg_recv(sock, &in, fds, 2, &nfds);
		if (err == -EAGAIN)
			continue;
		if (err || in.hdr.type != EMBER_MSG_BROKER_REQ)
			_exit(err == -ECONNRESET ? 0 : 1);
		__atomic_store_n(&pg->dev_major, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&pg->dev_minor, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&pg->fs_magic, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&pg->job, in.hdr.seq, __ATOMIC_RELEASE);
		job.by_path = in.broker_req.reserved & EMBER_BROKER_JOB_BY_PATH;
		job.snapshot = in.broker_req.reserved & EMBER_BROKER_JOB_SNAPSHOT;
		job.gone = in.broker_req.reserved & EMBER_BROKER_JOB_GONE;
		job.in_fd = nfds > 0 ? fds[0] : -1;
		job.out_fd = nfds > 1 ? fds[1] : -1;
		fd = wk->p->open(wk->b, &in.broker_req, &job);
		ember_closep(&job.in_fd);
		ember_closep(&job.out_fd);
		ember_msg_broker_reply(&out, in.hdr.seq, in.broker_req.id, fd, &job.file);
		err = ember_msg_send(sock, &out, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
		ember_closep(&fd);
		if (err)
			_exit(0);
	}
}

int ember_pool_start(struct ember_pool *p, struct ember_broker *b, unsigned int n)
{
	p->deadline_ns = EMBER_POOL_DEADLINE_NS;
	if (!p->open)
		p->open = ember_broker_open;
	p->progress = mmap(NULL, sizeof(*p->progress) * EMBER_POOL_WORKERS, PROT_READ | PROT_WRITE,
	                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p->progress == MAP_FAILED) {
		p->progress = NULL;
		return neg_errno();
	}
	for (unsigned int i = 0; i < n && i < EMBER_POOL_WORKERS; i++) {
		struct ember_worker *w = &p->workers[i];
		struct worker wk = {p, b, &p->progress[i]};
		int err = ember_helper_start(confine_worker, serve, &wk, &w->pid, &w->sock);

		if (err)
			return err;
		fcntl(w->sock, F_SETFL, O_NONBLOCK);
		w->stall = -1;
		p->nworkers++;
	}
	b->pooled = true;
	p->procs = b->procs;
	return 0;
}

void ember_pool_stop(struct ember_pool *p)
{
	for (unsigned int i = 0; i < p->nworkers; i++) {
		p->workers[i].sock = ember_safe_close(p->workers[i].sock);
		p->workers[i].state = EMBER_WORKER_GONE;
	}
	/* A worker still waiting keeps its own mapping of the pages. */
	if (p->progress)
		munmap(p->progress, sizeof(*p->progress) * EMBER_POOL_WORKERS);
	p->progress = NULL;
	if (p->abandoned)
		log_info("broker: %" PRIu64 " opens missed their deadline; %" PRIu64
		         " requests were refused for stalled file systems or processes",
		         p->abandoned, p->refused_stalled + p->refused_busy);
	log_debug("broker: %" PRIu64 " opens that may wait made by workers", p->by_worker);
}

unsigned int ember_pool_stuck(const struct ember_pool *p)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < p->nworkers; i++)
		n += p->workers[i].state == EMBER_WORKER_STUCK;
	return n;
}

/* ---- stalls --------------------------------------------------------------------------- */

static bool is_device(const struct ember_stall *s)
{
	return s->dev_major || s->dev_minor;
}

static const char *stall_name(const struct ember_stall *s, char name[96])
{
	return ember_stall_name(s->pid, s->dev_major, s->dev_minor, s->fs_magic, name, 96);
}

/* The stall of the device major:minor, or with none of process pid; -1. */
static int find_stall(const struct ember_pool *p, uint32_t pid, uint32_t major, uint32_t minor)
{
	for (unsigned int i = 0; i < EMBER_POOL_MAX_STALLS; i++) {
		const struct ember_stall *s = &p->stalls[i];

		if (s->used && ((major || minor) ? s->dev_major == major && s->dev_minor == minor
		                                 : !is_device(s) && s->pid == pid))
			return (int)i;
	}
	return -1;
}

/* The stall's probe came back (`how`), or exited: the next request that needs it is the next
 * probe (left waiting, should it still not answer). */
static void end_stall(struct ember_pool *p, int idx, uint64_t now_ns, const char *how)
{
	struct ember_stall *s = &p->stalls[idx];
	char name[96];

	log_info("broker: %s %s after %.1f s; %" PRIu64 " requests were refused meanwhile",
	         stall_name(s, name), how, (double)(now_ns - s->since_ns) / SEC, s->refused);
	for (unsigned int i = 0; i < p->nworkers; i++)
		if (p->workers[i].stall == idx)
			p->workers[i].stall = -1;
	memset(s, 0, sizeof(*s));
}

/*
 * An open of req missed its deadline after it reached major:minor (0:0: it still waited on
 * the process): marks what it waits on. A stall lasts only while a worker waits on it, so
 * there are never more stalls than workers.
 */
static int mark_stall(struct ember_pool *p, const struct ember_msg_broker_req *req, uint32_t major,
                      uint32_t minor, uint32_t magic, uint64_t now_ns)
{
	int i = find_stall(p, req->pid, major, minor);
	char name[96];

	p->abandoned++;
	for (int f = 0; i < 0 && f < EMBER_POOL_MAX_STALLS; f++)
		if (!p->stalls[f].used)
			i = f;
	if (i < 0 || p->stalls[i].used)
		return i;
	p->stalls[i] = (struct ember_stall){.used = true,
	                                    .pid = req->pid,
	                                    .dev_major = major,
	                                    .dev_minor = minor,
	                                    .fs_magic = magic,
	                                    .since_ns = now_ns};
	log_warn("broker: %s did not answer within %.1f s (%s for pid %" PRIu32
	         ", a worker waits): requests that need it are refused until it does",
	         stall_name(&p->stalls[i], name), (double)p->deadline_ns / SEC,
	         ember_broker_what_name(req->what), req->pid);
	return i;
}

/* The devices a job must not touch: every stalled one. */
static void refuse_list(const struct ember_pool *p, struct ember_broker_progress *pg)
{
	pg->nrefuse = 0;
	for (int i = 0; i < EMBER_POOL_MAX_STALLS && pg->nrefuse < EMBER_BROKER_MAX_STALLS; i++) {
		const struct ember_stall *s = &p->stalls[i];

		if (s->used && is_device(s)) {
			pg->refuse[pg->nrefuse].major = s->dev_major;
			pg->refuse[pg->nrefuse].minor = s->dev_minor;
			pg->nrefuse++;
		}
	}
}

/* ---- workers -------------------------------------------------------------------------- */

/* The end of worker w's job (fd, or a negative errno; f: what the reply says, NULL: nothing):
 * the answer to whoever asked. */
static int finish(const struct ember_worker *w, int fd, const struct ember_broker_file *f,
                  struct ember_pool_done *done)
{
	*done = (struct ember_pool_done){.req = w->req,
	                                 .peer_gen = w->peer_gen,
	                                 .fd = fd,
	                                 .file = f ? *f : (struct ember_broker_file){0},
	                                 .snapshot_gen = w->snapshot_gen};
	return 1;
}

/* Whether a worker works on a request of pid, or waits on one made by path (then even the
 * process's maps wait on its lock: older kernels). */
static bool busy_with(const struct ember_pool *p, uint32_t pid)
{
	for (unsigned int i = 0; i < p->nworkers; i++) {
		const struct ember_worker *w = &p->workers[i];

		if (w->req.pid == pid && (w->state == EMBER_WORKER_BUSY ||
		                          (w->state == EMBER_WORKER_STUCK && w->by_path)))
			return true;
	}
	return false;
}

/* A request of the symbolizer's (peer_gen), or a snapshot (snapshot_gen, with fds: the maps
 * and the memfd), to a free worker. */
static int submit(struct ember_pool *p, const struct ember_msg_broker_req *req, const int *fds,
                  uint64_t peer_gen, uint32_t snapshot_gen, uint64_t now_ns,
                  struct ember_broker_file *file)
{
	unsigned int idle = 0, wi = 0;
	int ps = req->pid ? find_stall(p, req->pid, 0, 0) : -1;
	uint32_t flags = snapshot_gen ? EMBER_BROKER_JOB_SNAPSHOT : fds ? EMBER_BROKER_JOB_GONE : 0;
	struct ember_worker *w;
	union ember_msg m;

	for (unsigned int i = 0; i < p->nworkers; i++)
		if (p->workers[i].state == EMBER_WORKER_IDLE && idle++ == 0)
			wi = i;
	/* Snapshots take spare workers only (two stay for the symbolizer), and none while a
	 * worker waits on a stall: the workers left are the symbolizer's, as without them. */
	if (snapshot_gen && (idle <= 2 || ember_pool_stuck(p)))
		return -EBUSY;
	/* A stalled process: one request of it at a time, made by a worker, its lock out of
	 * the way (a mapped file is reached by its path, checked against the kernel's maps).
	 * The worker stuck on the stall is its probe: it ends the stall when it comes back. */
	if (ps >= 0) {
		if (busy_with(p, req->pid) || idle < 2) {
			p->stalls[ps].refused++;
			p->refused_stalled++;
			file->flags |= EMBER_BROKER_STALLED;
			return -ETIMEDOUT;
		}
		flags = EMBER_BROKER_JOB_BY_PATH;
	}
	if (!idle) {
		p->refused_busy++;
		if (ember_pool_stuck(p))
			file->flags |= EMBER_BROKER_STALLED;
		return -EBUSY;
	}
	w = &p->workers[wi];
	refuse_list(p, &p->progress[wi]);
	p->progress[wi].block_only = idle < 2;
	ember_msg_init_from(&m, EMBER_MSG_BROKER_REQ, ++p->next_job, req);
	m.broker_req.reserved = flags; /* between the collector and its worker only */
	if (ember_msg_send(w->sock, &m, fds, fds ? 2 : 0)) {
		log_warn("broker: worker %d is gone", (int)w->pid);
		w->state = EMBER_WORKER_GONE;
		return -EIO;
	}
	p->by_worker++;
	w->state = EMBER_WORKER_BUSY;
	w->req = *req;
	w->job = p->next_job;
	w->peer_gen = peer_gen;
	w->snapshot_gen = snapshot_gen;
	w->deadline_ns = now_ns + p->deadline_ns;
	w->extended = 0;
	w->by_path = flags & EMBER_BROKER_JOB_BY_PATH;
	return 0;
}

int ember_pool_submit(struct ember_pool *p, const struct ember_msg_broker_req *req,
                      uint64_t peer_gen, uint64_t now_ns, struct ember_broker_file *file)
{
	_cleanup_close_ int maps = -1, root = -1;

	if (!(file->flags & EMBER_BROKER_SNAPSHOT))
		return submit(p, req, NULL, peer_gen, 0, now_ns, file);
	/* A gone process's mapped file (ember_broker_handle): its snapshot and root go along. */
	maps = ember_procs_snapshot_open(p->procs, req->pid, now_ns, false);
	root = ember_procs_snapshot_open(p->procs, req->pid, now_ns, true);
	if (maps < 0 || root < 0)
		return -ENOENT;
	return submit(p, req, (const int[]){maps, root}, peer_gen, 0, now_ns, file);
}

int ember_pool_snapshot(struct ember_pool *p, uint32_t tgid, uint32_t gen, int maps_fd, int memfd,
                        uint64_t now_ns)
{
	struct ember_msg_broker_req req = {.what = EMBER_BROKER_MAPS, .pid = tgid};
	struct ember_broker_file file;

	return submit(p, &req, (const int[]){maps_fd, memfd}, 0, gen, now_ns, &file);
}

static int worker_gone(struct ember_pool *p, struct ember_worker *w, uint64_t now_ns,
                       struct ember_pool_done *done)
{
	bool busy = w->state == EMBER_WORKER_BUSY;

	log_warn("broker: worker %d exited or broke the protocol", (int)w->pid);
	if (w->stall >= 0)
		end_stall(p, w->stall, now_ns, "is tried again (its worker exited)");
	w->sock = ember_safe_close(w->sock);
	w->state = EMBER_WORKER_GONE;
	return busy ? finish(w, -EIO, NULL, done) : 0;
}

int ember_pool_on_readable(struct ember_pool *p, unsigned int i, uint64_t now_ns,
                           struct ember_pool_done *done)
{
	struct ember_worker *w = &p->workers[i];
	union ember_msg m;
	const struct ember_broker_file *f = &m.broker_reply.file;
	_cleanup_close_ int fd = -1; /* closed unless it is the answer */
	int nfds = 0, err;

	if (i >= p->nworkers || w->sock < 0)
		return 0;
	err = ember_msg_recv(w->sock, &m, &fd, 1, &nfds);
	if (err == -EAGAIN)
		return 0;
	if (err || m.hdr.type != EMBER_MSG_BROKER_REPLY || m.hdr.seq != w->job ||
	    (m.broker_reply.error == 0) != (nfds == 1) || m.broker_reply.error > 0 ||
	    (w->state != EMBER_WORKER_BUSY && w->state != EMBER_WORKER_STUCK))
		return worker_gone(p, w, now_ns, done);
	if (w->state == EMBER_WORKER_STUCK) {
		/* Answered at last: the symbolizer had its -ETIMEDOUT, but the stall is over. */
		p->late++;
		if (w->stall >= 0) /* and with it every worker's mark of it, this one's too */
			end_stall(p, w->stall, now_ns, "answers again");
		w->state = EMBER_WORKER_IDLE;
		return 0;
	}
	if (f->flags & EMBER_BROKER_STALLED) {
		int s = find_stall(p, w->req.pid, f->dev_major, f->dev_minor);

		p->refused_stalled++;
		if (s >= 0)
			p->stalls[s].refused++;
	}
	w->state = EMBER_WORKER_IDLE;
	return finish(w, m.broker_reply.error ? m.broker_reply.error : TAKE_FD(fd), f, done);
}

/*
 * Whether worker pid waits for the CPU rather than for a file system or a process (state R
 * in its /proc/PID/stat, after the last ')': the collector's own child, not a profiled
 * process): on a loaded host a deadline passes for a worker nobody stalled.
 */
static bool starved(pid_t pid)
{
	char path[40], buf[256];
	const char *state;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	state = strrchr(buf, ')');
	return state && state[1] == ' ' && state[2] == 'R';
}

int ember_pool_expire(struct ember_pool *p, uint64_t now_ns, struct ember_pool_done *done)
{
	for (unsigned int i = 0; i < p->nworkers; i++) {
		struct ember_worker *w = &p->workers[i];
		struct ember_broker_progress *pg = &p->progress[i];
		struct ember_broker_file f = {.flags = EMBER_BROKER_STALLED |
		                                       EMBER_BROKER_MISSED_DEADLINE};
		bool ours;
		int s;

		if (w->state != EMBER_WORKER_BUSY || now_ns < w->deadline_ns)
			continue;
		if (w->extended < EMBER_POOL_MAX_EXTENSIONS && starved(w->pid)) {
			w->extended++;
			w->deadline_ns = now_ns + p->deadline_ns / 4;
			continue;
		}
		/* What it reached, if the worker is still on this job (its numbers, untrusted). A
		 * snapshot nobody asked for marks nothing: the symbolizer's own request finds the
		 * stall, as it would without snapshots (the worker is stuck all the same). */
		ours = __atomic_load_n(&pg->job, __ATOMIC_ACQUIRE) == w->job;
		s = w->snapshot_gen
		        ? (p->abandoned++, -1)
		        : mark_stall(p, &w->req,
		                     ours ? __atomic_load_n(&pg->dev_major, __ATOMIC_RELAXED) : 0,
		                     ours ? __atomic_load_n(&pg->dev_minor, __ATOMIC_RELAXED) : 0,
		                     ours ? __atomic_load_n(&pg->fs_magic, __ATOMIC_RELAXED) : 0,
		                     now_ns);
		w->state = EMBER_WORKER_STUCK;
		w->stall = s;
		if (ember_pool_stuck(p) == p->nworkers)
			log_warn("broker: every worker waits on a stalled file system or process: "
			         "requests that need one are refused until one comes back");
		if (s >= 0) { /* the reply names what stalled */
			f.fs_magic = p->stalls[s].fs_magic;
			f.dev_major = p->stalls[s].dev_major;
			f.dev_minor = p->stalls[s].dev_minor;
		}
		return finish(w, -ETIMEDOUT, &f, done);
	}
	return 0;
}

int ember_pool_timeout_ms(const struct ember_pool *p, uint64_t now_ns)
{
	uint64_t next = UINT64_MAX;

	for (unsigned int i = 0; i < p->nworkers; i++)
		if (p->workers[i].state == EMBER_WORKER_BUSY && p->workers[i].deadline_ns < next)
			next = p->workers[i].deadline_ns;
	if (next == UINT64_MAX)
		return -1;
	return next <= now_ns ? 0 : (int)((next - now_ns) / 1000000u) + 1;
}
