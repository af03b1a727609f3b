// SPDX-License-Identifier: Apache-2.0
/*
 * Inlined functions with a known split, for checking inline frames:
 *   main -> outer -> mix_a (inlined)  about 2/3 of the loop's work
 *                 -> mix_b (inlined)  about 1/3
 * Built with -O2 -g; mix_a and mix_b never exist as functions of their own,
 * so only DWARF's inline records can name them. Usage: inline SECONDS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

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
		sink = mix_a(sink, 20000);
		sink = mix_b(sink, 10000);
	}
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		outer(100);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 <
	         seconds);
	printf("%lu\n", sink);
	return 0;
}
