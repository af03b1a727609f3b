// SPDX-License-Identifier: Apache-2.0
/*
 * A quiet daemon or a one-shot program, built -fomit-frame-pointer in many
 * variants (-DVARIANT=n: distinct binaries, their code differs).
 *
 *   quiet PERIOD_MS WORK_MS SECONDS   every PERIOD_MS wake up, work WORK_MS of
 *                                     CPU in nested calls, sleep again; for
 *                                     SECONDS, then exit
 *   quiet 0 WORK_MS                   work WORK_MS once and exit (one-shot)
 *
 * Every stack of the work is main -> quiet_serve -> quiet_work ->
 * quiet_leaf (and libc's clock_gettime under it); a complete stack reaches
 * _start through __libc_start_main. When EMBER_TRUTH_FILE is set, the
 * process appends "pid=PID work_ns=NS" at exit: the CPU time it spent in
 * quiet_work by its own thread CPU clock.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef VARIANT
#define VARIANT 0
#endif

static volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Spins until the thread has used `until` seconds of CPU. */
__attribute__((noinline)) static void quiet_leaf(double until)
{
	while (cpu_now() < until)
		for (unsigned long i = 0; i < 2000; i++)
			sink += i * (VARIANT + 1);
}

__attribute__((noinline)) static double quiet_work(double ms)
{
	double start = cpu_now();

	quiet_leaf(start + ms / 1e3);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
	return cpu_now() - start;
}

__attribute__((noinline)) static double quiet_serve(long period_ms, double work_ms,
                                                    double seconds)
{
	struct timespec nap = {period_ms / 1000, (period_ms % 1000) * 1000000L}, t0, t;
	double worked = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		worked += quiet_work(work_ms);
		if (!period_ms)
			break;
		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return worked;
}

int main(int argc, char **argv)
{
	const char *truth = getenv("EMBER_TRUTH_FILE");
	double worked;
	char line[64];
	int fd, n;

	if (argc < 3) {
		fprintf(stderr, "usage: %s PERIOD_MS WORK_MS [SECONDS] (variant %d)\n", argv[0],
		        VARIANT);
		return 2;
	}
	worked = quiet_serve(atol(argv[1]), atof(argv[2]), argc > 3 ? atof(argv[3]) : 0);
	if (truth && (fd = open(truth, O_WRONLY | O_APPEND | O_CREAT, 0644)) >= 0) {
		n = snprintf(line, sizeof(line), "pid=%d work_ns=%.0f\n", (int)getpid(),
		             worked * 1e9);
		if (write(fd, line, (size_t)n) != n)
			perror("truth");
		close(fd);
	}
	return 0;
}
