// SPDX-License-Identifier: Apache-2.0
/*
 * A process that publishes its context as OpenTelemetry's process context (OTEP 4719) has
 * SDKs do: a memfd named OTEL_CTX, mapped, holding a 32-byte header and a ProcessContext
 * payload (protobuf, encoded here by hand), the signature written last; then it burns CPU.
 *
 *     otel_ctx MODE SERVICE SECONDS
 *
 * MODE: good (resource service.name=SERVICE, deployment.environment=ctx-test, and a lie,
 * process.pid=1; attribute threadlocal.schema_version); huge (the same with a payload size
 * past any reader's cap); updating (published time 0 throughout: an update never ends).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "otel_ctx_publish.h"

static volatile uint64_t sink;

__attribute__((noinline)) static void burn(double seconds)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink += (uint64_t)i * 2654435761u;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
	struct pb resource = {0}, payload = {0};

	if (argc != 4)
		return fprintf(stderr, "usage: otel_ctx good|huge|updating SERVICE SECONDS\n"), 2;
	pb_key_value(&resource, 1, "service.name", argv[2], 0);
	pb_key_value(&resource, 1, "deployment.environment", "ctx-test", 0);
	pb_key_value(&resource, 1, "process.pid", NULL, 1);
	pb_bytes(&payload, 1, resource.b, resource.n);
	pb_key_value(&payload, 2, "threadlocal.schema_version", "tlsdesc_v1_dev", 0);

	if (otel_ctx_publish(&payload, strcmp(argv[1], "huge") ? (uint32_t)payload.n : 1u << 20,
	                     strcmp(argv[1], "updating") ? otel_ctx_boottime_ns() : 0))
		return 1;
	burn(atof(argv[3]));
	return 0;
}
