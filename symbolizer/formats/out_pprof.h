/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof output: a gzip-compressed profile.proto message as `go tool pprof`
 * reads it. Sample types samples/count and cpu/nanoseconds; labels pid, tid,
 * cpu, comm, thread. One comment sums the profile up (samples, lost, complete
 * stacks); the statistics (lost samples, cache counters, ...) follow as
 * comments "#name=value", which pprof shows only with -comments. The first
 * mapping says what the profile covers: "[system]" for the whole host, the
 * program for chosen processes.
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_OUT_PPROF_H
#define EMBER_SYMBOLIZER_FORMATS_OUT_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "symbolizer/profile/profile.h"

/* The first mapping of a whole-system profile, which pprof shows as "File: [system]". */
#define EMBER_PPROF_SYSTEM_MAPPING "[system]"

/* Encodes p (not compressed) into a malloc'd buffer. */
int ember_pprof_encode(const struct ember_profile *p, uint8_t **out, size_t *out_len);
/* Writes p gzip-compressed. */
int ember_write_pprof(const struct ember_profile *p, FILE *out);

#endif
