// SPDX-License-Identifier: Apache-2.0
/*
 * Stacks through the vDSO and a signal frame, for the unwinder: main spins
 * on clock_gettime (in the vDSO) and a 50 Hz SIGALRM handler burns CPU, so
 * that samples in the handler must be unwound through libc's signal
 * trampoline back into the vDSO code it interrupted. Build with
 * -O2 -fomit-frame-pointer. Usage: signal SECONDS
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void in_handler(void)
{
	for (long i = 0; i < 2000000; i++)
		sink += (unsigned long)i ^ (sink >> 3);
	__asm__ volatile("" ::: "memory");
}

static void handler(int sig)
{
	(void)sig;
	in_handler();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void spin(double seconds)
{
	struct timespec ts, start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += (unsigned long)ts.tv_nsec;
	} while ((double)(ts.tv_sec - start.tv_sec) + (ts.tv_nsec - start.tv_nsec) / 1e9 < seconds);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = handler};
	struct itimerval it = {{0, 20000}, {0, 20000}};

	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	spin(argc > 1 ? atof(argv[1]) : 10);
	return 0;
}
