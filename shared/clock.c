// SPDX-License-Identifier: Apache-2.0
#include "shared/clock.h"

#include <errno.h>
#include <time.h>

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ember_monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t ember_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

void ember_sleep_until_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
	                      .tv_nsec = (long)(ns % 1000000000ull)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int64_t ember_monotonic_to_realtime_ns(void)
{
	/* Bracket the realtime read and keep the tightest of a few tries. */
	int64_t best = 0;
	uint64_t best_gap = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t m1 = ember_monotonic_ns(), r = ember_realtime_ns();
		uint64_t m2 = ember_monotonic_ns();

		if (m2 - m1 < best_gap) {
			best_gap = m2 - m1;
			best = (int64_t)(r - (m1 + (m2 - m1) / 2));
		}
	}
	return best;
}
