// SPDX-License-Identifier: Apache-2.0
#include "ipc/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/cleanup.h"
#include "shared/err.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

static uint64_t align8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

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
	uint64_t aligned = align8(len), off, to_end, pad = 0;
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

int ember_ring_consumer_open(struct ember_ring_consumer *c, int data_fd, int pos_fd)
{
	struct ember_ring_shared_hdr hdr;
	struct stat st;
	void *data_map, *pos_map;
	uint64_t size;

	memset(c, 0, sizeof(*c));
	if (fstat(data_fd, &st) < 0)
		return neg_errno();
	if (st.st_size <= EMBER_RING_HDR_SIZE)
		return -EBADMSG;
	size = (uint64_t)st.st_size - EMBER_RING_HDR_SIZE;
	if (size < EMBER_RING_MIN_SIZE || size > EMBER_RING_MAX_SIZE || (size & (size - 1)))
		return -EBADMSG;
	data_map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, data_fd, 0);
	if (data_map == MAP_FAILED)
		return neg_errno();
	memcpy(&hdr, data_map, sizeof(hdr));
	if (hdr.magic != EMBER_RING_MAGIC || hdr.version != EMBER_RING_VERSION ||
	    hdr.data_size != size) {
		munmap(data_map, (size_t)st.st_size);
		return -EBADMSG;
	}
	if (fstat(pos_fd, &st) < 0 || st.st_size < (off_t)EMBER_RING_POS_SIZE) {
		munmap(data_map, EMBER_RING_HDR_SIZE + size);
		return -EBADMSG;
	}
	pos_map = mmap(NULL, EMBER_RING_POS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, pos_fd, 0);
	if (pos_map == MAP_FAILED) {
		int err = neg_errno();

		munmap(data_map, EMBER_RING_HDR_SIZE + size);
		return err;
	}
	c->hdr = data_map;
	c->data = (const uint8_t *)data_map + EMBER_RING_HDR_SIZE;
	c->consumer_pos = pos_map;
	c->size = size;
	c->map_len = EMBER_RING_HDR_SIZE + size;
	/* Resume from the shared position (0 for a new ring) unless it is impossible. */
	{
		uint64_t head = __atomic_load_n(&c->hdr->head, __ATOMIC_ACQUIRE) & ~(uint64_t)7;

		c->tail = __atomic_load_n(c->consumer_pos, __ATOMIC_ACQUIRE);
		if (c->tail > head || head - c->tail > size || (c->tail & 7))
			c->tail = head;
	}
	__atomic_store_n(c->consumer_pos, c->tail, __ATOMIC_RELEASE);
	return 0;
}

void ember_ring_consumer_close(struct ember_ring_consumer *c)
{
	if (c->hdr)
		munmap((void *)c->hdr, c->map_len);
	if (c->consumer_pos)
		munmap(c->consumer_pos, EMBER_RING_POS_SIZE);
	memset(c, 0, sizeof(*c));
}

int ember_ring_read(struct ember_ring_consumer *c, uint16_t *type, void *buf, size_t buf_len)
{
	for (;;) {
		uint64_t head = __atomic_load_n(&c->hdr->head, __ATOMIC_ACQUIRE);
		uint64_t off = c->tail & (c->size - 1), aligned, payload;
		struct ember_rec_hdr hdr;

		if (head == c->tail)
			return -EAGAIN;
		if (head < c->tail || head - c->tail > c->size || (head & 7))
			return -EBADMSG;
		memcpy(&hdr, c->data + off, sizeof(hdr));
		aligned = align8(hdr.length);
		if (hdr.length < sizeof(hdr) || aligned > c->size - off || aligned > head - c->tail)
			return -EBADMSG;
		if (hdr.type == EMBER_REC_PAD) {
			c->tail += aligned;
			continue;
		}
		payload = hdr.length - sizeof(hdr);
		if (payload > buf_len) {
			c->tail += aligned;
			return -EMSGSIZE;
		}
		memcpy(buf, c->data + off + sizeof(hdr), payload);
		c->tail += aligned;
		*type = hdr.type;
		return (int)payload;
	}
}

void ember_ring_release(struct ember_ring_consumer *c)
{
	__atomic_store_n(c->consumer_pos, c->tail, __ATOMIC_RELEASE);
}
