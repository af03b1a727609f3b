/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Records the eBPF programs write to their ring buffers. The collector
 * copies them unchanged into the sample ring, so this layout is also the
 * payload of the sample ring's SAMPLE and PROCESS_* records: change it only
 * together with EMBER_RECORDS_VERSION. CPU and off-CPU samples share one
 * layout (and the ring's SAMPLE record type); the kind tells them apart.
 */
#ifndef EMBER_BPF_RECORDS_H
#define EMBER_BPF_RECORDS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define EMBER_RECORDS_VERSION 3

#define EMBER_COMM_LEN   16
#define EMBER_MAX_KSTACK 127
#define EMBER_MAX_USTACK 128

/* Indexes of the per-CPU drop counters (map "drops"). */
enum ember_drop_reason {
	EMBER_DROP_RINGBUF_FULL = 0, /* bpf_ringbuf_output failed */
	EMBER_DROP_PROC_RINGBUF_FULL,
	EMBER_DROP_NO_SCRATCH,
	/* Off-CPU waits not recorded: shorter than the minimum, left out by the
	 * sampling at high rates (the ones kept carry their weight), and waits
	 * not tracked because the table of waiting threads was full. */
	EMBER_DROP_OFF_CPU_SHORT,
	EMBER_DROP_OFF_CPU_SAMPLED_OUT,
	EMBER_DROP_OFF_CPU_UNTRACKED,
	EMBER_DROP_MAX,
};

/* stack_flags: why a stack is the length it is. */
#define EMBER_STACK_KERNEL_ERR      0x1 /* bpf_get_stack failed for the kernel part */
#define EMBER_STACK_USER_ERR        0x2 /* bpf_get_stack failed for the user part */
#define EMBER_STACK_USER_TRUNC      0x4 /* the user stack filled the buffer */
#define EMBER_STACK_KERNEL_TRUNC    0x8
#define EMBER_STACK_UNWIND_NO_PROC  0x10 /* the process had no unwind tables yet */
#define EMBER_STACK_UNWIND_MAP_MISS 0x20 /* a pc outside the mappings its tables know */
#define EMBER_STACK_USER_FP         0x40 /* a frame was found through the frame pointer */
/* Bits 16..23: why user unwinding stopped (enum ember_unwind_stop, unwind_table.h). */

enum ember_event_kind {
	EMBER_EV_SAMPLE = 1,
	EMBER_EV_EXEC = 2,
	EMBER_EV_EXIT = 3,
	EMBER_EV_OFF_CPU = 4,
};

/* Off-CPU samples at most, per second and CPU, that the sampling aims at (offcpu.bpf.h). */
#define EMBER_OFF_CPU_RATE 1000

/* wait_state: the task state (TASK_* bits of include/linux/sched.h) a thread left the CPU in,
 * or this flag when it was preempted (it stayed runnable and waited for a CPU). */
#define EMBER_WAIT_PREEMPTED  0x80000000u
#define EMBER_WAIT_STATE_MASK 0xffffu

/*
 * One CPU sample, or one off-CPU sample: a wait that ended, with the stacks
 * the thread waited in, stamped with the time and CPU where it ran again.
 * Followed by kstack_len kernel addresses (leaf first) and then ustack_len
 * user addresses (leaf first). The total size is
 * sizeof(struct ember_sample_event) + 8 * (kstack_len + ustack_len).
 */
struct ember_sample_event {
	__u32 kind; /* EMBER_EV_SAMPLE or EMBER_EV_OFF_CPU */
	__u32 tgid;
	__u32 tid;
	__u32 cpu;
	__u64 time_ns; /* CLOCK_MONOTONIC */
	__u16 kstack_len;
	__u16 ustack_len;
	__u32 stack_flags;
	char comm[EMBER_COMM_LEN];
	/* Off-CPU samples only (0 in CPU samples): */
	__u64 off_cpu_ns;   /* the time it stands for: the wait's duration, or more when sampled */
	__u32 wait_state;   /* EMBER_WAIT_PREEMPTED or the task state it left the CPU in */
	__s32 wait_syscall; /* the system call it waited in, -1 when none */
			    /* __u64 frames[kstack_len + ustack_len] follow. */
};

/* A process began a new program (exec) or its last thread left (exit). */
struct ember_proc_event {
	__u32 kind; /* EMBER_EV_EXEC or EMBER_EV_EXIT */
	__u32 tgid;
	__u64 time_ns;
	char comm[EMBER_COMM_LEN];
};

#endif
