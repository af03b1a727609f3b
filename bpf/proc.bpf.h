// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Process life cycle (raw tracepoints: no tracefs needed): tells user space when a process runs a
 * new program (its mappings changed; the time goes to unwind_execs too, for the unwinder; its vDSO
 * in the event) and when its last thread exits (its mappings and cached state
 * can be dropped, and with -p its PID leaves the filter). A task iterator lists the processes
 * already running when sampling starts, with the CPU time each has used (their unwind tables are
 * loaded the busiest first).
 *
 * Part of sampler.bpf.c's object, not one of its own: libbpf reads the kernel's BTF and
 * searches it for each type a program relocates once per object, and a second object cost
 * as much again at start-up (about 25 ms), besides sharing its maps by descriptor.
 */
#ifndef EMBER_PROC_BPF_H
#define EMBER_PROC_BPF_H

#include "select.bpf.h"
#include "mapped_file.bpf.h"

/* Chosen cgroup paths (-> 1), watched by ember_cgroup_mkdir. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_SELECT_MAX_CGROUPS);
	__type(key, struct ember_cgroup_path);
	__type(value, __u8);
} cgroup_paths SEC(".maps");

/* An event of the current process, made in the ring buffer (NULL: full, counted). */
static __always_inline struct ember_proc_event *event(__u32 kind, __u32 tgid)
{
	struct ember_proc_event *ev = bpf_ringbuf_reserve(&proc_events, sizeof(*ev), 0);

	if (!ev) {
		count_drop(EMBER_DROP_PROC_RINGBUF_FULL);
		return NULL;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->tgid = tgid;
	ev->time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	return ev;
}

static __always_inline int send(struct ember_proc_event *ev)
{
	/* An exec is wanted at once: the symbolizer loads the new program's unwind tables. */
	bpf_ringbuf_submit(ev, ev->kind == EMBER_EV_EXEC ? BPF_RB_FORCE_WAKEUP : 0);
	return 0;
}

#define PF_KTHREAD_FLAG 0x00200000 /* PF_KTHREAD in include/linux/sched.h */

/* One EMBER_EV_RUNNING record per user-space process, read by the collector from the iterator. */
SEC("iter/task")
int ember_running(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct ember_proc_event e = {}, *ev = &e;

	/* Each process once, through its leader; kernel threads have no user stack. */
	if (!task || BPF_CORE_READ(task, pid) != BPF_CORE_READ(task, tgid) ||
	    (BPF_CORE_READ(task, flags) & PF_KTHREAD_FLAG) || !BPF_CORE_READ(task, mm))
		return 0;
	ev->tgid = BPF_CORE_READ(task, tgid);
	if (!task_selected(task, ev->tgid))
		return 0;
	ev->kind = EMBER_EV_RUNNING;
	ev->time_ns = bpf_ktime_get_ns();
	/* The leader's time and that of the threads that have exited. */
	ev->cpu_ns = BPF_CORE_READ(task, se.sum_exec_runtime) +
	             BPF_CORE_READ(task, signal, sum_sched_runtime);
	BPF_CORE_READ_STR_INTO(&ev->comm, task, comm);
	bpf_seq_write(ctx->meta->seq, ev, sizeof(*ev));
	return 0;
}

SEC("raw_tp/sched_process_exec")
int ember_exec(void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 now = bpf_ktime_get_ns();
	struct ember_proc_event *ev;

	if (!selected(tgid))
		return 0;
	/* Before the new program's first sample: the old one's mapping list is stale from now. */
	bpf_map_update_elem(&unwind_execs, &tgid, &now, BPF_ANY);
	ev = event(EMBER_EV_EXEC, tgid);
	if (!ev)
		return 0;
	/* Its vDSO, which no mmap maps, and which of the process's programs it is. */
	ev->start = (__u64)BPF_CORE_READ(task, mm, context.vdso);
	ev->end = ev->start + BPF_CORE_READ(task, mm, context.vdso_image, size);
	ev->exec_id = BPF_CORE_READ(task, self_exec_id);
	return send(ev);
}

/* 6.7 and later; weak: absent before (then the addresses are 0, and not called). */
extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task,
                                 __u64 addr) __ksym __weak;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym __weak;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym __weak;

#define EXIT_WALK_STEPS 4096 /* mappings an exit's walk visits at most */

/* An exit walk's steps: counted in a map, whose value the verifier does not follow, so
 * that the walk's rounds look alike to it (a counter on the stack makes each its own). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} exit_walk_steps SEC(".maps");

/* An executable mapping of a file of the exiting process, for user space. Global: the
 * verifier checks it once, not in every round of the walk. */
__attribute__((noinline)) int ember_report_mapping(struct ember_proc_vma *v, __u32 tgid,
                                                   __u64 exec_id)
{
	struct ember_proc_event *ev;

	if (!v || !(ev = event(EMBER_EV_MMAP, tgid)))
		return 0;
	ev->start = v->start;
	ev->end = v->end;
	ev->offset = v->offset;
	ev->exec_id = exec_id;
	mapped_file_event(ev, (struct file *)v->file);
	return send(ev);
}

/*
 * A process the unwinder met without a mapping list (unwind_vmas) is exiting: its
 * executable mappings go to user space, the kernel's word on them, for its samples
 * that the symbolizer reads after it is gone (a compiler's assembler lives 30 ms). The
 * walk needs the task_vma iterator (6.7) and a memory map still there at this point of
 * the exit (as since 6.16): elsewhere nothing is sent.
 */
static __always_inline void report_mappings(struct task_struct *task, __u32 tgid)
{
	struct vm_area_struct *vma = NULL;
	struct bpf_iter_task_vma it;
	__u64 exec_id = BPF_CORE_READ(task, self_exec_id);
	struct ember_proc_vma v;
	__u32 zero = 0, *steps = bpf_map_lookup_elem(&exit_walk_steps, &zero);

	if (!bpf_map_lookup_elem(&unwind_vmas, &tgid))
		return;
	bpf_map_delete_elem(&unwind_vmas, &tgid);
	if (!bpf_iter_task_vma_new || !bpf_iter_task_vma_next || !bpf_iter_task_vma_destroy ||
	    !BPF_CORE_READ(task, mm) || !steps)
		return;
	*steps = 0;
	if (!bpf_iter_task_vma_new(&it, task, 0))
		while ((vma = bpf_iter_task_vma_next(&it)) && (*steps)++ < EXIT_WALK_STEPS) {
			/* Read, not dereferenced: each direct load of a field made the verifier
			 * search the kernel's BTF for the type's trusted fields (12 ms). */
			v = (struct ember_proc_vma){BPF_CORE_READ(vma, vm_start),
			                            BPF_CORE_READ(vma, vm_end),
			                            BPF_CORE_READ(vma, vm_pgoff) << 12,
			                            (__u64)BPF_CORE_READ(vma, vm_file)};
			if ((BPF_CORE_READ(vma, vm_flags) & VM_EXEC_FLAG) && v.file)
				ember_report_mapping(&v, tgid, exec_id);
		}
	bpf_iter_task_vma_destroy(&it);
}

SEC("raw_tp/sched_process_exit")
int ember_exit(void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ember_proc_event *ev;

	/* Only the last thread's exit ends the process (the leader may leave before the
	 * others): the exiting thread has left signal->live already. */
	if (BPF_CORE_READ(task, signal, live.counter))
		return 0;
	if (selected(tgid))
		report_mappings(task, tgid);
	if (selected(tgid) && (ev = event(EMBER_EV_EXIT, tgid)))
		send(ev);
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

#endif
