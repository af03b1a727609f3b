// SPDX-License-Identifier: Apache-2.0
/*
 * bench/soak --leak-mib-per-hour: a leak of a known rate in the symbolizer, so that one can
 * see --check catch it. Preloaded (LD_PRELOAD) into the symbolizer daemon: its calls of
 * clock_gettime(CLOCK_MONOTONIC), which it makes all the time, allocate and touch 4 KiB blocks
 * (through the program's own malloc, so its counting allocator charges them to whatever owner
 * is current) and never free them, EMBER_SOAK_LEAK_BYTES_PER_S bytes a second on average.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static double rate, start = -1, leaked;
static int inside;

__attribute__((constructor)) static void leak_init(void)
{
	const char *r = getenv("EMBER_SOAK_LEAK_BYTES_PER_S");

	rate = r ? atof(r) : 0;
	real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	int r = real_clock_gettime(id, ts);
	double now;

	if (r || id != CLOCK_MONOTONIC || inside || rate <= 0)
		return r;
	inside = 1;
	now = (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
	if (start < 0)
		start = now;
	while (leaked + 4096 <= rate * (now - start)) {
		char *p = malloc(4096);

		if (!p)
			break;
		memset(p, 0x5a, 4096);
		leaked += 4096;
	}
	inside = 0;
	return r;
}
