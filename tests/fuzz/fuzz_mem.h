/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process's memory as the frame readers' fuzz targets and unit tests fake
 * it: bytes from FUZZ_MEM_BASE on, read through the readers' callback shape
 * (0, or -EFAULT outside them).
 */
#ifndef EMBER_TESTS_FUZZ_MEM_H
#define EMBER_TESTS_FUZZ_MEM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FUZZ_MEM_BASE 0x10000ull

struct fuzz_mem {
	const uint8_t *data;
	size_t size;
};

static inline int fuzz_mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct fuzz_mem *m = ctx;

	if (addr < FUZZ_MEM_BASE || addr - FUZZ_MEM_BASE > m->size ||
	    len > m->size - (addr - FUZZ_MEM_BASE))
		return -EFAULT;
	memcpy(buf, m->data + (addr - FUZZ_MEM_BASE), len);
	return 0;
}

#endif
