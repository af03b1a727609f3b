/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loads the eBPF programs (libbpf skeletons), attaches the sampler to a
 * cpu-clock perf event on every online CPU and the process tracepoints, and
 * exposes their ring buffers and drop counters.
 */
#ifndef EMBER_COLLECTOR_BPF_LOADER_H
#define EMBER_COLLECTOR_BPF_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <bpf/libbpf.h>

#include "bpf/records.h"
#include "collector/selection.h"
#include "collector/table_loader.h"
#include "ipc/proto.h"

struct sampler_bpf;

struct ember_bpf_opts {
	unsigned int sample_hz;
	uint64_t off_cpu_min_ns; /* EMBER_OFF_CPU_OFF: the off-CPU programs are not loaded */
	const pid_t *pids;       /* sample only these processes when npids > 0 */
	size_t npids;            /* ... or these cgroups', when the selection has some: */
	struct ember_selection *selection; /* ids of cgroups made since are filled in */
	bool follow_forks;                 /* the processes the chosen ones start are chosen too */
	uint64_t peer_ring; /* the symbolizer's ring: a wake-up brings at most a quarter of it */
	ring_buffer_sample_fn on_sample;
	ring_buffer_sample_fn on_proc_event;
	void *cb_ctx;
};

struct ember_bpf {
	struct sampler_bpf *sampler; /* every program, in one object (bpf/sampler.bpf.c) */
	struct ring_buffer *rings;
	int ncpus;               /* possible CPUs */
	struct bpf_link **links; /* per CPU, NULL when not sampled; each owns its perf event */
	unsigned int sample_hz;
	int attached_cpus;
	bool enabled;
	int online_fd;        /* /sys/devices/system/cpu/online */
	uint64_t hotplug_steps; /* as last seen: bpf/sampler.bpf.c */
	int unwind_tables_fd; /* the unwinder's maps (bpf/unwind.bpf.h) */
	int unwind_blocks_fd;
	int unwind_files_fd;
	int proc_map_fds[EMBER_PROC_MAPS]; /* keyed by process (table_loader.h) */
	const uint64_t *drops;             /* the drop counters, mapped (bpf/shared.bpf.h) */
};

/*
 * A power-of-two buffer size (at least min, at most 64 MiB) that holds
 * `seconds` of the largest possible samples at hz on ncpus CPUs, and a burst
 * of stack copies.
 */
uint64_t ember_ring_bytes_for(unsigned int hz, int ncpus, unsigned int seconds, uint64_t min);

/* Returns 0 or a negative errno; logs what to do on failure. */
int ember_bpf_start(struct ember_bpf *b, const struct ember_bpf_opts *opts);
/* Whether the verifier takes the sampler (`ember check`): loads it and unloads it again.
 * Returns 0 or the negative errno of the load. */
int ember_bpf_check_load(void);
/* Stops sampling (the ring buffers can still be drained). */
void ember_bpf_stop_sampling(struct ember_bpf *b);
void ember_bpf_destroy(struct ember_bpf *b);

/* A descriptor that becomes readable when a ring buffer has data. */
int ember_bpf_ring_fd(const struct ember_bpf *b);
/* Consumes everything available (and opens CPUs' events anew after a hotplug step);
 * returns records consumed or a negative errno. */
int ember_bpf_drain(struct ember_bpf *b);

/* Passes one EMBER_EV_RUNNING event per running process (the -p ones with -p) to fn. */
void ember_bpf_list_running(struct ember_bpf *b, ring_buffer_sample_fn fn, void *ctx);

/* The memory of every map, as the kernel counts it (fdinfo's memlock); after start. */
uint64_t ember_bpf_map_bytes(const struct ember_bpf *b);

/* Sums the per-CPU drop counters: out[EMBER_DROP_*]. */
int ember_bpf_read_drops(const struct ember_bpf *b, uint64_t out[EMBER_DROP_MAX]);

#endif
