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
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "otel_ctx_pb.h"

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
	struct timespec boot;
	uint32_t version = 2, size;
	uint64_t published, at;
	uint8_t *map;
	int fd;

	if (argc != 4)
		return fprintf(stderr, "usage: otel_ctx good|huge|updating SERVICE SECONDS\n"), 2;
	pb_key_value(&resource, 1, "service.name", argv[2], 0);
	pb_key_value(&resource, 1, "deployment.environment", "ctx-test", 0);
	pb_key_value(&resource, 1, "process.pid", NULL, 1);
	pb_bytes(&payload, 1, resource.b, resource.n);
	pb_key_value(&payload, 2, "threadlocal.schema_version", "tlsdesc_v1_dev", 0);

	fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 4096))
		return perror("memfd_create"), 1;
	map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return perror("mmap"), 1;
	madvise(map, 4096, MADV_DONTFORK);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	published = strcmp(argv[1], "updating") ? (uint64_t)boot.tv_sec * 1000000000u + (uint64_t)boot.tv_nsec : 0;
	size = strcmp(argv[1], "huge") ? (uint32_t)payload.n : 1u << 20;
	at = (uint64_t)(uintptr_t)(map + 64);
	memcpy(map + 64, payload.b, payload.n);
	memcpy(map + 8, &version, 4);
	memcpy(map + 12, &size, 4);
	memcpy(map + 16, &published, 8);
	memcpy(map + 24, &at, 8);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(map, "OTEL_CTX", 8);
	burn(atof(argv[3]));
	return 0;
}
