// SPDX-License-Identifier: Apache-2.0
/*
 * A CPU-bound program with a known split of its time between three leaf
 * functions, each reached through its own caller:
 *   main -> run -> caller_a -> leaf_a   60%
 *   main -> run -> caller_b -> leaf_b   30%
 *   main -> run -> caller_c -> leaf_c   10%
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
