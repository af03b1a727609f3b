/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OTLP profiles output: a profile as one
 * opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest
 * (opentelemetry-proto v1.10.0 and later), in binary protobuf.
 *
 * One ResourceProfiles per process (process.pid, process.executable.name
 * and .path, container.id, host.name, service.name and the configured extra
 * attributes), each with one ScopeProfiles ("ember", its version) holding a
 * CPU Profile: sample type samples/count, period cpu/nanoseconds, samples with
 * their timestamps alone (each counts one); and, for a process with off-CPU samples, an
 * off-CPU Profile: sample type off_cpu/nanoseconds, an empty period type and
 * period 0 (present: Parca refuses a Profile without one), one value per sample (the
 * time its thread waited at that stack), each sample labelled off_cpu.wait
 * (why it waited). Samples carry thread.name, thread.id and
 * cpu.logical_number; locations profile.frame.type; mappings the GNU and Go
 * build ids and the htlhash. Addresses and mappings are in the files' ELF address
 * space; a location ember could not name (or, with backend symbols, one in a file with a
 * GNU build id) has no lines. All profiles share one deduplicated dictionary
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
/* Takes a request (its malloc'd buffer is the sink's) and the samples it counts. */
typedef int (*ember_otlp_sink)(void *ctx, uint8_t *buf, size_t len, uint64_t nsamples);
/*
 * Encodes p as requests of at most max_bytes each, handed to sink in turn: a receiver refuses
 * a larger one whole (a default Collector's gRPC server at 4 MiB, Pyroscope at 4 MiB of
 * profile). A request too large is cut in two at the change of process nearest its middle
 * (within one process: its samples in two halves, the process's resource in both), until it
 * fits or holds one sample. Each request has its own dictionary. Stops at the sink's first
 * error.
 */
int ember_otlp_encode_split(const struct ember_profile *p, size_t max_bytes, ember_otlp_sink sink,
                            void *ctx);
/* Writes p as one binary ExportProfilesServiceRequest (the .otlp file format). */
int ember_write_otlp(const struct ember_profile *p, FILE *out);

#endif
