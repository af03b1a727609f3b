/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Threads that wait in known places, and measure every wait themselves: the
 * ground truth for ember's off-CPU profiles (tests/integration/test_offcpu.py,
 * bench/offcpu).
 *
 *   offcpu known SECONDS DIR   a worker that sleeps (nanosleep), reads a pipe,
 *                              waits on a futex and reads a file with O_DIRECT
 *                              from DIR (skipped where DIR cannot do direct I/O),
 *                              the helpers that wake it, and the main thread
 *   offcpu migrate SECONDS     a thread moved to another CPU while it sleeps
 *   offcpu rapid SECONDS       four threads that sleep 300 us at a time: about
 *                              12,000 waits a second, for the sampling at high rates
 *   offcpu pingpong SECONDS [WORK [CPU]]  two threads handing a byte back and
 *                              forth through pipes, each spinning WORK iterations
 *                              (default 0) before it hands it on, both on CPU if
 *                              given (one switch per hand-off): many switches a second
 *
 * Each mode prints "ready" and waits for a line on standard input (the
 * profiler is attached): then it runs on CPU for 0.3 s (so that the profiler
 * meets the process and loads what it needs to unwind it), waits for a second
 * line in wait_go, runs for SECONDS, and prints "function=NS" per waiting
 * function (wait_go included): the time its
 * threads spent off CPU inside it, measured as the wall time of each blocking
 * call less the thread's CPU time during the call. `migrate` adds
 * "migrations=N waits=M"; `pingpong` adds "handoffs=N".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Off-CPU time of one blocking call: wall time less the thread's CPU time. */
struct span {
	uint64_t wall, cpu;
};

static struct span span_begin(void)
{
	return (struct span){clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_THREAD_CPUTIME_ID)};
}

static void span_end(struct span s, _Atomic uint64_t *total)
{
	uint64_t wall = clock_ns(CLOCK_MONOTONIC) - s.wall;
	uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - s.cpu;

	atomic_fetch_add(total, wall > cpu ? wall - cpu : 0);
}

enum fn {
	WAIT_SLEEP,
	WAIT_PIPE,
	WAIT_FUTEX,
	WAIT_DISK,
	FEEDER_IDLE,
	FEEDER_DELAY,
	WAKER_IDLE,
	WAKER_DELAY,
	MAIN_WAIT,
	WAIT_MIGRATING,
	MOVER_DELAY,
	WAIT_RAPID,
	WAIT_PING,
	WAIT_GO,
	NFN,
};

static const char *const fn_names[NFN] = {
    [WAIT_SLEEP] = "wait_sleep",   [WAIT_PIPE] = "wait_pipe",
    [WAIT_FUTEX] = "wait_futex",   [WAIT_DISK] = "wait_disk",
    [FEEDER_IDLE] = "feeder_idle", [FEEDER_DELAY] = "feeder_delay",
    [WAKER_IDLE] = "waker_idle",   [WAKER_DELAY] = "waker_delay",
    [MAIN_WAIT] = "main_wait",     [WAIT_MIGRATING] = "wait_migrating",
    [MOVER_DELAY] = "mover_delay", [WAIT_RAPID] = "wait_rapid",
    [WAIT_PING] = "wait_ping",     [WAIT_GO] = "wait_go",
};

static _Atomic uint64_t waited[NFN];
static atomic_bool stop;

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void read_byte(int fd)
{
	char c;

	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
}

static void write_byte(int fd)
{
	while (write(fd, "x", 1) < 0 && errno == EINTR)
		;
}

/* ---- known: where the worker waits ----------------------------------------------------- */

static int feed_req[2], feed_data[2], wake_req[2];
static _Atomic uint32_t futex_word;
static int disk_fd = -1;
static char *disk_buf;
#define DISK_BYTES (4u << 20)
#define DISK_FILE  (16u << 20)

NOINLINE static void wait_sleep(void)
{
	struct span s = span_begin();

	sleep_ns(2000000);
	span_end(s, &waited[WAIT_SLEEP]);
}

NOINLINE static void wait_pipe(void)
{
	struct span s;

	write_byte(feed_req[1]);
	s = span_begin();
	read_byte(feed_data[0]);
	span_end(s, &waited[WAIT_PIPE]);
}

NOINLINE static void wait_futex(void)
{
	struct span s;

	atomic_store(&futex_word, 0);
	write_byte(wake_req[1]);
	s = span_begin();
	while (!atomic_load(&futex_word))
		syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	span_end(s, &waited[WAIT_FUTEX]);
}

NOINLINE static void wait_disk(unsigned int round)
{
	struct span s = span_begin();
	off_t off = (off_t)(round % (DISK_FILE / DISK_BYTES)) * DISK_BYTES;

	if (pread(disk_fd, disk_buf, DISK_BYTES, off) < 0)
		perror("pread");
	span_end(s, &waited[WAIT_DISK]);
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "oc-worker");
	for (unsigned int round = 0; !atomic_load(&stop); round++) {
		wait_sleep();
		wait_pipe();
		wait_futex();
		if (disk_fd >= 0)
			wait_disk(round);
	}
	/* Let the helpers go. */
	write_byte(feed_req[1]);
	write_byte(wake_req[1]);
	return NULL;
}

NOINLINE static void feeder_idle(void)
{
	struct span s = span_begin();

	read_byte(feed_req[0]);
	span_end(s, &waited[FEEDER_IDLE]);
}

NOINLINE static void feeder_delay(void)
{
	struct span s = span_begin();

	sleep_ns(6000000);
	span_end(s, &waited[FEEDER_DELAY]);
}

static void *feeder(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "oc-feeder");
	while (!atomic_load(&stop)) {
		feeder_idle();
		if (atomic_load(&stop))
			break;
		feeder_delay();
		write_byte(feed_data[1]);
	}
	write_byte(feed_data[1]);
	return NULL;
}

NOINLINE static void waker_idle(void)
{
	struct span s = span_begin();

	read_byte(wake_req[0]);
	span_end(s, &waited[WAKER_IDLE]);
}

NOINLINE static void waker_delay(void)
{
	struct span s = span_begin();

	sleep_ns(12000000);
	span_end(s, &waited[WAKER_DELAY]);
}

static void *waker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "oc-waker");
	while (!atomic_load(&stop)) {
		waker_idle();
		if (atomic_load(&stop))
			break;
		waker_delay();
		atomic_store(&futex_word, 1);
		syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	atomic_store(&futex_word, 1);
	syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return NULL;
}

/* A file in dir read with O_DIRECT: a wait in the disk (uninterruptible), where allowed. */
static void open_disk(const char *dir)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/offcpu-disk.bin", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || posix_memalign((void **)&disk_buf, 4096, DISK_BYTES))
		goto none;
	memset(disk_buf, 0x5a, DISK_BYTES);
	for (unsigned int i = 0; i < DISK_FILE / DISK_BYTES; i++)
		if (write(fd, disk_buf, DISK_BYTES) != DISK_BYTES)
			goto none;
	fsync(fd);
	close(fd);
	disk_fd = open(path, O_RDONLY | O_DIRECT);
	unlink(path);
	if (disk_fd >= 0 && pread(disk_fd, disk_buf, DISK_BYTES, 0) == DISK_BYTES)
		return;
none:
	fprintf(stderr, "offcpu: no direct I/O in %s: no disk waits\n", dir);
	if (disk_fd >= 0)
		close(disk_fd);
	disk_fd = -1;
}

/* ---- migrate: a thread moved to another CPU while it sleeps ------------------------------- */

static pid_t mover_tid;
static _Atomic int mover_cpu = -1; /* the CPU the next wait should end on */
static _Atomic unsigned int migrations, migrate_waits;

static void pin(pid_t tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(tid, sizeof(set), &set))
		perror("sched_setaffinity");
}

NOINLINE static void wait_migrating(void)
{
	int before = sched_getcpu(), after;
	struct span s = span_begin();

	/* The mover moves this thread to the other CPU 10 ms into the sleep. */
	atomic_store(&mover_cpu, before);
	sleep_ns(50000000);
	span_end(s, &waited[WAIT_MIGRATING]);
	after = sched_getcpu();
	atomic_fetch_add(&migrate_waits, 1);
	if (after != before)
		atomic_fetch_add(&migrations, 1);
}

static void *migrating(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "oc-migrating");
	mover_tid = (pid_t)syscall(SYS_gettid);
	pin(mover_tid, 0);
	while (!atomic_load(&stop))
		wait_migrating();
	return NULL;
}

NOINLINE static void mover_delay(uint64_t ns)
{
	struct span s = span_begin();

	sleep_ns(ns);
	span_end(s, &waited[MOVER_DELAY]);
}

static void *mover(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "oc-mover");
	while (!atomic_load(&stop)) {
		int cpu = atomic_exchange(&mover_cpu, -1);

		if (cpu < 0) {
			mover_delay(1000000);
			continue;
		}
		mover_delay(10000000);
		pin(mover_tid, !cpu);
	}
	return NULL;
}

/* ---- rapid and pingpong: many short waits --------------------------------------------------- */

NOINLINE static void wait_rapid(void)
{
	struct span s = span_begin();

	sleep_ns(300000);
	span_end(s, &waited[WAIT_RAPID]);
}

static void *rapid(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "oc-rapid");
	while (!atomic_load(&stop))
		wait_rapid();
	return NULL;
}

static int ping[2], pong[2];
static _Atomic uint64_t handoffs;
static unsigned long pingpong_work;
static int pingpong_cpu = -1;

NOINLINE static void work(unsigned long n)
{
	volatile unsigned long sink = 0;

	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

NOINLINE static void wait_ping(int fd)
{
	struct span s = span_begin();

	read_byte(fd);
	span_end(s, &waited[WAIT_PING]);
}

static void *pinger(void *arg)
{
	int side = (int)(intptr_t)arg;

	pthread_setname_np(pthread_self(), side ? "oc-pong" : "oc-ping");
	if (pingpong_cpu >= 0)
		pin((pid_t)syscall(SYS_gettid), pingpong_cpu);
	if (!side)
		write_byte(ping[1]);
	while (!atomic_load(&stop)) {
		wait_ping(side ? ping[0] : pong[0]);
		atomic_fetch_add(&handoffs, 1);
		work(pingpong_work);
		write_byte(side ? pong[1] : ping[1]);
	}
	/* The other side may be waiting for this byte. */
	write_byte(side ? pong[1] : ping[1]);
	return NULL;
}

/* ---- main ------------------------------------------------------------------------------------ */

NOINLINE static void main_wait(uint64_t until)
{
	while (clock_ns(CLOCK_MONOTONIC) < until) {
		struct span s = span_begin();

		sleep_ns(100000000);
		span_end(s, &waited[MAIN_WAIT]);
	}
}

NOINLINE static int wait_go(char *line, int size)
{
	struct span s = span_begin();
	int ok = fgets(line, size, stdin) != NULL;

	span_end(s, &waited[WAIT_GO]);
	return ok;
}

NOINLINE static void warm_up(void)
{
	uint64_t until = clock_ns(CLOCK_MONOTONIC) + 300000000ull;
	volatile unsigned long sink = 0;

	while (clock_ns(CLOCK_MONOTONIC) < until)
		for (int i = 0; i < 10000; i++)
			sink += (unsigned long)i;
}

int main(int argc, char **argv)
{
	pthread_t t[4];
	int nthreads = 0;
	char line[16];
	double seconds;
	const char *mode;

	if (argc < 3) {
		fprintf(stderr, "usage: offcpu known|migrate|rapid|pingpong SECONDS [DIR]\n");
		return 2;
	}
	mode = argv[1];
	seconds = atof(argv[2]);
	if (!strcmp(mode, "pingpong") && argc > 3)
		pingpong_work = strtoul(argv[3], NULL, 10);
	if (!strcmp(mode, "pingpong") && argc > 4)
		pingpong_cpu = atoi(argv[4]);
	/* Sleeps as long as asked: no timer slack. */
	prctl(PR_SET_TIMERSLACK, 1);
	if (!strcmp(mode, "known") && argc > 3)
		open_disk(argv[3]);
	if (pipe(feed_req) || pipe(feed_data) || pipe(wake_req) || pipe(ping) || pipe(pong))
		return 1;
	/* Ready: wait for the go (the profiler is attached). */
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	warm_up();
	if (!wait_go(line, sizeof(line)))
		return 1;
	if (!strcmp(mode, "known")) {
		pthread_create(&t[nthreads++], NULL, feeder, NULL);
		pthread_create(&t[nthreads++], NULL, waker, NULL);
		pthread_create(&t[nthreads++], NULL, worker, NULL);
	} else if (!strcmp(mode, "migrate")) {
		pthread_create(&t[nthreads++], NULL, migrating, NULL);
		pthread_create(&t[nthreads++], NULL, mover, NULL);
	} else if (!strcmp(mode, "rapid")) {
		for (int i = 0; i < 4; i++)
			pthread_create(&t[nthreads++], NULL, rapid, NULL);
	} else if (!strcmp(mode, "pingpong")) {
		pthread_create(&t[nthreads++], NULL, pinger, (void *)0);
		pthread_create(&t[nthreads++], NULL, pinger, (void *)1);
	} else {
		fprintf(stderr, "offcpu: unknown mode %s\n", mode);
		return 2;
	}
	main_wait(clock_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9));
	atomic_store(&stop, true);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	for (int f = 0; f < NFN; f++)
		if (atomic_load(&waited[f]))
			printf("%s=%llu\n", fn_names[f],
			       (unsigned long long)atomic_load(&waited[f]));
	if (!strcmp(mode, "migrate"))
		printf("migrations=%u waits=%u\n", atomic_load(&migrations),
		       atomic_load(&migrate_waits));
	if (!strcmp(mode, "pingpong"))
		printf("handoffs=%llu\n", (unsigned long long)atomic_load(&handoffs));
	return 0;
}
