/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads that may wait, made by helper processes under a deadline, so that a
 * stalled file costs only its own frames. A file on a file system that can
 * stop answering (FUSE, NFS, ...: the broker's reply says so), a process's
 * memory map and its memory (their lock can be held by a thread that waits
 * for such a file system) are not read by the symbolizer itself: a reader
 * process copies the descriptor's bytes into a memfd (or reads a few of
 * them), and the symbolizer waits for it until a deadline: 1 s from when the
 * reader says it began (a reader that waits for the CPU on a loaded host is
 * given up to 4 s to begin), and one more second for every 16 MiB that arrives.
 *
 * A reader that misses its deadline is left waiting (it may sit in a FUSE
 * request the kernel will not let it leave; as a process of its own it keeps
 * nobody from exiting) and its device counts as stalled: later reads from it
 * are refused at once until a back-off passes (2 s doubling to a minute),
 * then one read tries again, unless a reader still waits on it: that one is
 * its probe. A reader that comes back is used again; its device stays refused
 * until its back-off ends (which goes on doubling: a device or process that
 * answers late every time costs ever fewer deadlines), and a read within the
 * deadline ends the stall. What the broker saw stall (its reply says so) is
 * refused the same way, without a deadline of its own; once the run ends (its
 * last flush), nothing stalled is tried again. The last free reader is kept
 * for processes' maps and memory; with every reader stuck, reads that need
 * one are refused.
 *
 * Readers are forked after the handshake, before the symbolizer enters its
 * sandbox, and enter a smaller one of their own (seccomp group "reader":
 * reading the descriptors they are handed, memfds, their socket). Hostile
 * input: the bytes they copy (the caller parses them as untrusted) and their
 * answers (checked for size and job number).
 */
#ifndef EMBER_SYMBOLIZER_CLIENT_READER_H
#define EMBER_SYMBOLIZER_CLIENT_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shared/stat_sink.h"

#define EMBER_READERS             3
#define EMBER_READ_DEADLINE_NS    (1000ull * 1000000ull)
#define EMBER_READ_MIN_RATE       (16ull << 20) /* bytes a second beyond the first second */
#define EMBER_READ_MAX_COPY       (64ull << 20)
#define EMBER_READ_MAX_PREAD      (64u << 10)
#define EMBER_READ_BACKOFF_NS     (2000ull * 1000000ull)
#define EMBER_READ_BACKOFF_MAX_NS (60000ull * 1000000ull)
#define EMBER_READ_MAX_DEVICES    16

struct ember_reader {
	pid_t pid;
	int sock;
	bool stuck; /* missed a deadline; its answer, when it comes, is dropped */
	uint32_t job;
	int dev; /* stuck: the device it waits on (index in devs), -1 */
};

/* A device (file system) or process that stalled a read or whose opens the broker refused. */
struct ember_stalled_dev {
	bool used;
	bool stalled; /* reads refused until retry_ns */
	uint32_t pid, major, minor, fs_magic;
	uint64_t retry_ns, backoff_ns;
	uint64_t given_up; /* reads that missed their deadline */
	uint64_t refused;  /* reads refused, and broker requests refused, while it stalled */
};

struct ember_readers {
	struct ember_reader readers[EMBER_READERS];
	unsigned int n;
	struct ember_stalled_dev devs[EMBER_READ_MAX_DEVICES];
	uint64_t deadline_ns;
	/* The run is ending (its last flush): nothing that stalled is tried again. */
	bool finishing;
	uint32_t next_job;
	uint64_t copies, bytes, given_up, refused, abandoned, late;
};

/*
 * Forks n readers (at most EMBER_READERS). Call before the sandbox: each
 * confines itself with confine(ctx) (which must return 0, or it exits).
 * Returns 0 or a negative errno (no reader then: callers read directly).
 */
int ember_readers_start(struct ember_readers *rs, unsigned int n, int (*confine)(void *ctx),
                        void *ctx);
/* Closes the readers' sockets; idle ones exit, stuck ones when they can. Never waits. */
void ember_readers_stop(struct ember_readers *rs);

/* What a read is of: a file on device major:minor, or (0:0) a /proc file of process pid. */
struct ember_read_of {
	uint32_t pid;
	uint32_t major, minor;
	uint32_t fs_magic; /* statfs type, for names; 0: not known */
};

/*
 * A copy, in a memfd, of what fd holds (from offset 0, at most max_bytes).
 * Returns the memfd or a negative errno: -ETIMEDOUT when the read missed its
 * deadline or what it reads is stalled, -EFBIG past max_bytes, -EBUSY when no
 * reader is free.
 */
int ember_readers_copy(struct ember_readers *rs, int fd, const struct ember_read_of *of,
                       uint64_t max_bytes);

/* pread of at most EMBER_READ_MAX_PREAD bytes (process memory), with the same deadline.
 * Returns the bytes read or a negative errno, as ember_readers_copy. */
ssize_t ember_readers_pread(struct ember_readers *rs, int fd, void *buf, size_t len, uint64_t off,
                            const struct ember_read_of *of);

/*
 * The broker refused a file on major:minor (0:0: of process pid) because its file system
 * (or the process) stalled, or (stalled false) because every worker that could open it
 * was stuck: counted. A stall (-ETIMEDOUT) is marked here too: reads of that device or
 * process are refused until a back-off passes, as after a read that missed its deadline.
 */
void ember_readers_note_stall(struct ember_readers *rs, uint32_t pid, uint32_t major,
                              uint32_t minor, uint32_t fs_magic, bool stalled);

/* symbolizer.stalled_reads, readers_abandoned, and one broker.stalled_fs.MAJ:MIN.TYPE per
 * device that stalled. */
void ember_readers_report_stats(const struct ember_readers *rs, const struct ember_stat_sink *sink);

#endif
