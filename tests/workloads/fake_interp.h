/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the hostile fake interpreters (fake_python.c, fake_php.c, fake_perl.c) share: the
 * arena their structures live in, little-endian stores, a random stream, and the run:
 *
 *   fake_NAME MODE SECONDS
 *
 * setup() lays out MODE's structures (every fake knows cycle, garbage, unmapped, forged
 * and churn); then the fake's interpreter loop burns CPU until SECONDS have passed. In
 * garbage mode bytes of the arena past `keep` are rewritten between calls of the loop; in
 * churn mode the fake's churn thread rewrites links meanwhile.
 */
#ifndef EMBER_TESTS_FAKE_INTERP_H
#define EMBER_TESTS_FAKE_INTERP_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint8_t arena[1 << 16] __attribute__((aligned(64)));
static volatile unsigned long sink;
static volatile int stop;
static const char *mode;

static inline void put64(uint8_t *at, uint64_t v)
{
	memcpy(at, &v, 8);
}

static inline void put32(uint8_t *at, uint32_t v)
{
	memcpy(at, &v, 4);
}

static inline uint64_t rnd(void)
{
	static __thread uint64_t s = 88172645463325252ull;

	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

/* Fills the arena with random bytes (garbage and churn modes start so). */
static inline void fill_arena(void)
{
	for (size_t i = 0; i < sizeof(arena); i++)
		arena[i] = (uint8_t)rnd();
}

/* The run (above); loop is the fake's interpreter loop, which burns n iterations. */
static inline int fake_main(int argc, char **argv, void (*setup)(void), void *(*churn)(void *),
                            void (*loop)(unsigned long), size_t keep)
{
	pthread_t other;
	time_t end;

	if (argc < 3)
		return 2;
	mode = argv[1];
	end = time(NULL) + atoi(argv[2]);
	setup();
	if (!strcmp(mode, "churn") && pthread_create(&other, NULL, churn, NULL))
		return 1;
	while (time(NULL) < end) {
		loop(1000000);
		if (!strcmp(mode, "garbage"))
			for (int i = 0; i < 256; i++)
				arena[keep + rnd() % (sizeof(arena) - keep)] = (uint8_t)rnd();
	}
	stop = 1;
	if (!strcmp(mode, "churn"))
		pthread_join(other, NULL);
	printf("%lu\n", sink);
	return 0;
}

#endif
