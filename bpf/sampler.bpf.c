// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * CPU sampler: runs on a cpu-clock perf event on every CPU and sends one
 * record per sample (pid, tid, cpu, time, comm, kernel and user stack) to
 * user space through a BPF ring buffer. Kernel stacks come from
 * bpf_get_stack; user stacks from the table-driven unwinder (unwind.bpf.h),
 * with interpreted frames among them (interp.bpf.h), and the thread's trace
 * context when its process publishes one (thread_ctx.bpf.h).
 * The off-CPU programs (offcpu.bpf.h, loaded only with --off-cpu) and the
 * process events (proc.bpf.h) live in this object too, to share the ring, the
 * selection (select.bpf.h) and the unwinder's maps.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "records.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the collector before load. */
const volatile bool include_idle = false;

/* The collector sizes the ring for the sampling rate before load (max_entries). */
#define SAMPLES_RING_BYTES (1 << 22)
/* Wake the collector early once this much is waiting (an eighth of the ring). */
const volatile __u64 wakeup_bytes = SAMPLES_RING_BYTES / 8;
/*
 * Samples whose symbolization reads the process's memory soon after (the look-ahead):
 * interpreted frames (code objects), a goroutine's labels, a span's attributes. Those may
 * be gone or reused by the collector's next tick, a second later; such samples wake it at
 * most every PERISHABLE_WAKE_NS (when the last such wake-up was, on any CPU: a race costs
 * one wake-up more).
 */
#define PERISHABLE_WAKE_NS (250ull * 1000000ull)
__u64 perishable_woken_ns;
/*
 * CPU hotplug steps, any CPU's: when they changed since its last look, the collector opens
 * every CPU's event afresh, as a CPU that went offline and came back between two of its
 * looks keeps an event that samples no more.
 */
__u64 cpu_hotplug_steps;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SAMPLES_RING_BYTES);
} samples SEC(".maps");

/* Each step also wakes the collector, which may sleep 30 s on a quiet host: a discarded record
 * wakes its poll and carries nothing (its reader skips it). */
SEC("raw_tp/cpuhp_exit")
int ember_cpu_hotplug(void *ctx)
{
	void *wake = bpf_ringbuf_reserve(&samples, 8, 0);

	__sync_fetch_and_add(&cpu_hotplug_steps, 1);
	if (wake)
		bpf_ringbuf_discard(wake, BPF_RB_FORCE_WAKEUP);
	return 0;
}

#include "select.bpf.h"
#include "scratch.bpf.h"
#include "unwind.bpf.h"
#include "thread_ctx.bpf.h"

/*
 * Completes the sample in scratch slot `slot` (kind and off-CPU fields set by
 * the caller) with the current task's ids, comm and stacks, and sends it.
 * SCRATCH_CPU: ctx is the perf event's, whose registers the unwinder starts
 * from; else the task is in the kernel and its saved user registers are used.
 */
static __always_inline void send_sample(void *ctx, struct sample_scratch *s, __u32 slot,
                                        __u64 pid_tgid, __u64 now)
{
	__u32 tgid = pid_tgid >> 32;
	long kbytes;
	__u64 klen, ulen, size;
	__u32 copy_bytes = 0;
	bool wake;

	s->hdr.tgid = tgid;
	s->hdr.tid = (__u32)pid_tgid;
	s->hdr.cpu = bpf_get_smp_processor_id();
	s->hdr.time_ns = now;
	__builtin_memset(s->hdr.trace_id, 0, sizeof(s->hdr.trace_id));
	__builtin_memset(s->hdr.span_id, 0, sizeof(s->hdr.span_id));
	s->hdr.ctx_record = 0; /* go_labels_head[1] too */
	/* Read before the stacks: the thread is stopped (OTEP 4947's condition) either way. */
	s->hdr.stack_flags = ember_tctx_read(tgid, slot);
	bpf_get_current_comm(s->hdr.comm, sizeof(s->hdr.comm));

	kbytes = bpf_get_stack(ctx, s->frames, EMBER_MAX_KSTACK * 8, 0);
	if (kbytes < 0) {
		s->hdr.stack_flags |= EMBER_STACK_KERNEL_ERR;
		kbytes = 0;
	}
	klen = (__u64)kbytes / 8;
	if (klen >= EMBER_MAX_KSTACK) {
		klen = EMBER_MAX_KSTACK;
		s->hdr.stack_flags |= EMBER_STACK_KERNEL_TRUNC;
	}
	/* Only the CPU sampler copies stacks (where tables are missing) and earns their budget. */
	if (slot == SCRATCH_CPU)
		ulen = unwind_user(ctx, tgid, (__u32)klen, &s->hdr.stack_flags, &copy_bytes);
	else
		ulen = unwind_user_in_kernel(ctx, tgid, slot, (__u32)klen, &s->hdr.stack_flags);
	if (ulen > EMBER_MAX_USTACK_WORDS)
		ulen = EMBER_MAX_USTACK_WORDS;
	s->hdr.kstack_len = klen;
	s->hdr.ustack_len = ulen;
	size = sizeof(s->hdr) + (klen + ulen) * 8;
	if (slot == SCRATCH_CPU) {
		copy_budget_earn(size);
		if (copy_bytes <= sizeof(s->copy))
			size += copy_bytes;
	}

	/*
	 * Waking the collector for every sample costs more than the sample: it
	 * drains on its tick, and is woken early only when the ring fills up, for a
	 * perishable sample (above), or when a sample shows a process lacks a
	 * mapping list, its tables found by file or not (its maps are wanted now,
	 * and a new process's maps are copied while it lives: one of 50 ms is gone
	 * by the next tick).
	 */
	wake = (s->hdr.stack_flags & (EMBER_STACK_UNWIND_NO_PROC | EMBER_STACK_UNWIND_MAP_MISS |
	                              EMBER_STACK_UNWIND_BY_FILE)) ||
	       bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > wakeup_bytes;
	if (((s->hdr.stack_flags & (EMBER_STACK_INTERP | EMBER_STACK_GO_LABELS)) ||
	     ((s->hdr.stack_flags & EMBER_STACK_TRACE_CTX) && s->hdr.ctx_record)) &&
	    now - perishable_woken_ns >= PERISHABLE_WAKE_NS) {
		perishable_woken_ns = now;
		wake = true;
	}
	if (bpf_ringbuf_output(&samples, s, size, wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP))
		count_drop(EMBER_DROP_RINGBUF_FULL);
}

SEC("perf_event")
int ember_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, slot = SCRATCH_CPU;
	struct sample_scratch *s;

	if ((tgid == 0 && !include_idle) || !selected(tgid))
		return 0;
	s = bpf_map_lookup_elem(&scratch, &slot);
	if (!s) {
		count_drop(EMBER_DROP_NO_SCRATCH);
		return 0;
	}
	s->hdr.kind = EMBER_EV_SAMPLE;
	s->hdr.off_cpu_ns = 0;
	s->hdr.wait_state = 0;
	s->hdr.wait_syscall = 0;
	send_sample(ctx, s, slot, id, bpf_ktime_get_ns());
	return 0;
}

#include "offcpu.bpf.h"
#include "proc.bpf.h"
