/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sample ring's consumer (ring.h): the symbolizer's half, which the
 * collector does not link. It maps the data memfd read-only and the
 * position memfd read-write, copies each record out of the shared bytes
 * before anyone reads it, and publishes its position as it goes.
 */
#ifndef EMBER_IPC_RING_CONSUMER_H
#define EMBER_IPC_RING_CONSUMER_H

#include "ipc/ring.h"

struct ember_ring_consumer {
	const struct ember_ring_shared_hdr *hdr;
	const uint8_t *data;
	uint64_t *consumer_pos;
	uint64_t size;
	uint64_t tail;
	size_t map_len;
};

/* Maps the producer's memfds: data read-only, position read-write. */
int ember_ring_consumer_open(struct ember_ring_consumer *c, int data_fd, int pos_fd);
void ember_ring_consumer_close(struct ember_ring_consumer *c);

/*
 * Copies the next record into buf (the consumer validates its private copy,
 * never the shared bytes). Returns the payload length (>= 0) and sets *type,
 * -EAGAIN when empty, -EBADMSG when the ring holds something impossible (the
 * consumer should reconnect), -EMSGSIZE when buf is too small (the record is
 * skipped).
 */
int ember_ring_read(struct ember_ring_consumer *c, uint16_t *type, void *buf, size_t buf_len);
/* Publishes the consumer position so the producer can reuse the space. */
void ember_ring_release(struct ember_ring_consumer *c);

#endif
