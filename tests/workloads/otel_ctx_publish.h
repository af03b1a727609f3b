/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Publishes a process context as OTEP 4719 has SDKs do: a memfd named OTEL_CTX, mapped,
 * holding a 32-byte header and the ProcessContext payload, the signature written last.
 * For the test workloads (otel_ctx.c, thread_ctx.c); the includer defines _GNU_SOURCE.
 */
#ifndef EMBER_TESTS_WORKLOADS_OTEL_CTX_PUBLISH_H
#define EMBER_TESTS_WORKLOADS_OTEL_CTX_PUBLISH_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "otel_ctx_pb.h"

/* payload, with size (its length, or a lie) and published (CLOCK_BOOTTIME ns, or 0: an
 * update under way): 0, or -1 with the reason printed. */
static inline int otel_ctx_publish(const struct pb *payload, uint32_t size, uint64_t published)
{
	uint32_t version = 2;
	uint64_t at;
	uint8_t *map;
	int fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, 4096) || payload->n > 4096 - 64)
		return perror("memfd_create"), -1;
	map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return perror("mmap"), -1;
	madvise(map, 4096, MADV_DONTFORK);
	at = (uint64_t)(uintptr_t)(map + 64);
	memcpy(map + 64, payload->b, payload->n);
	memcpy(map + 8, &version, 4);
	memcpy(map + 12, &size, 4);
	memcpy(map + 16, &published, 8);
	memcpy(map + 24, &at, 8);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(map, "OTEL_CTX", 8);
	return 0;
}

static inline uint64_t otel_ctx_boottime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_BOOTTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

#endif
