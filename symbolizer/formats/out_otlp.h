/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OTLP profiles output: a profile as one
 * opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest
 * (opentelemetry-proto v1.10.0 and later), in binary protobuf.
 *
 * One ResourceProfiles per process (process.pid, process.executable.name
 * and .path, container.id, host.name, service.name and the configured extra
 * attributes), each with one ScopeProfiles ("ember", its version) holding a
 * CPU Profile: sample type samples/count, period cpu/nanoseconds, one value
 * and one timestamp per sample; and, for a process with off-CPU samples, an
 * off-CPU Profile: sample type off_cpu/nanoseconds, one value per sample (the
 * time its thread waited at that stack), each sample labelled off_cpu.wait
 * (why it waited). Samples carry thread.name, thread.id and
 * cpu.logical_number; locations profile.frame.type; mappings the GNU and Go
 * build ids and the htlhash. All profiles share one deduplicated dictionary
 * whose tables start with their zero entry.
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_OUT_OTLP_H
#define EMBER_SYMBOLIZER_FORMATS_OUT_OTLP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "symbolizer/profile/profile.h"

/* Encodes p into a malloc'd buffer. *nprofiles (may be NULL) gets the number of resources. */
int ember_otlp_encode(const struct ember_profile *p, uint8_t **out, size_t *out_len,
                      size_t *nprofiles);
/* Writes p as one binary ExportProfilesServiceRequest (the .otlp file format). */
int ember_write_otlp(const struct ember_profile *p, FILE *out);

#endif
