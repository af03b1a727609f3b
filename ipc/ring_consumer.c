// SPDX-License-Identifier: Apache-2.0
#include "ipc/ring_consumer.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "shared/err.h"

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
		aligned = ember_ring_align(hdr.length);
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
