// SPDX-License-Identifier: Apache-2.0
/*
 * A CPU-bound program with a known split of its time between three leaf
 * functions, each reached through its own caller:
 *   main -> caller_a -> leaf_a   60%
 *   main -> caller_b -> leaf_b   30%
 *   main -> caller_c -> leaf_c   10%
 * Usage: split SECONDS [THREADS]. Every leaf runs the same loop; the split
 * comes from how many units each caller asks for.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "known_split.h"

/*
 * GCC 12 omits the frame pointer of leaf functions even with
 * -mno-omit-leaf-frame-pointer; a variable-sized stack allocation makes it
 * keep one, as a leaf of a frame-pointer build should.
 */
#define FORCE_FRAME(n) ((volatile char *)__builtin_alloca(((n)&1) + 1))[0] = 0

__attribute__((noinline)) void leaf_a(long units)
{
	FORCE_FRAME(units);
	for (long i = 0; i < units * UNIT; i++)
		sink += (unsigned long)i ^ (sink >> 3);
}

__attribute__((noinline)) void leaf_b(long units)
{
	FORCE_FRAME(units);
	for (long i = 0; i < units * UNIT; i++)
		sink += (unsigned long)i ^ (sink >> 3);
}

__attribute__((noinline)) void leaf_c(long units)
{
	FORCE_FRAME(units);
	for (long i = 0; i < units * UNIT; i++)
		sink += (unsigned long)i ^ (sink >> 3);
}

/* The asm barrier keeps each call a real call with a frame of its own. */
__attribute__((noinline)) void caller_a(void)
{
	TRUTH_MEASURE(0, leaf_a(6));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void caller_b(void)
{
	TRUTH_MEASURE(1, leaf_b(3));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void caller_c(void)
{
	TRUTH_MEASURE(2, leaf_c(1));
	__asm__ volatile("" ::: "memory");
}

static double seconds = 10;

static void *run(void *arg)
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
	return NULL;
}

__attribute__((noinline)) static void *thread_entry(void *arg)
{
	return run(arg);
}

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
	printf("%lu\n", sink & 1);
	return 0;
}
