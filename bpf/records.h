/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Records the eBPF programs write to their ring buffers. The collector
 * copies them unchanged into the sample ring, so this layout is also the
 * payload of the sample ring's SAMPLE and PROCESS_* records: change it only
 * together with EMBER_RECORDS_VERSION.
 */
#ifndef EMBER_BPF_RECORDS_H
#define EMBER_BPF_RECORDS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define EMBER_RECORDS_VERSION 2

#define EMBER_COMM_LEN   16
#define EMBER_MAX_KSTACK 127
#define EMBER_MAX_USTACK 128

/* Indexes of the per-CPU drop counters (map "drops"). */
enum ember_drop_reason {
	EMBER_DROP_RINGBUF_FULL = 0, /* bpf_ringbuf_output failed */
	EMBER_DROP_PROC_RINGBUF_FULL,
	EMBER_DROP_NO_SCRATCH,
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
};

/*
 * One CPU sample. Followed by kstack_len kernel addresses (leaf first) and
 * then ustack_len user addresses (leaf first). The total size is
 * sizeof(struct ember_sample_event) + 8 * (kstack_len + ustack_len).
 */
struct ember_sample_event {
	__u32 kind; /* EMBER_EV_SAMPLE */
	__u32 tgid;
	__u32 tid;
	__u32 cpu;
	__u64 time_ns; /* CLOCK_MONOTONIC */
	__u16 kstack_len;
	__u16 ustack_len;
	__u32 stack_flags;
	char comm[EMBER_COMM_LEN];
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
