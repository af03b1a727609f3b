/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One connection to a collector: handshake, then read the sample ring,
 * symbolize and aggregate, and write the outputs whenever the collector
 * asks for a flush.
 */
#ifndef EMBER_SYMBOLIZER_SESSION_H
#define EMBER_SYMBOLIZER_SESSION_H

#include <stddef.h>

#include "output.h"

#define EMBER_MAX_OUTPUTS 16

struct ember_session_opts {
	int sock;
	struct ember_output outputs[EMBER_MAX_OUTPUTS];
	size_t noutputs;
	size_t objcache_bytes;
};

/* Runs until a final flush (returns 0) or a failure (negative errno). */
int ember_session_run(const struct ember_session_opts *o);

#endif
