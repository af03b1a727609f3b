// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Process life cycle (raw tracepoints: no tracefs needed): tells user space when a process runs a
 * new program (its mappings changed; the time goes to unwind_execs too, for the unwinder) and when
 * its last thread exits (its mappings and cached state
 * can be dropped, and with -p its PID leaves the filter). A task iterator lists the processes
 * already running when sampling starts, with the CPU time each has used (their unwind tables are
 * loaded the busiest first).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "records.h"

char LICENSE[] SEC("license") = "GPL";

#include "select.bpf.h"

/* Chosen cgroup paths (-> 1), watched by ember_cgroup_mkdir. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_SELECT_MAX_CGROUPS);
	__type(key, struct ember_cgroup_path);
	__type(value, __u8);
} cgroup_paths SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 18);
} proc_events SEC(".maps");

static __always_inline int send_event(__u32 kind, __u32 tgid)
{
	struct ember_proc_event ev = {};

	if (!selected(tgid))
		return 0;
	ev.kind = kind;
	ev.tgid = tgid;
	ev.time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(ev.comm, sizeof(ev.comm));
	/* An exec is wanted at once: the symbolizer loads the new program's unwind tables. */
	if (bpf_ringbuf_output(&proc_events, &ev, sizeof(ev),
	                       kind == EMBER_EV_EXEC ? BPF_RB_FORCE_WAKEUP : 0))
		count_drop(EMBER_DROP_PROC_RINGBUF_FULL);
	return 0;
}

#define PF_KTHREAD_FLAG 0x00200000 /* PF_KTHREAD in include/linux/sched.h */

/* One EMBER_EV_RUNNING record per user-space process, read by the collector from the iterator. */
SEC("iter/task")
int ember_running(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct ember_proc_event ev = {};

	/* Each process once, through its leader; kernel threads have no user stack. */
	if (!task || BPF_CORE_READ(task, pid) != BPF_CORE_READ(task, tgid) ||
	    (BPF_CORE_READ(task, flags) & PF_KTHREAD_FLAG) || !BPF_CORE_READ(task, mm))
		return 0;
	ev.tgid = BPF_CORE_READ(task, tgid);
	if (!task_selected(task, ev.tgid))
		return 0;
	ev.kind = EMBER_EV_RUNNING;
	ev.time_ns = bpf_ktime_get_ns();
	/* The leader's time and that of the threads that have exited. */
	ev.cpu_ns = BPF_CORE_READ(task, se.sum_exec_runtime) +
	            BPF_CORE_READ(task, signal, sum_sched_runtime);
	BPF_CORE_READ_STR_INTO(&ev.comm, task, comm);
	bpf_seq_write(ctx->meta->seq, &ev, sizeof(ev));
	return 0;
}

SEC("raw_tp/sched_process_exec")
int ember_exec(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 now = bpf_ktime_get_ns();

	/* Before the new program's first sample: the old one's mapping list is stale from now. */
	if (selected(tgid))
		bpf_map_update_elem(&unwind_execs, &tgid, &now, BPF_ANY);
	return send_event(EMBER_EV_EXEC, tgid);
}

SEC("raw_tp/sched_process_exit")
int ember_exit(void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	/* Only the last thread's exit ends the process (the leader may leave before the
	 * others): the exiting thread has left signal->live already. */
	if (BPF_CORE_READ(task, signal, live.counter))
		return 0;
	send_event(EMBER_EV_EXIT, tgid);
	bpf_map_delete_elem(&unwind_execs, &tgid);
	/* With -p, its PID names no process to sample any more: were it reused, another
	 * process would be sampled, and its files brokered, in its place. */
	if (filter_pids)
		bpf_map_delete_elem(&pid_filter, &tgid);
	return 0;
}

/* Loaded only for a command: a process it (or any of its descendants) starts is its own. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(ember_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = parent->tgid, child_tgid = child->tgid;
	__u8 one = 1;

	/* Runs before the child is first scheduled: it is sampled from its first instruction. */
	if (child_tgid != parent_tgid && bpf_map_lookup_elem(&pid_filter, &parent_tgid) &&
	    bpf_map_update_elem(&pid_filter, &child_tgid, &one, BPF_ANY))
		count_drop(EMBER_DROP_SELECT_FULL);
	return 0;
}

/* Loaded only with chosen cgroups: one created at a chosen path is selected before any task
 * enters it (systemd creates a service's cgroup anew at every start). */
SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(ember_cgroup_mkdir, struct cgroup *cgrp, const char *path)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct ember_cgroup_path key;
	__u64 id;
	__u8 one = 1;

	/* Only the v2 hierarchy, whose ids the sampler compares (v1 hierarchies number their own).
	 */
	if (BPF_CORE_READ(cgrp, root) != BPF_CORE_READ(task, cgroups, dfl_cgrp, root))
		return 0;
	__builtin_memset(&key, 0, sizeof(key));
	if (bpf_probe_read_kernel_str(key.path, sizeof(key.path), path) <= 0 ||
	    !bpf_map_lookup_elem(&cgroup_paths, &key))
		return 0;
	id = BPF_CORE_READ(cgrp, kn, id);
	bpf_map_update_elem(&cgroup_filter, &id, &one, BPF_ANY);
	return 0;
}
