/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a part of the symbolizer writes its statistics: a name such as
 * "python.frames" and a value, handed to whoever keeps them (the profile's
 * statistics, through symbolize.c). Parts below the profile model report
 * through a sink instead of linking it.
 */
#ifndef EMBER_SHARED_STAT_SINK_H
#define EMBER_SHARED_STAT_SINK_H

#include <stdint.h>

struct ember_stat_sink {
	void (*set)(void *ctx, const char *name, uint64_t value);
	void *ctx;
};

static inline void ember_stat(const struct ember_stat_sink *sink, const char *name, uint64_t value)
{
	sink->set(sink->ctx, name, value);
}

#endif
