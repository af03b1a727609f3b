// SPDX-License-Identifier: Apache-2.0
/*
 * A CPU-bound program for the unwinder, meant to be built with
 * -O2 -fomit-frame-pointer: frame pointers cannot find its callers, only
 * the CFI can. Three leaf functions at a known split, each through its own
 * caller, one of them through a libc callback (qsort calls cmp_b):
 *   run -> caller_a -> leaf_a                                 60%
 *   run -> caller_b -> qsort -> ... -> cmp_b -> leaf_b        30%
 *   run -> caller_c -> leaf_c                                 10%
 * run is called by main and by thread_entry in the other threads.
 * Built with -DDEPTH=N, each leaf is called through N frames of descend
 * (bench/unwind's deep workload: a stack of about N + 8 frames).
 * Usage: unwind SECONDS [THREADS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "known_split.h"

/* The asm barrier after each call keeps it a real call (no tail call). */
#define NO_TAIL_CALL() __asm__ volatile("" ::: "memory")

#ifndef DEPTH
#define DEPTH 0
#endif

#if DEPTH > 0
/* Calls leaf(units) from n frames further down. */
__attribute__((noinline)) void descend(int n, void (*leaf)(long), long units)
{
	if (n > 0)
		descend(n - 1, leaf, units);
	else
		leaf(units);
	NO_TAIL_CALL();
}
#define LEAF(f, units) descend(DEPTH, f, units)
#else
#define LEAF(f, units) f(units)
#endif

__attribute__((noinline)) void leaf_a(long units)
{
	for (long i = 0; i < units * UNIT; i++)
		sink += (unsigned long)i ^ (sink >> 3);
}

__attribute__((noinline)) void leaf_b(long units)
{
	for (long i = 0; i < units * UNIT; i++)
		sink += (unsigned long)i ^ (sink >> 3);
}

__attribute__((noinline)) void leaf_c(long units)
{
	for (long i = 0; i < units * UNIT; i++)
		sink += (unsigned long)i ^ (sink >> 3);
}

/* qsort of two elements compares them exactly once. */
__attribute__((noinline)) int cmp_b(const void *x, const void *y)
{
	TRUTH_MEASURE(1, LEAF(leaf_b, 3));
	NO_TAIL_CALL();
	return *(const int *)x - *(const int *)y;
}

__attribute__((noinline)) void caller_a(void)
{
	TRUTH_MEASURE(0, LEAF(leaf_a, 6));
	NO_TAIL_CALL();
}

__attribute__((noinline)) void caller_b(void)
{
	int pair[2] = {2, 1};

	qsort(pair, 2, sizeof(pair[0]), cmp_b);
	NO_TAIL_CALL();
	sink += (unsigned long)pair[0];
}

__attribute__((noinline)) void caller_c(void)
{
	TRUTH_MEASURE(2, LEAF(leaf_c, 1));
	NO_TAIL_CALL();
}
