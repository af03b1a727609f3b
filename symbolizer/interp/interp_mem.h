/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A profiled process's memory as the interpreters' readers read it: the
 * broker's /proc/PID/mem descriptor, asked for when first needed and asked
 * again only after a pause when refused, read through the readers (reader.h)
 * so that a read stalled on the process's memory-map lock or on a file
 * system behind a page costs that process's frames only.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_INTERP_MEM_H
#define EMBER_SYMBOLIZER_INTERP_INTERP_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/client/broker_client.h"

#define EMBER_INTERP_MEM_RETRY_NS (1000ull * 1000000ull) /* after the broker refused */
#define EMBER_INTERP_MEM_MAX_READ (256u << 10)           /* bytes of one read */

struct ember_interp_mem {
	uint32_t pid;
	int fd;    /* -1 until needed */
	bool gone; /* exited: nothing to read */
	int error; /* the broker's last refusal, until retry_ns */
	uint64_t retry_ns;
	/* Who reads it; NULL: read directly. */
	struct ember_readers *readers;
};

void ember_interp_mem_init(struct ember_interp_mem *m, uint32_t pid);
/* Gets the descriptor if there is none: 0, or why not (-EAGAIN, -ETIMEDOUT: the broker is
 * busy; -ESRCH: gone; an earlier refusal, repeated until its pause ends). */
int ember_interp_mem_open(struct ember_interp_mem *m, struct ember_broker_client *broker,
                          uint64_t now_ns);
void ember_interp_mem_close(struct ember_interp_mem *m);

/* Reads len bytes at addr (ctx: the struct ember_interp_mem): 0 or -EFAULT. The shape of
 * the parsers' read callbacks. */
int ember_interp_mem_read(void *ctx, uint64_t addr, void *buf, size_t len);

#endif
