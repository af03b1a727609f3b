/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Moves records from the kernel's ring buffers into the sample ring and
 * accounts for every record that does not make it: each drop (kernel ring
 * full, sample ring full, no symbolizer connected) becomes a LOST record as
 * soon as the sample ring has room for it.
 */
#ifndef EMBER_COLLECTOR_RING_DRAIN_H
#define EMBER_COLLECTOR_RING_DRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "ipc/ring.h"
#include "collector/seen_pids.h"
#include "collector/table_loader.h"
#include "bpf/records.h"

#define EMBER_LOST_REASONS 8 /* enum ember_lost_reason values are below this */

struct ember_drain {
	struct ember_ring_producer *ring; /* NULL while no symbolizer is connected */
	struct ember_procs *procs;
	int proc_map_fds[EMBER_PROC_MAPS]; /* ember_bpf's: an exit deletes the process from each */
	const uint32_t *proc_maps_set; /* ... that ever held one (the table loader's; NULL: all) */
	uint64_t samples;                  /* copied into the sample ring */
	uint64_t malformed;                /* records from the kernel of an impossible size */
	uint64_t pending_lost[EMBER_LOST_REASONS]; /* not yet reported in a LOST record */
	uint64_t lost[EMBER_LOST_REASONS];         /* totals, for the progress line */
	uint64_t bpf_drops_seen[EMBER_DROP_MAX];
};

void ember_drain_init(struct ember_drain *d, struct ember_procs *procs);

/* libbpf ring_buffer callbacks; ctx is the struct ember_drain. */
int ember_drain_on_sample(void *ctx, void *data, size_t size);
int ember_drain_on_proc_event(void *ctx, void *data, size_t size);

/* Folds the kernel's cumulative drop counters into pending LOST counts. */
void ember_drain_account_bpf_drops(struct ember_drain *d, const uint64_t drops[EMBER_DROP_MAX]);
/* Writes pending LOST records into the sample ring while it has room. */
void ember_drain_flush_lost(struct ember_drain *d);
/* The samples among counts by enum ember_lost_reason (lost or pending_lost). */
uint64_t ember_drain_lost_samples(const uint64_t by_reason[EMBER_LOST_REASONS]);
/* The collector's own resident memory and its BPF maps' into the ring (when there is one). */
void ember_drain_report_memory(struct ember_drain *d, uint64_t bpf_map_bytes);

#endif
