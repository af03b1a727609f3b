/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * What the sampler (sampler.bpf.c, offcpu.bpf.h) and the process events
 * (proc.bpf.h) share: the PID filter of -p, the times of execs, the mappings
 * the unwinder learnt, the process events' ring and the drop counters. All are programs of one
 * object, so a process is filtered, and a drop counted, in one place whichever program sees it.
 */
#ifndef EMBER_BPF_SHARED_BPF_H
#define EMBER_BPF_SHARED_BPF_H

#include "records.h"
#include "unwind_table.h"

/* Set by the collector before load. */
const volatile bool filter_pids = false;

/* Processes to sample when filter_pids is set (tgid -> 1). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);       /* empty without -p: no 650 KiB kept */
	__uint(max_entries, EMBER_SELECT_MAX_PIDS); /* a command's processes too */
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps");

/*
 * When each process last ran a new program (tgid -> CLOCK_MONOTONIC ns), written at
 * exec and deleted at exit by proc.bpf.h: the unwinder ignores a mapping list read
 * before (unwind.bpf.h). Only processes that exec'd while ember runs have an entry.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_UNWIND_MAX_PROCS * 2);
	__type(key, __u32);
	__type(value, __u64);
} unwind_execs SEC(".maps");

/*
 * Process events (proc.bpf.h: exec, exit, the processes running at the start) and the
 * mappings the unwinder learns of processes (unwind.bpf.h), for user space.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} proc_events SEC(".maps");

/*
 * The executable mappings of each process sampled without a mapping list, as the unwinder
 * learns them (unwind.bpf.h: one a sample, bpf_find_vma), for its frames' tables by file; a
 * process with an entry reports its mappings at its exit (proc.bpf.h), for user space to
 * know the maps of a process gone before they could be read. Of one memory map: a process
 * that exec'd starts afresh.
 */
#define EMBER_PROC_VMAS  24
#define EMBER_VMAS_PROCS 2048

struct ember_proc_vma {
	__u64 start, end, offset;
	__u64 file; /* struct file *, 0: anonymous */
};

struct ember_proc_vmas {
	__u64 mm;
	__u32 n;
	__u32 reserved;
	struct ember_proc_vma v[EMBER_PROC_VMAS];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EMBER_VMAS_PROCS);
	__type(key, __u32);
	__type(value, struct ember_proc_vmas);
} unwind_vmas SEC(".maps");

/* Records not sent, by enum ember_drop_reason: one array the collector maps and reads
 * with no system call (drops are rare, so CPUs adding to the same counter cost nothing). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, EMBER_DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline bool pid_wanted(__u32 tgid)
{
	return !filter_pids || bpf_map_lookup_elem(&pid_filter, &tgid);
}

static __always_inline void count_drop(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &reason);

	if (n)
		__sync_fetch_and_add(n, 1);
}

#endif
