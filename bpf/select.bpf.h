/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * What to sample, for sampler.bpf.c (CPU and off-CPU samples) and proc.bpf.h
 * (process events), which share these maps.
 *
 * A process is selected when its PID is in pid_filter (-p, and with a
 * command the command and every process it starts), or when its cgroup v2
 * is one of cgroup_filter's or lies below one. The ancestor check runs once
 * per cgroup: its verdict is kept in cgroup_verdicts, keyed by the cgroup's
 * id, which the kernel never reuses. So an unselected task costs one map
 * lookup, and its samples never reach the ring buffer. A task moved into
 * another cgroup is judged by its new cgroup at once; a cgroup created
 * later (a restarted service) has a new id, hence no stale verdict.
 */
#ifndef EMBER_BPF_SELECT_BPF_H
#define EMBER_BPF_SELECT_BPF_H

#include "shared.bpf.h" /* filter_pids, pid_filter */

/* Set by the collector before load. */
const volatile bool filter_cgroups = false;

/* Selected cgroups (id -> 1); a restarted service adds its new cgroup's id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* empty without --cgroup */
	__uint(max_entries, EMBER_SELECT_MAX_CGROUP_IDS);
	__type(key, __u64);
	__type(value, __u8);
} cgroup_filter SEC(".maps");

/* Every cgroup a sampled task was in -> 1 when it is selected (itself or an ancestor). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} cgroup_verdicts SEC(".maps");

/* Deeper than any real hierarchy (a pod's container under kubepods is at level 4 or 5). */
#define SELECT_MAX_LEVEL 32

static __always_inline bool cgroup_selected(void)
{
	__u64 id = bpf_get_current_cgroup_id(), ancestor;
	__u8 *known = bpf_map_lookup_elem(&cgroup_verdicts, &id), verdict = 0;

	if (known)
		return *known;
	for (int level = 0; level < SELECT_MAX_LEVEL; level++) {
		ancestor = bpf_get_current_ancestor_cgroup_id(level);
		if (!ancestor)
			break;
		if (bpf_map_lookup_elem(&cgroup_filter, &ancestor)) {
			verdict = 1;
			break;
		}
		if (ancestor == id)
			break;
	}
	bpf_map_update_elem(&cgroup_verdicts, &id, &verdict, BPF_ANY);
	return verdict;
}

/* Whether another task's cgroup is selected (a task iterator's: not the current one). */
static __always_inline bool task_cgroup_selected(struct task_struct *task)
{
	struct cgroup *cgrp = BPF_CORE_READ(task, cgroups, dfl_cgrp);

	for (int level = 0; level < SELECT_MAX_LEVEL && cgrp; level++) {
		__u64 id = BPF_CORE_READ(cgrp, kn, id);

		if (bpf_map_lookup_elem(&cgroup_filter, &id))
			return true;
		cgrp = BPF_CORE_READ(cgrp, self.parent, cgroup);
	}
	return false;
}

/* Whether the current task (of process tgid) is to be sampled. */
static __always_inline bool selected(__u32 tgid)
{
	if (!filter_cgroups)
		return pid_wanted(tgid);
	return (filter_pids && bpf_map_lookup_elem(&pid_filter, &tgid)) || cgroup_selected();
}

/* The same for another task (a task iterator's). */
static __always_inline bool task_selected(struct task_struct *task, __u32 tgid)
{
	if (!filter_cgroups)
		return pid_wanted(tgid);
	return (filter_pids && bpf_map_lookup_elem(&pid_filter, &tgid)) ||
	       task_cgroup_selected(task);
}

#endif
