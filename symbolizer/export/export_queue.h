/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Live delivery of profiles to an OTLP endpoint, independent of who drives
 * it (`ember record`, the daemon): a bounded queue of encoded requests and a
 * thread that sends them, so that aggregation (and the draining of the
 * sample ring) never waits for the network.
 *
 *   submit  -> queue (bounded in bytes: when full the oldest batch is
 *              dropped and counted) -> export thread -> transport
 *
 * The export thread retries transient failures (HTTP 429/502/503/504, gRPC
 * UNAVAILABLE, RESOURCE_EXHAUSTED and the other retryable codes, network
 * errors, timeouts) with exponential backoff and jitter, honouring the
 * server's Retry-After / RetryInfo, for at most max_elapsed_ms per batch;
 * permanent rejections (HTTP 400, gRPC INVALID_ARGUMENT, ...) are dropped at
 * once and counted; partial successes are logged. Batches are sent in order.
 *
 * Memory: the queue holds at most queue_bytes of requests, plus the one
 * batch in transfer when it was evicted while being sent.
 */
#ifndef EMBER_SYMBOLIZER_EXPORT_EXPORT_QUEUE_H
#define EMBER_SYMBOLIZER_EXPORT_EXPORT_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/export/export_config.h"

struct ember_export_stats {
	uint64_t submitted, delivered; /* batches */
	uint64_t rejected;             /* permanent refusal: dropped, not retried */
	uint64_t evicted;              /* dropped because the queue was full */
	uint64_t expired;              /* retried until max_elapsed_ms, then dropped */
	uint64_t abandoned;            /* still queued when the exporter stopped */
	uint64_t attempts, retries;
	uint64_t samples_delivered, samples_dropped;
	uint64_t bytes_sent;        /* on the wire (compressed), delivered batches */
	uint64_t profiles_rejected; /* by receivers, in partial successes */
	size_t queue_bytes, queue_peak_bytes, queue_limit;
	size_t queued; /* batches waiting or in transfer */
	int last_http_status, last_grpc_status;
	char last_error[256];
};

struct ember_exporter;

/*
 * Sets up an exporter for a prepared configuration (see
 * ember_export_config_prepare); its thread starts with ember_exporter_start.
 * On success the exporter takes over cfg's memory (headers, TLS material):
 * the caller must not free cfg again. On failure cfg stays the caller's.
 * Returns 0 or a negative errno.
 */
int ember_exporter_create(const struct ember_export_config *cfg, struct ember_exporter **out);

/*
 * Starts the export thread (once; later calls do nothing). The symbolizer
 * calls it inside its sandbox, so that the thread inherits every
 * restriction (Landlock applies to the threads a process creates after it
 * restricted itself). Batches submitted before wait in the queue. Returns
 * 0 or a negative errno.
 */
int ember_exporter_start(struct ember_exporter *e);

/*
 * Queues one encoded ExportProfilesServiceRequest (nsamples: for the
 * counters). Takes ownership of data in every case. Never blocks on the
 * network. Returns 0, or -E2BIG when the batch alone exceeds the queue.
 */
int ember_exporter_submit(struct ember_exporter *e, uint8_t *data, size_t len, uint64_t nsamples);

/* The largest request to submit: a larger profile goes as several (ember_otlp_encode_split). */
size_t ember_exporter_max_request(const struct ember_exporter *e);

/*
 * Waits until every queued batch has been delivered or dropped, or until
 * deadline_ns (CLOCK_MONOTONIC). Returns 0 when the queue is empty, else
 * -ETIMEDOUT (the batches stay queued).
 */
int ember_exporter_flush(struct ember_exporter *e, uint64_t deadline_ns);

/* Stops the thread (aborting a transfer), drops and counts what is queued, frees e. */
void ember_exporter_destroy(struct ember_exporter *e);

void ember_exporter_get_stats(struct ember_exporter *e, struct ember_export_stats *out);
/* The endpoint, for messages ("http://host:4318/v1development/profiles"). */
const char *ember_exporter_endpoint(const struct ember_exporter *e);

/*
 * The wait before retry number `retry` (1-based): initial * 2^(retry-1),
 * capped, times a jitter factor in [0.5, 1.5) from random (any 64 bits).
 */
uint64_t ember_export_backoff_ms(uint64_t initial_ms, uint64_t max_ms, unsigned int retry,
                                 uint64_t random);

#endif
