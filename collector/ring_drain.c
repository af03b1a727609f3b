// SPDX-License-Identifier: Apache-2.0
#include "collector/ring_drain.h"

#include <stdbool.h>
#include <string.h>

#include <bpf/bpf.h>

#include "shared/proc_number.h"

void ember_drain_init(struct ember_drain *d, struct ember_procs *procs)
{
	memset(d, 0, sizeof(*d));
	d->procs = procs;
	memset(d->proc_map_fds, -1, sizeof(d->proc_map_fds));
}

static void count_lost(struct ember_drain *d, enum ember_lost_reason reason, uint64_t n)
{
	d->pending_lost[reason] += n;
	d->lost[reason] += n;
}

static void forward(struct ember_drain *d, uint16_t type, const void *data, size_t size)
{
	bool sample = type == EMBER_REC_SAMPLE;

	if (!d->ring) {
		count_lost(d, sample ? EMBER_LOST_NO_CONSUMER : EMBER_LOST_PROC_EVENTS, 1);
		return;
	}
	/* Older losses go first so the consumer learns of them in order. */
	ember_drain_flush_lost(d);
	if (ember_ring_write(d->ring, type, data, size))
		count_lost(d, sample ? EMBER_LOST_SAMPLE_RING : EMBER_LOST_PROC_EVENTS, 1);
	else if (sample)
		d->samples++;
}

int ember_drain_on_sample(void *ctx, void *data, size_t size)
{
	struct ember_drain *d = ctx;
	const struct ember_sample_event *s = data;

	if (size < sizeof(*s) || (s->kind != EMBER_EV_SAMPLE && s->kind != EMBER_EV_OFF_CPU) ||
	    size != ember_sample_size(s, size)) {
		d->malformed++;
		count_lost(d, EMBER_LOST_OTHER, 1);
		return 0;
	}
	/* The broker serves only processes seen here, and not by a sample older than an exit.
	 * Seen when the kernel took the sample (its clock is CLOCK_MONOTONIC): no clock read. */
	if (!ember_procs_stale(d->procs, s->tgid, s->time_ns))
		ember_procs_note(d->procs, s->tgid, s->time_ns, true);
	forward(d, EMBER_REC_SAMPLE, data, size);
	return 0;
}

int ember_drain_on_proc_event(void *ctx, void *data, size_t size)
{
	struct ember_drain *d = ctx;
	const struct ember_proc_event *ev = data;

	if (size != sizeof(*ev)) {
		d->malformed++;
		return 0;
	}
	if (ev->kind == EMBER_EV_EXIT) {
		forward(d, EMBER_REC_PROCESS_EXIT, data, size);
		/* Here, not only by the symbolizer, which may not have sent (or have lost track of)
		 * them: nothing else deletes them. Lists sent after this are refused (peer.c). Only
		 * from the maps that ever held a process: nine bpf calls an exit otherwise. */
		for (int i = 0; i < EMBER_PROC_MAPS; i++)
			if (!d->proc_maps_set || (*d->proc_maps_set >> i & 1))
				bpf_map_delete_elem(d->proc_map_fds[i], &ev->tgid);
		ember_procs_forget(d->procs, ev->tgid, ev->time_ns);
	} else if (ev->kind == EMBER_EV_MMAP) {
		forward(d, EMBER_REC_PROCESS_EXEC, data, size); /* the symbolizer's to read */
	} else if (ev->kind == EMBER_EV_EXEC || ev->kind == EMBER_EV_RUNNING) {
		/* Tables are loaded at exec (and start), before the first sample. */
		if (!ember_procs_stale(d->procs, ev->tgid, ev->time_ns) &&
		    !ember_procs_note(d->procs, ev->tgid, ev->time_ns, false))
			ember_procs_program(d->procs, ev->tgid, ev->kind == EMBER_EV_EXEC);
		forward(d, EMBER_REC_PROCESS_EXEC, data, size);
	} else {
		d->malformed++;
	}
	return 0;
}

void ember_drain_account_bpf_drops(struct ember_drain *d, const uint64_t drops[EMBER_DROP_MAX])
{
	static const uint8_t reason_of[EMBER_DROP_MAX] = {
	    [EMBER_DROP_RINGBUF_FULL] = EMBER_LOST_BPF_RINGBUF,
	    [EMBER_DROP_PROC_RINGBUF_FULL] = EMBER_LOST_PROC_EVENTS,
	    [EMBER_DROP_OFF_CPU_SHORT] = EMBER_LOST_OFF_CPU_SHORT,
	    [EMBER_DROP_OFF_CPU_SAMPLED_OUT] = EMBER_LOST_OFF_CPU_SAMPLED,
	};

	for (int i = 0; i < EMBER_DROP_MAX; i++) {
		/* A counter that went back adds nothing. */
		uint64_t delta =
		    drops[i] > d->bpf_drops_seen[i] ? drops[i] - d->bpf_drops_seen[i] : 0;

		d->bpf_drops_seen[i] = drops[i];
		if (delta)
			count_lost(d, reason_of[i] ? reason_of[i] : EMBER_LOST_OTHER, delta);
	}
}

void ember_drain_flush_lost(struct ember_drain *d)
{
	if (!d->ring)
		return;
	for (uint32_t r = 1; r < EMBER_LOST_REASONS; r++) {
		struct ember_rec_lost rec = {.count = d->pending_lost[r], .reason = r};

		if (!rec.count)
			continue;
		if (ember_ring_write(d->ring, EMBER_REC_LOST, &rec, sizeof(rec)))
			return;
		d->pending_lost[r] = 0;
	}
}

uint64_t ember_drain_lost_samples(const uint64_t by_reason[EMBER_LOST_REASONS])
{
	uint64_t n = 0;

	/* Samples only: a lost process event costs symbol quality, not a sample, and
	 * off-CPU waits left out on purpose are no loss. */
	for (int r = 0; r <= EMBER_LOST_OTHER; r++)
		if (r != EMBER_LOST_PROC_EVENTS)
			n += by_reason[r];
	return n;
}

void ember_drain_report_memory(struct ember_drain *d, uint64_t bpf_map_bytes)
{
	struct ember_rec_collector_memory m = {ember_self_rss_bytes(), bpf_map_bytes,
	                                       d->procs->snaps_taken, d->procs->snaps_served,
	                                       d->procs->snaps_dropped};

	if (d->ring)
		ember_ring_write(d->ring, EMBER_REC_COLLECTOR_MEMORY, &m, sizeof(m));
}
