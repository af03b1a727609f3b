/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The processes the collector has seen in samples. The broker serves
 * requests only for these. Each entry holds a pidfd taken at first sight:
 * while the pidfd's process is alive its PID cannot name another process,
 * so a request is served only if the process is still alive after the
 * descriptor was opened (PID reuse cannot slip in between).
 *
 * It also keeps snapshots of new processes' memory maps: a process that
 * starts while ember runs has its /proc/PID/maps copied (by a broker worker,
 * into a sealed memfd) at its 1st, 2nd, 4th, 8th and 16th sample in its first
 * 2 s, so that a
 * symbolizer that comes to its samples after it exited (its maps read empty
 * then) still learns its mappings. A snapshot belongs to one process: made
 * for the entry's generation (a new one at each exec and each new process
 * with that PID, which drops the old snapshot), served only once that process
 * is gone, at most EMBER_SNAPSHOT_KEEP_NS old; at most EMBER_SNAPSHOTS_MAX of
 * them, each at most EMBER_SNAPSHOT_MAX_BYTES (the oldest go first, counted).
 * With it the process's root is kept, from which the broker opens the files
 * the snapshot names once the process is gone (checked by device and inode).
 */
#ifndef EMBER_COLLECTOR_SEEN_PIDS_H
#define EMBER_COLLECTOR_SEEN_PIDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/slots.h"

struct ember_proc_entry {
	uint32_t tgid;
	int pidfd;
	uint64_t last_seen_ns;
	uint32_t gen; /* the process and program it runs (0: running at the start: no snapshots) */
	uint32_t samples;    /* since it started or exec'd */
	uint64_t started_ns; /* when it was first seen, or exec'd */
};

#define EMBER_SNAPSHOTS_MAX        512
#define EMBER_SNAPSHOT_MAX_BYTES   (16u << 10) /* one process's maps: larger ones are not kept */
#define EMBER_SNAPSHOT_KEEP_NS     (10ull * 1000000000ull)
#define EMBER_SNAPSHOT_QUEUE       32
#define EMBER_EXIT_TIMES           1024 /* exits remembered, by tgid modulo this */
#define EMBER_SNAPSHOT_LAST_SAMPLE 16 /* the last sample of a process that makes one due */
#define EMBER_SNAPSHOT_YOUNG_NS    (2ull * 1000000000ull) /* ... within this of its start */

struct ember_maps_snapshot {
	uint32_t tgid, gen; /* tgid 0: a free slot */
	int fd;             /* a sealed memfd, or -1 before the first copy */
	int pending;        /* the memfd a worker copies into now, or -1 */
	uint64_t taken_ns;
	int root; /* the process's root (O_PATH), where its mapped files' paths lead, or -1 */
};

struct ember_procs {
	struct ember_slots slots; /* struct ember_proc_entry, by tgid; at most `capacity` */
	uint64_t evictions;
	uint32_t next_gen, ndue, due[EMBER_SNAPSHOT_QUEUE]; /* due: tgids whose snapshot is */
	struct ember_maps_snapshot snaps[EMBER_SNAPSHOTS_MAX];
	uint32_t snaps_max; /* up to three descriptors each: a twelfth of `capacity` */
	uint64_t snaps_taken, snaps_served, snaps_dropped; /* dropped: for the caps */
	/* The latest exit (CLOCK_MONOTONIC) of any process whose tgid falls in each slot. */
	uint64_t exited_ns[EMBER_EXIT_TIMES];
	uint64_t stale_events; /* an exited process's, drained after its exit: not noted */
	uint64_t last_exec_ns; /* the last exec seen (CLOCK_MONOTONIC) */
};

int ember_procs_init(struct ember_procs *t, size_t capacity);
void ember_procs_free(struct ember_procs *t);

/* Records that tgid was seen at now_ns, in a sample if `sampled` (a snapshot is due at its
 * 1st, 2nd, 4th, 8th, 16th sample in its first EMBER_SNAPSHOT_YOUNG_NS). Returns 0 or a
 * negative errno (-ESRCH if the process is already gone). */
int ember_procs_note(struct ember_procs *t, uint32_t tgid, uint64_t now_ns, bool sampled);
/* Forgets tgid, whose last thread exited at exit_ns (CLOCK_MONOTONIC). */
void ember_procs_forget(struct ember_procs *t, uint32_t tgid, uint64_t exit_ns);
/* Whether an event of tgid that happened at event_ns may belong to a process that exited
 * since (its PID perhaps another process's now): a sample drained late, after its process's
 * exit, must not note the PID, or the broker would serve whichever process took it. Errs on
 * the side of true (another tgid's exit in the same slot): that process's next sample notes it. */
bool ember_procs_stale(struct ember_procs *t, uint32_t tgid, uint64_t event_ns);

/*
 * Returns 0 if tgid was seen within max_age_ns and is still the same,
 * living process; -ESRCH if it exited or its PID may have been reused (the
 * entry is dropped then, so a new process with that PID starts afresh);
 * -EPERM if it was never seen (or not recently).
 */
int ember_procs_check(struct ember_procs *t, uint32_t tgid, uint64_t now_ns, uint64_t max_age_ns);

/* tgid, noted already, runs a new program (exec: its old snapshot goes), or ran when sampling
 * started (!snapshots: the symbolizer reads the maps of those at the start). */
void ember_procs_program(struct ember_procs *t, uint32_t tgid, bool snapshots);

/* The next process whose snapshot is due: 1 with its tgid, generation and the memfd (still
 * the table's) to copy its maps into; 0 when none is (or no memfd could be made). */
int ember_procs_snapshot_due(struct ember_procs *t, uint64_t now_ns, uint32_t *tgid, uint32_t *gen,
                             int *memfd);
/* The copy for (tgid, gen) ended: result >= 0 (a descriptor, closed here) when the memfd
 * holds the maps, else a negative errno. The memfd is sealed and kept if its size is
 * plausible and that process is still the last one with the PID. */
void ember_procs_snapshot_done(struct ember_procs *t, uint32_t tgid, uint32_t gen, int result,
                               uint64_t now_ns);
/* A new descriptor of what is kept of tgid, a process gone (ember_procs_check refused it): the
 * snapshot of its maps (read-only) or, with root, its root (O_PATH), from which the files the
 * snapshot names are reached; or a negative errno. */
int ember_procs_snapshot_open(struct ember_procs *t, uint32_t tgid, uint64_t now_ns, bool root);

#endif
