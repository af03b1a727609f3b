// SPDX-License-Identifier: Apache-2.0
#include "ipc/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shared/cleanup.h"
#include "shared/err.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

static uint64_t round_pow2(uint64_t n)
{
	uint64_t p = EMBER_RING_MIN_SIZE;

	while (p < n && p < EMBER_RING_MAX_SIZE)
		p <<= 1;
	return p;
}

static int sealed_memfd(const char *name, size_t size, void **map, unsigned int seals)
{
	_cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *m;

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		return neg_errno();
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return neg_errno();
	/* The producer's writable mapping exists before the seal; no later one can. */
	if (fcntl(fd, F_ADD_SEALS, seals) < 0) {
		int err = neg_errno();

		munmap(m, size);
		return err;
	}
	*map = m;
	return TAKE_FD(fd);
}

int ember_ring_producer_create(struct ember_ring_producer *p, size_t data_size)
{
	void *data_map, *pos_map;
	uint64_t size = round_pow2(data_size);
	int fd, wake[2];

	memset(p, 0, sizeof(*p));
	p->data_fd = p->pos_fd = p->event_fd = p->wake_fd = -1;

	fd = sealed_memfd("ember-sample-ring", EMBER_RING_HDR_SIZE + size, &data_map,
	                  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL);
	if (fd < 0)
		return fd;
	p->data_fd = fd;
	p->hdr = data_map;
	p->data = (uint8_t *)data_map + EMBER_RING_HDR_SIZE;
	p->size = size;

	/* The consumer may write here, but not resize it under the producer. */
	fd = sealed_memfd("ember-ring-pos", EMBER_RING_POS_SIZE, &pos_map,
	                  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	if (fd < 0)
		goto fail;
	p->pos_fd = fd;
	p->consumer_pos = pos_map;

	if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		fd = neg_errno();
		goto fail;
	}
	p->event_fd = wake[0];
	p->wake_fd = wake[1];
	p->hdr->magic = EMBER_RING_MAGIC;
	p->hdr->version = EMBER_RING_VERSION;
	p->hdr->data_size = size;
	__atomic_store_n(&p->hdr->head, 0, __ATOMIC_RELEASE);
	return 0;
fail:
	ember_ring_producer_destroy(p);
	return fd;
}

void ember_ring_producer_destroy(struct ember_ring_producer *p)
{
	if (p->hdr)
		munmap(p->hdr, EMBER_RING_HDR_SIZE + p->size);
	if (p->consumer_pos)
		munmap((void *)p->consumer_pos, EMBER_RING_POS_SIZE);
	if (p->data_fd >= 0)
		close(p->data_fd);
	if (p->pos_fd >= 0)
		close(p->pos_fd);
	if (p->event_fd >= 0)
		close(p->event_fd);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	memset(p, 0, sizeof(*p));
	p->data_fd = p->pos_fd = p->event_fd = p->wake_fd = -1;
}

bool ember_ring_consumer_pos(const struct ember_ring_producer *p, uint64_t *pos)
{
	uint64_t tail = __atomic_load_n(p->consumer_pos, __ATOMIC_ACQUIRE);

	/* A valid position is 8-aligned, not ahead of us, not more than a ring behind. */
	if (tail > p->head || p->head - tail > p->size || (tail & 7))
		return false;
	*pos = tail;
	return true;
}

int64_t ember_ring_free_space(const struct ember_ring_producer *p)
{
	uint64_t tail;

	if (!ember_ring_consumer_pos(p, &tail))
		return -EPROTO;
	return (int64_t)(p->size - (p->head - tail));
}

int ember_ring_write2(struct ember_ring_producer *p, uint16_t type, const void *a, size_t alen,
                      const void *b, size_t blen)
{
	uint64_t len = sizeof(struct ember_rec_hdr) + alen + blen;
	uint64_t aligned = ember_ring_align(len), off, to_end, pad = 0;
	struct ember_rec_hdr hdr = {.length = (uint32_t)len, .type = type};
	int64_t space;

	if (len > EMBER_RING_MAX_RECORD || aligned > p->size / 4)
		return -EINVAL;
	space = ember_ring_free_space(p);
	if (space < 0) {
		p->bad_positions++;
		p->dropped_records++;
		return -EPROTO;
	}
	off = p->head & (p->size - 1);
	to_end = p->size - off;
	if (aligned > to_end)
		pad = to_end;
	if ((uint64_t)space < aligned + pad) {
		p->dropped_records++;
		return -ENOSPC;
	}
	if (pad) {
		struct ember_rec_hdr pad_hdr = {.length = (uint32_t)pad, .type = EMBER_REC_PAD};

		memcpy(p->data + off, &pad_hdr, sizeof(pad_hdr));
		off = 0;
	}
	memcpy(p->data + off, &hdr, sizeof(hdr));
	if (alen)
		memcpy(p->data + off + sizeof(hdr), a, alen);
	if (blen)
		memcpy(p->data + off + sizeof(hdr) + alen, b, blen);
	p->head += pad + aligned;
	__atomic_store_n(&p->hdr->head, p->head, __ATOMIC_RELEASE);
	return 0;
}

int ember_ring_write(struct ember_ring_producer *p, uint16_t type, const void *payload, size_t len)
{
	return ember_ring_write2(p, type, payload, len, NULL, 0);
}

void ember_ring_notify(struct ember_ring_producer *p)
{
	uint64_t one = 1;

	if (p->head == p->notified_head)
		return;
	p->notified_head = p->head;
	/* EAGAIN means the pipe is full: the consumer has wake-ups waiting anyway. */
	if (write(p->wake_fd, &one, sizeof(one)) < 0)
		return;
}
