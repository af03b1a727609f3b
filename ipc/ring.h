/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sample ring: one producer (the collector), one consumer (the
 * symbolizer), in two memfds.
 *
 *  - The data memfd holds a header page (written by the producer only) and a
 *    power-of-two data area. It is sealed against shrinking, growing and any
 *    future writable mapping, so the consumer can map it read-only and
 *    nothing else.
 *  - The position memfd holds the consumer's position: the only shared
 *    memory the consumer can write. The producer reads it as an untrusted
 *    number.
 *
 * Records are {u32 length, u16 type, u16 flags, payload}, 8-byte aligned.
 * length counts the header and payload, not the alignment padding. A record
 * never wraps: the producer fills the end of the area with a PAD record
 * instead. A full ring drops the record and counts it; the producer never
 * waits for the consumer.
 *
 * This header is the producer's (the collector's); the consumer's half is
 * ring_consumer.h, which the collector does not link.
 */
#ifndef EMBER_IPC_RING_H
#define EMBER_IPC_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EMBER_RING_MAGIC      0x474e4952 /* "RING" */
#define EMBER_RING_VERSION    1
#define EMBER_RING_HDR_SIZE   4096
#define EMBER_RING_POS_SIZE   4096
#define EMBER_RING_MIN_SIZE   (1u << 16)
#define EMBER_RING_MAX_SIZE   (1u << 30)
#define EMBER_RING_MAX_RECORD (1u << 16) /* header included */

enum ember_rec_type {
	EMBER_REC_PAD = 0,
	EMBER_REC_SAMPLE = 1,           /* struct ember_sample + frames */
	EMBER_REC_PROCESS_EXEC = 2,     /* struct ember_proc_event: EXEC, or RUNNING at the start */
	EMBER_REC_PROCESS_EXIT = 3,     /* struct ember_proc_event */
	EMBER_REC_LOST = 4,             /* struct ember_rec_lost */
	EMBER_REC_COLLECTOR_MEMORY = 5, /* struct ember_rec_collector_memory */
	EMBER_REC_SAMPLING = 6,         /* struct ember_rec_sampling */
	EMBER_REC_TYPE_MAX,
};

struct ember_rec_hdr {
	uint32_t length;
	uint16_t type;
	uint16_t flags;
};

/*
 * Why samples were lost before they reached the consumer, or (OFF_CPU_*)
 * why off-CPU waits were deliberately not recorded: those are no loss.
 */
enum ember_lost_reason {
	EMBER_LOST_BPF_RINGBUF = 1, /* the kernel ring buffer was full */
	EMBER_LOST_SAMPLE_RING = 2, /* the sample ring was full */
	EMBER_LOST_NO_CONSUMER = 3, /* no symbolizer was connected */
	EMBER_LOST_PROC_EVENTS = 4, /* process events dropped by the kernel side */
	EMBER_LOST_OTHER = 5,
	EMBER_LOST_OFF_CPU_SHORT = 6,   /* waits shorter than the off-CPU minimum */
	EMBER_LOST_OFF_CPU_SAMPLED = 7, /* waits the off-CPU sampling left out */
};

struct ember_rec_lost {
	uint64_t count;
	uint32_t reason;
	uint32_t reserved;
};

/* ember record: when the programs were attached, after the handshake (loading them takes a
 * good part of a second): the profile's time starts there. */
struct ember_rec_sampling {
	uint64_t realtime_ns; /* Unix time */
};

/* The collector's own memory, every EMBER_COLLECTOR_MEMORY_EVERY_TICKS of its ticks (30 s, 3 min
 * on a quiet host's 30 s ticks, sooner when the symbolizer asks for drains), for the profiles'
 * statistics. */
#define EMBER_COLLECTOR_MEMORY_EVERY_TICKS 6
struct ember_rec_collector_memory {
	uint64_t rss_bytes;     /* resident */
	uint64_t bpf_map_bytes; /* its BPF maps (memlock), read every tenth report and at the end */
	/* Snapshots of new processes' maps (collector/seen_pids.h), so far: made, served to
	 * the symbolizer (their process gone), dropped for the caps. Also sent as a run ends. */
	uint64_t maps_snapshots_taken, maps_snapshots_served, maps_snapshots_dropped;
};

/* A record's bytes in the ring: header and payload, rounded up to 8. */
static inline uint64_t ember_ring_align(uint64_t len)
{
	return (len + 7) & ~(uint64_t)7;
}

/* The producer-written header at the start of the data memfd. */
struct ember_ring_shared_hdr {
	uint32_t magic;
	uint32_t version;
	uint64_t data_size;
	/* Producer position in bytes since creation; only ever grows. */
	_Alignas(64) uint64_t head;
};

struct ember_ring_producer {
	int data_fd;
	int pos_fd;
	int event_fd; /* read end of the wake-up pipe: the consumer's */
	int wake_fd;  /* write end: the producer's alone */
	struct ember_ring_shared_hdr *hdr;
	uint8_t *data;
	const uint64_t *consumer_pos;
	uint64_t size;
	uint64_t head;
	uint64_t notified_head;
	uint64_t dropped_records; /* ring full */
	uint64_t bad_positions;   /* consumer positions that made no sense */
};

/*
 * Creates the two memfds and the wake-up pipe; data_size is rounded up to a power of two.
 * A pipe, not an eventfd: an eventfd is one open file shared with the consumer, which
 * could clear its O_NONBLOCK and fill its counter so that the producer's next wake-up
 * blocks; the write end of a pipe is the producer's own.
 */
int ember_ring_producer_create(struct ember_ring_producer *p, size_t data_size);
void ember_ring_producer_destroy(struct ember_ring_producer *p);

/*
 * Appends one record. Returns 0, -ENOSPC when the ring is full (counted in
 * dropped_records), -EPROTO when the consumer position is impossible
 * (counted in bad_positions; the ring is treated as full), -EINVAL for an
 * oversized record.
 */
int ember_ring_write(struct ember_ring_producer *p, uint16_t type, const void *payload, size_t len);
/* Like ember_ring_write for a payload given in two parts. */
int ember_ring_write2(struct ember_ring_producer *p, uint16_t type, const void *a, size_t alen,
                      const void *b, size_t blen);
/* Free bytes, or -EPROTO if the consumer position is impossible. */
int64_t ember_ring_free_space(const struct ember_ring_producer *p);
/* Reads the consumer's position; false if it is impossible. */
bool ember_ring_consumer_pos(const struct ember_ring_producer *p, uint64_t *pos);
/* Wakes the consumer if records were written since the last call; never blocks. */
void ember_ring_notify(struct ember_ring_producer *p);

#endif
