// SPDX-License-Identifier: Apache-2.0
/*
 * The broker's workers and their deadline: an open that misses it is answered
 * -ETIMEDOUT and its worker left waiting; the device it had reached (or its
 * process) is refused at once afterwards while other devices are served; with
 * every worker stuck, requests are refused; a worker that comes back ends the
 * stall, and so does one that exits; snapshots of maps take only spare workers. The workers here
 * are real processes in their seccomp group; their open reaches a made-up device 0:PID and, when
 * asked, waits on a FIFO nobody writes (a stall) or spins past the deadline (a loaded host: no
 * stall).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "waiting_child.h"
#include "collector/broker_pool.h"

#define MS 1000000ull

enum { ANSWER = 1, STALL = 2, STALL_EARLY = 3, SPIN = 4 };

static char fifo[64];

/* The workers' open: device 0:pid, then (addr STALL) a FIFO nobody writes to; the reply's
 * inode is 1 for a job made by path. */
static int test_open(const struct ember_broker *b, const struct ember_msg_broker_req *req,
                     struct ember_broker_job *job)
{
	int err, fd;

	if (job->snapshot) /* the real copy */
		return ember_broker_open(b, req, job);
	if (req->addr == STALL_EARLY && (fd = open(fifo, O_RDONLY | O_CLOEXEC)) >= 0)
		close(fd);
	err = ember_broker_reach_device(job, 0, req->pid);
	if (err)
		return err;
	if (req->addr == STALL && (fd = open(fifo, O_RDONLY | O_CLOEXEC)) >= 0)
		close(fd);
	if (req->addr == SPIN) { /* busy past the deadline, but only on the CPU */
		struct timespec t0, t;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &t);
		while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 500);
	}
	job->file.ino = job->by_path; /* the reply says how it was asked */
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int submit(struct ember_pool *p, uint32_t id, uint32_t pid, uint64_t addr,
                  struct ember_broker_file *f)
{
	struct ember_msg_broker_req req = {
	    .id = id, .what = EMBER_BROKER_MAPPED_FILE, .pid = pid, .addr = addr};

	*f = (struct ember_broker_file){0};
	return ember_pool_submit(p, &req, 1, now_ns(), f);
}

/* The next job that ends (as the collector's loop would see it), within 5 s. */
static struct ember_pool_done next_done(struct ember_pool *p)
{
	struct ember_pool_done done;

	for (uint64_t end = now_ns() + 5000 * MS; now_ns() < end;) {
		struct pollfd fds[EMBER_POOL_WORKERS];

		for (unsigned int i = 0; i < p->nworkers; i++)
			fds[i] = (struct pollfd){.fd = p->workers[i].sock, .events = POLLIN};
		poll(fds, p->nworkers, 50);
		for (unsigned int i = 0; i < p->nworkers; i++)
			if ((fds[i].revents & POLLIN) &&
			    ember_pool_on_readable(p, i, now_ns(), &done))
				return done;
		if (ember_pool_expire(p, now_ns(), &done))
			return done;
	}
	ck_abort_msg("no job ended within 5 s");
	return done;
}

/* Late answers of workers that come back. */
static void read_late(struct ember_pool *p)
{
	struct ember_pool_done done;

	for (int round = 0; round < 20 && ember_pool_stuck(p); round++) {
		usleep(50000);
		for (unsigned int i = 0; i < p->nworkers; i++)
			ck_assert_int_eq(ember_pool_on_readable(p, i, now_ns(), &done), 0);
	}
}

START_TEST(a_worker_past_its_deadline_is_left_waiting)
{
	struct ember_procs procs;
	struct ember_broker b;
	struct ember_pool p = {.open = test_open};
	struct ember_broker_file f;
	struct ember_pool_done d;
	uint64_t t0;
	int writer;

	snprintf(fifo, sizeof(fifo), "/tmp/ember-pool-%d", (int)getpid());
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(ember_procs_init(&procs, 16), 0);
	ember_broker_init(&b, &procs);
	ck_assert_int_eq(ember_pool_start(&p, &b, 4), 0);
	ck_assert(b.pooled);
	p.deadline_ns = 300 * MS;

	/* Answered through a worker, with the device it reached. */
	ck_assert_int_eq(submit(&p, 1, 10, ANSWER, &f), 0);
	d = next_done(&p);
	ck_assert(d.req.id == 1 && d.fd >= 0 && d.file.dev_minor == 10);
	close(d.fd);

	/* A worker that only runs (or waits for the CPU) past the deadline is given time. */
	t0 = now_ns();
	ck_assert_int_eq(submit(&p, 100, 10, SPIN, &f), 0);
	d = next_done(&p);
	ck_assert(d.req.id == 100 && d.fd >= 0);
	ck_assert_uint_ge(now_ns() - t0, 400 * MS);
	ck_assert_uint_eq(p.abandoned, 0);
	close(d.fd);

	/* Past the deadline: -ETIMEDOUT, flagged, naming the device; the worker stays stuck. */
	t0 = now_ns();
	ck_assert_int_eq(submit(&p, 2, 20, STALL, &f), 0);
	d = next_done(&p);
	ck_assert_int_eq(d.fd, -ETIMEDOUT);
	ck_assert_uint_eq(d.file.flags, EMBER_BROKER_STALLED | EMBER_BROKER_MISSED_DEADLINE);
	ck_assert(d.req.id == 2 && d.file.dev_major == 0 && d.file.dev_minor == 20);
	ck_assert_uint_ge(now_ns() - t0, 300 * MS);
	ck_assert_uint_lt(now_ns() - t0, 2000 * MS);
	ck_assert_uint_eq(ember_pool_stuck(&p), 1);

	/* That device is refused at once by the next worker; another one is served. "At once"
	 * is "not after a deadline": 20 s meanwhile, which no delay of a loaded host nears. */
	p.deadline_ns = 20000 * MS;
	t0 = now_ns();
	ck_assert_int_eq(submit(&p, 3, 20, ANSWER, &f), 0);
	d = next_done(&p);
	ck_assert(d.req.id == 3 && d.fd == -ETIMEDOUT && d.file.flags == EMBER_BROKER_STALLED);
	ck_assert_uint_lt(now_ns() - t0, 10000 * MS);
	p.deadline_ns = 300 * MS;
	ck_assert_int_eq(submit(&p, 4, 30, ANSWER, &f), 0);
	d = next_done(&p);
	ck_assert(d.req.id == 4 && d.fd >= 0);
	close(d.fd);

	/* A worker that waits before it reaches a device stalls its process. While that worker
	 * waits on it, the process's mapped files are reached by their paths, one at a time. */
	ck_assert_int_eq(submit(&p, 5, 40, STALL_EARLY, &f), 0);
	d = next_done(&p);
	ck_assert(d.req.id == 5 && d.fd == -ETIMEDOUT && d.file.dev_minor == 0);
	ck_assert_int_eq(submit(&p, 6, 40, ANSWER, &f), 0);
	ck_assert_int_eq(submit(&p, 60, 40, ANSWER, &f), -ETIMEDOUT); /* one at a time */
	ck_assert(f.flags & EMBER_BROKER_STALLED);
	d = next_done(&p);
	ck_assert(d.req.id == 6 && d.fd >= 0 && d.file.ino == 1);
	close(d.fd);

	/* One by path waits too (the kernel's maps wait on the lock): the process's requests are
	 * refused at once. */
	ck_assert_int_eq(submit(&p, 7, 40, STALL_EARLY, &f), 0);
	d = next_done(&p);
	ck_assert_int_eq(d.fd, -ETIMEDOUT);
	ck_assert_int_eq(submit(&p, 8, 40, ANSWER, &f), -ETIMEDOUT);
	ck_assert(f.flags & EMBER_BROKER_STALLED);

	/* The last free worker touches no file system that can stall (device major 0) ... */
	ck_assert_int_eq(submit(&p, 9, 50, STALL, &f), 0);
	d = next_done(&p);
	ck_assert(d.req.id == 9 && d.fd == -ETIMEDOUT && d.file.flags == EMBER_BROKER_STALLED);
	ck_assert_uint_eq(ember_pool_stuck(&p), 3);

	/* ... but a process can still hold it: with no worker free, requests are refused. */
	ck_assert_int_eq(submit(&p, 10, 60, STALL_EARLY, &f), 0);
	d = next_done(&p);
	ck_assert_int_eq(d.fd, -ETIMEDOUT);
	ck_assert_uint_eq(ember_pool_stuck(&p), 4);
	ck_assert_int_eq(submit(&p, 11, 70, ANSWER, &f), -EBUSY);
	ck_assert(f.flags & EMBER_BROKER_STALLED);

	/* They come back: the stalls are over, device 0:20 and process 40 are served again. */
	writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	ck_assert_int_ge(writer, 0);
	read_late(&p);
	close(writer);
	ck_assert_uint_eq(ember_pool_stuck(&p), 0);
	ck_assert_uint_eq(p.late, 4);
	ck_assert_int_eq(submit(&p, 12, 20, ANSWER, &f), 0);
	d = next_done(&p);
	ck_assert(d.req.id == 12 && d.fd >= 0);
	close(d.fd);
	ck_assert_int_eq(submit(&p, 13, 40, ANSWER, &f), 0);
	d = next_done(&p);
	ck_assert(d.req.id == 13 && d.fd >= 0 && d.file.ino == 0);
	close(d.fd);
	ck_assert_uint_eq(p.abandoned, 4);

	/* A stuck worker that exits (killed) ends its stall with it: the next request for that
	 * device is served (were it still stalled, its worker would be the next probe). */
	ck_assert_int_eq(submit(&p, 14, 80, STALL, &f), 0);
	d = next_done(&p);
	ck_assert(d.req.id == 14 && d.fd == -ETIMEDOUT);
	ck_assert_int_eq(submit(&p, 15, 80, ANSWER, &f), 0);
	d = next_done(&p);
	ck_assert(d.req.id == 15 && d.fd == -ETIMEDOUT && d.file.flags == EMBER_BROKER_STALLED);
	for (unsigned int i = 0; i < p.nworkers; i++)
		if (p.workers[i].state == EMBER_WORKER_STUCK) {
			ck_assert_int_eq(kill(p.workers[i].pid, SIGKILL), 0);
			ck_assert_int_eq(waitpid(p.workers[i].pid, NULL, 0), p.workers[i].pid);
			ck_assert_int_eq(ember_pool_on_readable(&p, i, now_ns(), &d), 0);
			ck_assert_int_eq(p.workers[i].state, EMBER_WORKER_GONE);
		}
	ck_assert_uint_eq(ember_pool_stuck(&p), 0);
	ck_assert_int_eq(submit(&p, 16, 80, ANSWER, &f), 0);
	d = next_done(&p);
	ck_assert(d.req.id == 16 && d.fd >= 0);
	close(d.fd);
	ember_pool_stop(&p);
	ember_procs_free(&procs);
	unlink(fifo);
}
END_TEST

/* Snapshots of a process's maps: copied by a spare worker into the collector's memfd; never
 * with fewer than three workers free, nor while one waits on a stall. */
START_TEST(snapshots_take_only_spare_workers)
{
	struct ember_procs procs;
	struct ember_broker b;
	struct ember_pool p = {.open = test_open};
	struct ember_broker_file f;
	struct ember_pool_done d;
	uint32_t self = (uint32_t)getpid(), due, gen;
	char live[256], copy[256];
	int memfd, maps, fd, writer;
	ssize_t n;

	snprintf(fifo, sizeof(fifo), "/tmp/ember-pool-%d", (int)getpid());
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(ember_procs_init(&procs, 16), 0);
	ember_broker_init(&b, &procs);
	ck_assert_int_eq(ember_pool_start(&p, &b, 4), 0);
	p.deadline_ns = 300 * MS;
	ck_assert_int_eq(ember_procs_note(&procs, self, 0, true), 0);
	ck_assert_int_eq(ember_procs_snapshot_due(&procs, 0, &due, &gen, &memfd), 1);

	/* With every worker free: the memfd holds what the maps say, sealed once kept. */
	maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	ck_assert_int_eq(ember_pool_snapshot(&p, self, gen, maps, memfd, now_ns()), 0);
	close(maps);
	d = next_done(&p);
	ck_assert(d.snapshot_gen == gen && d.req.pid == self && d.fd >= 0);
	ember_procs_snapshot_done(&procs, self, gen, d.fd, now_ns());
	ck_assert_uint_eq(procs.snaps_taken, 1);
	ember_procs_forget(&procs, self, 0); /* as if it exited */
	fd = ember_procs_snapshot_open(&procs, self, now_ns(), false);
	ck_assert_int_ge(fd, 0);
	n = pread(fd, copy, sizeof(copy) - 1, 0);
	close(fd);
	maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	ck_assert_int_eq(read(maps, live, sizeof(live) - 1), sizeof(live) - 1);
	close(maps);
	ck_assert_int_eq(n, sizeof(copy) - 1);
	ck_assert(!memcmp(live, copy, 64)); /* the first mapping: the same */

	/* While a worker waits on a stall (here a process's), none: three are still free, but
	 * they are the symbolizer's, whose requests are served. */
	ck_assert_int_eq(submit(&p, 1, 40, STALL_EARLY, &f), 0);
	d = next_done(&p);
	ck_assert_int_eq(d.fd, -ETIMEDOUT);
	ck_assert_int_eq(ember_procs_note(&procs, self, 0, true), 0);
	ck_assert_int_eq(ember_procs_snapshot_due(&procs, 0, &due, &gen, &memfd), 1);
	maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	ck_assert_int_eq(ember_pool_snapshot(&p, self, gen, maps, memfd, now_ns()), -EBUSY);
	ck_assert_int_eq(ember_pool_snapshot(&p, 40, gen, maps, memfd, now_ns()), -EBUSY);
	close(maps);
	ck_assert_int_eq(submit(&p, 3, 30, ANSWER, &f), 0);
	d = next_done(&p);
	ck_assert(d.req.id == 3 && d.fd >= 0 && !d.snapshot_gen);
	close(d.fd);

	writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	read_late(&p);
	close(writer);
	ember_pool_stop(&p);
	ember_procs_free(&procs);
	unlink(fifo);
}
END_TEST

/* A perf map, opened by a confined worker (its seccomp group allows what the open does:
 * the process's namespace PID, root, owner and file) as the broker opens it. */
START_TEST(a_perf_map_opened_by_a_worker)
{
	struct ember_procs procs;
	struct ember_broker b;
	struct ember_pool p = {0};
	struct ember_msg_broker_req req = {.id = 1, .what = EMBER_BROKER_PERF_MAP};
	struct ember_broker_file f = {0};
	struct ember_pool_done d;
	pid_t child = ember_waiting_child();
	char path[64], buf[16];
	FILE *map;
	int status;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)child);
	map = fopen(path, "w");
	ck_assert_ptr_nonnull(map);
	fputs("1000 10 jitted\n", map);
	fclose(map);
	ck_assert_int_eq(ember_procs_init(&procs, 16), 0);
	ember_broker_init(&b, &procs);
	ck_assert_int_eq(ember_pool_start(&p, &b, 2), 0);
	req.pid = (uint32_t)child;
	ck_assert_int_eq(ember_pool_submit(&p, &req, 1, now_ns(), &f), 0);
	d = next_done(&p);
	ck_assert_msg(d.fd >= 0, "perf map: %s", strerror(-d.fd));
	ck_assert_int_eq(pread(d.fd, buf, sizeof(buf), 0), 15);
	ck_assert(!memcmp(buf, "1000 10 jitted\n", 15));
	close(d.fd);
	ember_pool_stop(&p);
	ember_procs_free(&procs);
	unlink(path);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
}
END_TEST

static Suite *broker_pool_suite(void)
{
	Suite *s = suite_create("broker_pool");
	TCase *t = tcase_create("broker_pool");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, a_worker_past_its_deadline_is_left_waiting);
	tcase_add_test(t, snapshots_take_only_spare_workers);
	tcase_add_test(t, a_perf_map_opened_by_a_worker);
	suite_add_tcase(s, t);
	return s;
}

EMBER_CHECK_MAIN(broker_pool_suite)
