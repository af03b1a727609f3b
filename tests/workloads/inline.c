// SPDX-License-Identifier: Apache-2.0
/*
 * Inlined functions with a known split, for checking inline frames:
 *   main -> outer -> mix_a (inlined)  about 2/3 of the loop's work
 *                 -> mix_b (inlined)  about 1/3
 * Built with -O2 -g; mix_a and mix_b never exist as functions of their own,
 * so only DWARF's inline records can name them. Usage: inline SECONDS.
 *
 * Ground truth: the thread's CPU time around each inlined call; with
 * EMBER_TRUTH_FILE set, one line is appended at exit (SIGTERM and SIGINT end
 * the run early and still write it):
 *   mix_a=NS mix_b=NS
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t stop;
static unsigned long long spent[2];

static unsigned long long thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

#define FORCE_FRAME(n) ((volatile char *)__builtin_alloca(((n)&1) + 1))[0] = 0

static inline __attribute__((always_inline)) unsigned long mix_a(unsigned long x, long n)
{
	for (long i = 0; i < n; i++)
		x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15ul + (unsigned long)i;
	return x;
}

static inline __attribute__((always_inline)) unsigned long mix_b(unsigned long x, long n)
{
	for (long i = 0; i < n; i++)
		x = (x ^ (x >> 5)) * 0xc2b2ae3d27d4eb4ful + (unsigned long)i;
	return x;
}

__attribute__((noinline)) void outer(long rounds)
{
	FORCE_FRAME(rounds);
	for (long r = 0; r < rounds; r++) {
		unsigned long long t0 = thread_ns(), t1;

		sink = mix_a(sink, 20000);
		t1 = thread_ns();
		sink = mix_b(sink, 10000);
		spent[0] += t1 - t0;
		spent[1] += thread_ns() - t1;
	}
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	const char *truth = getenv("EMBER_TRUTH_FILE");
	struct timespec start, now;

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		outer(100);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (!stop && (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 <
	                      seconds);
	if (truth) {
		char line[96];
		int n = snprintf(line, sizeof(line), "mix_a=%llu mix_b=%llu\n", spent[0], spent[1]);
		int fd = open(truth, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			if (write(fd, line, (size_t)n) != n)
				perror("truth");
			close(fd);
		}
	}
	printf("%lu\n", sink);
	return 0;
}
