/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The processes the collector has seen in samples. The broker serves
 * requests only for these. Each entry holds a pidfd taken at first sight:
 * while the pidfd's process is alive its PID cannot name another process,
 * so a request is served only if the process is still alive after the
 * descriptor was opened (PID reuse cannot slip in between).
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
};

struct ember_procs {
	struct ember_slots slots; /* struct ember_proc_entry, by tgid; at most `capacity` */
	uint64_t evictions;
};

int ember_procs_init(struct ember_procs *t, size_t capacity);
void ember_procs_free(struct ember_procs *t);

/* Records that tgid was sampled at now_ns. Returns 0 or a negative errno
 * (-ESRCH if the process is already gone). */
int ember_procs_note(struct ember_procs *t, uint32_t tgid, uint64_t now_ns);
/* Forgets tgid (its last thread exited). */
void ember_procs_forget(struct ember_procs *t, uint32_t tgid);

/*
 * Returns 0 if tgid was seen within max_age_ns and is still the same,
 * living process; -ESRCH if it exited or its PID may have been reused (the
 * entry is dropped then, so a new process with that PID starts afresh);
 * -EPERM if it was never seen (or not recently).
 */
int ember_procs_check(struct ember_procs *t, uint32_t tgid, uint64_t now_ns, uint64_t max_age_ns);

#endif
