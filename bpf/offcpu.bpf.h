/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Off-CPU time, for sampler.bpf.c (one object, so that these programs share
 * its ring buffer and send_sample, the selection, drop counters and the
 * unwinder's maps).
 *
 * At sched_switch a thread leaving the CPU is remembered: when, in which
 * state (preempted, sleeping, uninterruptible) and in which system call. When
 * it runs again, on whichever CPU, sched_exit_tp fires in its own context at
 * the end of __schedule: there its kernel stack is still the one it waited
 * in and its user registers are those it saved on entering the kernel, so
 * the stacks are taken then, complete, with the CPU sampler's unwinder, and
 * only for waits that are recorded. One off-CPU sample per wait, weighted by
 * the time the thread was away (CLOCK_MONOTONIC, the same on every CPU).
 *
 * Waits shorter than off_cpu_min_ns are counted, not recorded. Above
 * EMBER_OFF_CPU_RATE recorded waits per second on a CPU, waits are sampled
 * with a probability proportional to their length (keep a wait of d < T
 * with probability d/T and weight T; T adapts per CPU to the rate of the last
 * 100 ms), so every wait's expected weight is its duration (totals stay
 * unbiased), long waits are always kept, and the cost per second is bounded.
 *
 * Needs the sched_exit_tp tracepoint (Linux 6.16); kprobes and fentry are
 * not relied on.
 */
#ifndef EMBER_BPF_OFFCPU_BPF_H
#define EMBER_BPF_OFFCPU_BPF_H

#include "records.h"
#include "scratch.bpf.h"
#include "select.bpf.h"
#include "unwind.bpf.h"

/* Set by the collector before load. */
const volatile __u64 off_cpu_min_ns = 1000000;
const volatile __u32 off_cpu_rate = EMBER_OFF_CPU_RATE;

#define OFF_CPU_WINDOW_NS 100000000ull /* the sampling adapts over this */

/* include/linux/sched.h: a task on its final switch. */
#define TASK_DEAD_STATES                                                                           \
	(0x0010 /* EXIT_DEAD */ | 0x0020 /* EXIT_ZOMBIE */ | 0x0080 /* TASK_DEAD */)

/* A thread that left the CPU (tid ->). Written in place: no allocation at switch time. */
struct off_cpu_wait {
	__u64 start_ns; /* 0: not waiting (or not seen leaving) */
	__u32 state;    /* EMBER_WAIT_PREEMPTED or the task state */
	__s32 syscall;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_OFF_CPU_TASKS); /* 1 without off-CPU sampling (bpf_loader.c) */
	__type(key, __u32);
	__type(value, struct off_cpu_wait);
} off_cpu_waits SEC(".maps");

/* Per CPU: the waits of the current window, and the sampling threshold. */
struct off_cpu_rate_state {
	__u64 window_start;
	__u64 seen, seen_ns;
	__u64 threshold_ns; /* 0: every wait is kept */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct off_cpu_rate_state);
} off_cpu_rate_state SEC(".maps");

/* The system call the current task is in, -1 when none (or a kernel thread). */
static __always_inline __s32 current_syscall(struct task_struct *task)
{
	struct pt_regs *regs;

	if (BPF_CORE_READ(task, flags) & PF_KTHREAD_FLAG)
		return -1;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs)
		return -1;
#if defined(__TARGET_ARCH_x86)
	return (__s32)BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	return (__s32)BPF_CORE_READ(regs, syscallno);
#else
	return -1;
#endif
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ember_off_cpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 tid = (__u32)prev->pid, tgid = (__u32)prev->tgid;
	__u32 state = BPF_CORE_READ(prev, __state) & EMBER_WAIT_STATE_MASK;
	struct off_cpu_wait *w, fresh;

	if (!tid)
		return 0; /* the idle task */
	if (state & TASK_DEAD_STATES) {
		bpf_map_delete_elem(&off_cpu_waits, &tid);
		return 0;
	}
	if (!selected(tgid)) /* current is still prev here */
		return 0;
	fresh.start_ns = bpf_ktime_get_ns();
	/* A preempted task stays runnable whatever state it was about to enter. */
	fresh.state = preempt ? EMBER_WAIT_PREEMPTED : state;
	fresh.syscall = current_syscall(prev);
	w = bpf_map_lookup_elem(&off_cpu_waits, &tid);
	if (w) {
		*w = fresh;
		return 0;
	}
	if (bpf_map_update_elem(&off_cpu_waits, &tid, &fresh, BPF_NOEXIST))
		count_drop(EMBER_DROP_OFF_CPU_UNTRACKED);
	return 0;
}

/* The weight a wait of d ns is recorded with, or 0 when the sampling leaves it out. */
static __always_inline __u64 off_cpu_weight(__u64 d, __u64 now)
{
	__u32 zero = 0;
	struct off_cpu_rate_state *st = bpf_map_lookup_elem(&off_cpu_rate_state, &zero);
	__u64 budget = (__u64)off_cpu_rate * OFF_CPU_WINDOW_NS / 1000000000ull, t, r;

	if (!st || !budget)
		return d;
	if (now - st->window_start >= OFF_CPU_WINDOW_NS) {
		/* The threshold that would have kept the last window within its budget. */
		st->threshold_ns = st->seen > budget ? st->seen_ns / budget : 0;
		st->window_start = now;
		st->seen = st->seen_ns = 0;
	}
	st->seen++;
	st->seen_ns += d;
	t = st->threshold_ns;
	/* A burst within the window raises the threshold at once. */
	if (st->seen > budget && st->seen_ns / budget > t)
		t = st->seen_ns / budget;
	if (d >= t)
		return d;
	/* Keep with probability d / t; a 64-bit draw makes the modulo bias negligible. */
	r = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();
	return r % t < d ? t : 0;
}

/* The end of __schedule, in the context of the task that runs now (is_switch: it was away). */
SEC("tp_btf/sched_exit_tp")
int BPF_PROG(ember_off_cpu_resume, bool is_switch)
{
	__u64 id = bpf_get_current_pid_tgid(), now, d, weight;
	__u32 tid = (__u32)id, slot = SCRATCH_OFF_CPU;
	struct off_cpu_wait *w, wait;
	struct sample_scratch *s;

	if (!is_switch || !tid)
		return 0;
	w = bpf_map_lookup_elem(&off_cpu_waits, &tid);
	if (!w || !w->start_ns)
		return 0;
	wait = *w;
	w->start_ns = 0;
	now = bpf_ktime_get_ns();
	d = now - wait.start_ns;
	if (d < off_cpu_min_ns) {
		count_drop(EMBER_DROP_OFF_CPU_SHORT);
		return 0;
	}
	weight = off_cpu_weight(d, now);
	if (!weight) {
		count_drop(EMBER_DROP_OFF_CPU_SAMPLED_OUT);
		return 0;
	}
	s = bpf_map_lookup_elem(&scratch, &slot);
	if (!s) {
		count_drop(EMBER_DROP_NO_SCRATCH);
		return 0;
	}
	s->hdr.kind = EMBER_EV_OFF_CPU;
	s->hdr.off_cpu_ns = weight;
	s->hdr.wait_state = wait.state;
	s->hdr.wait_syscall = wait.syscall;
	send_sample(ctx, s, slot, id, now);
	return 0;
}

#endif
