/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the known-split workloads (split.c, unwind.c) share: the unit of work,
 * rounds that drift against the sampling clock, and ground truth.
 *
 * Ground truth: how much CPU time each leaf
 * really took, measured by the workload itself with the thread CPU clock
 * around every leaf call. Nominal splits drift with code alignment, caches
 * and the machine; tests compare a profiler's shares with this measurement.
 *
 * When EMBER_TRUTH_FILE is set, the process appends one line at exit:
 *   leaf_a=NS leaf_b=NS leaf_c=NS
 * When EMBER_CPU_FILE is set, it appends its whole CPU time (every thread, from
 * its exec on: CLOCK_PROCESS_CPUTIME_ID) there at exit: cpu_ns=NS.
 * SIGTERM and SIGINT end the run early and still write the lines.
 */
#ifndef EMBER_WORKLOAD_KNOWN_SPLIT_H
#define EMBER_WORKLOAD_KNOWN_SPLIT_H

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/*
 * One unit lasts about a millisecond, so a round (10 units) spans many
 * sampling periods: rounds much shorter than the period lock into a phase
 * against the sampling clock and bias every profiler's shares.
 */
#define UNIT 700000

/* Per thread: threads sharing one counter would fight over its cache line. */
static __thread volatile unsigned long sink;

/* Work of random length outside the leaves: rounds drift against the sampling clock. */
__attribute__((noinline)) static void dither(void)
{
	static __thread unsigned long state = 88172645463325252ul;
	unsigned long n;

	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	n = state % (UNIT / 4);
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define TRUTH_LEAVES 3

static volatile sig_atomic_t truth_stop;
static unsigned long long truth_total[TRUTH_LEAVES];
static __thread unsigned long long truth_mine[TRUTH_LEAVES];
static pthread_mutex_t truth_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned long long truth_thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Runs stmt and charges its thread CPU time to leaf i. */
#define TRUTH_MEASURE(i, stmt)                                                                     \
	do {                                                                                       \
		unsigned long long t0_ = truth_thread_ns();                                        \
		stmt;                                                                              \
		truth_mine[i] += truth_thread_ns() - t0_;                                          \
	} while (0)

/* Each thread adds its own counts when it finishes. */
static void truth_thread_done(void)
{
	pthread_mutex_lock(&truth_lock);
	for (int i = 0; i < TRUTH_LEAVES; i++)
		truth_total[i] += truth_mine[i];
	pthread_mutex_unlock(&truth_lock);
}

static void truth_on_signal(int sig)
{
	(void)sig;
	truth_stop = 1;
}

static void truth_init(void)
{
	struct sigaction sa = {.sa_handler = truth_on_signal};

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

static void truth_write(void)
{
	const char *path = getenv("EMBER_TRUTH_FILE");
	char line[160];
	int fd, n;

	if (!path)
		return;
	n = snprintf(line, sizeof(line), "leaf_a=%llu leaf_b=%llu leaf_c=%llu\n", truth_total[0],
	             truth_total[1], truth_total[2]);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) != n)
			perror("truth");
		close(fd);
	}
}

static void cpu_write(void)
{
	const char *path = getenv("EMBER_CPU_FILE");
	struct timespec ts;
	char line[64];
	int fd, n;

	if (!path || clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return;
	n = snprintf(line, sizeof(line), "cpu_ns=%llu\n",
	             (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) != n)
			perror("cpu");
		close(fd);
	}
}

/* Each workload defines its three callers; this header runs them. */
void caller_a(void);
void caller_b(void);
void caller_c(void);

static double seconds = 10;

/* One round after another until the time is up (or SIGTERM/SIGINT). */
__attribute__((noinline)) void *run(void *arg)
{
	double end = now() + seconds;

	(void)arg;
	while (!truth_stop && now() < end) {
		caller_a();
		caller_b();
		caller_c();
		dither();
	}
	truth_thread_done();
	__asm__ volatile("" ::: "memory"); /* a real call: no tail call */
	return NULL;
}

__attribute__((noinline)) static void *thread_entry(void *arg)
{
	void *r = run(arg);

	__asm__ volatile("" ::: "memory");
	return r;
}

/* Usage: WORKLOAD SECONDS [THREADS] */
int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t tids[64];

	if (argc > 1)
		seconds = atof(argv[1]);
	truth_init();
	if (threads < 1 || threads > 64)
		threads = 1;
	for (int i = 1; i < threads; i++)
		pthread_create(&tids[i], NULL, thread_entry, NULL);
	run(NULL);
	for (int i = 1; i < threads; i++)
		pthread_join(tids[i], NULL);
	truth_write();
	cpu_write();
	printf("%lu\n", sink & 1);
	return 0;
}

#endif
