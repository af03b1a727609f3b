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

#include "interp.h"

#define EMBER_RECORDS_VERSION 13

#define EMBER_COMM_LEN   16
#define EMBER_MAX_KSTACK 127
#define EMBER_MAX_USTACK 128 /* native user frames */
/* User words: native frames, two per interpreted frame, and one two-word marker (interp.h). */
#define EMBER_MAX_USTACK_WORDS (EMBER_MAX_USTACK + 2 * EMBER_INTERP_MAX_FRAMES + 2)
/*
 * A sample whose user stack leads where no unwind table is loaded yet (a
 * file no table was built for yet: a program's first run, a library's first
 * mapping) carries the top of that stack, up to this many bytes, for the
 * symbolizer to unwind. The copies of a CPU's samples add at most as many
 * bytes as those samples carry themselves, or the burst lent at the start if
 * that is more (bpf/stack_copy.bpf.h): at most twice the bytes of the stacks
 * alone over a run longer than the burst's repayment. The burst follows the
 * sampling frequency (a second of samples that each carry a copy of the size
 * measured: 4-5 KiB for a compiler's, whose table takes the symbolizer half
 * a second to a second on a busy host), up to EMBER_STACK_COPY_BURST_MAX.
 */
#define EMBER_MAX_STACK_COPY          (16u << 10)
#define EMBER_STACK_COPY_BURST_PER_HZ (4u << 10)
#define EMBER_STACK_COPY_BURST_MAX    (512u << 10)
#define EMBER_STACK_COPY_BURST(hz)                                                                 \
	((__u64)(hz)*EMBER_STACK_COPY_BURST_PER_HZ < EMBER_STACK_COPY_BURST_MAX                    \
	     ? (__u64)(hz)*EMBER_STACK_COPY_BURST_PER_HZ                                           \
	     : EMBER_STACK_COPY_BURST_MAX)

/*
 * What to sample (select.bpf.h): processes by PID, at most EMBER_SELECT_MAX_PIDS at once (a
 * command and the processes it starts); cgroups by id (those chosen, and those created again
 * later at a chosen path: a restarted service); chosen cgroup paths, relative to the cgroup v2
 * root as the kernel names them ("/system.slice/nginx.service"), NUL-padded.
 */
#define EMBER_SELECT_MAX_PIDS       8192
#define EMBER_SELECT_MAX_CGROUP_IDS 4096
#define EMBER_SELECT_MAX_CGROUPS    64
#define EMBER_CGROUP_PATH_LEN       256

struct ember_cgroup_path {
	char path[EMBER_CGROUP_PATH_LEN];
};

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
	/* A process a command started that the full PID filter could not take (not sampled). */
	EMBER_DROP_SELECT_FULL,
	EMBER_DROP_MAX,
};

/* stack_flags: why a stack is the length it is. */
#define EMBER_STACK_KERNEL_ERR      0x1 /* bpf_get_stack failed for the kernel part */
#define EMBER_STACK_USER_ERR        0x2 /* bpf_get_stack failed for the user part */
#define EMBER_STACK_USER_TRUNC      0x4 /* the user stack filled the buffer */
#define EMBER_STACK_KERNEL_TRUNC    0x8
#define EMBER_STACK_UNWIND_NO_PROC  0x10  /* the process had no unwind tables yet */
#define EMBER_STACK_UNWIND_MAP_MISS 0x20  /* a pc outside the mappings its tables know */
#define EMBER_STACK_USER_FP         0x40  /* a frame was found through the frame pointer */
#define EMBER_STACK_COPY            0x80  /* a struct ember_stack_copy follows the frames */
#define EMBER_STACK_COPY_FAILED     0x100 /* no copy could be read: frame pointers took over */
#define EMBER_STACK_INTERP          0x200 /* interpreted frames (interp.h) among the user words */
#define EMBER_STACK_UNWIND_BY_FILE  0x400 /* a frame's table was found by its file (no list) */
/* Why a frame's table could not be found by its file (with NO_PROC or MAP_MISS): */
#define EMBER_STACK_FILE_UNSEEN  0x800  /* the file has no table yet */
#define EMBER_STACK_FILE_CHANGED 0x1000 /* not the file its table was built from any more */
#define EMBER_STACK_FILE_NO_VMA                                                                    \
	0x2000                               /* its mapping could not be looked up (the sample's   \
	                                        one lookup spent, or the memory map locked) */
#define EMBER_STACK_UNWIND_STALE_LIST 0x4000 /* the process's list predates its exec: unused */
/* The thread ran a span (bpf/thread_ctx.h): trace_id and span_id are its. */
#define EMBER_STACK_TRACE_CTX 0x8000
/* Bits 16..23: why user unwinding stopped (enum ember_unwind_stop, unwind_table.h). */
/* The goroutine has pprof labels (bpf/thread_ctx.h): go_labels is their set's address. */
#define EMBER_STACK_GO_LABELS 0x1000000

enum ember_event_kind {
	EMBER_EV_SAMPLE = 1,
	EMBER_EV_EXEC = 2,
	EMBER_EV_EXIT = 3,
	EMBER_EV_OFF_CPU = 4,
	EMBER_EV_RUNNING = 5, /* a process that was running when sampling started */
	EMBER_EV_MMAP = 6,    /* a process mapped a file executable */
};

/* Off-CPU samples at most, per second and CPU, that the sampling aims at (offcpu.bpf.h). */
#define EMBER_OFF_CPU_RATE 1000
/* Threads off CPU at once that can be tracked. */
#define EMBER_OFF_CPU_TASKS 65536

/* wait_state: the task state (TASK_* bits of include/linux/sched.h) a thread left the CPU in,
 * or this flag when it was preempted (it stayed runnable and waited for a CPU). */
#define EMBER_WAIT_PREEMPTED  0x80000000u
#define EMBER_WAIT_STATE_MASK 0xffffu

/*
 * One CPU sample, or one off-CPU sample: a wait that ended, with the stacks
 * the thread waited in, stamped with the time and CPU where it ran again.
 * Followed by kstack_len kernel addresses (leaf first), then ustack_len user
 * words (leaf first): native addresses and, when stack_flags has
 * EMBER_STACK_INTERP, two-word interpreted frames; then, with EMBER_STACK_COPY in
 * stack_flags (CPU samples only), a struct ember_stack_copy and its bytes:
 * the size is ember_sample_size().
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
	union {
		/* With EMBER_STACK_TRACE_CTX: the span the thread ran (off-CPU: the one it
		 * waited in), and where its record is when it has attributes (else 0), which
		 * the symbolizer reads while the record is still that span's. */
		struct {
			__u8 trace_id[16];
			__u8 span_id[8];
			__u64 ctx_record;
		};
		/* With EMBER_STACK_GO_LABELS (a Go program has no thread context): the address
		 * of the running goroutine's label set, which the symbolizer reads, and its
		 * first 16 bytes as they were (a set freed and another made at its address is
		 * told apart). */
		struct {
			__u64 go_labels;
			__u64 go_labels_head[2];
		};
	};
	/* __u64 frames[kstack_len + ustack_len] follow. */
};

/* A sample's most bytes without a stack copy. */
#define EMBER_MAX_SAMPLE_BYTES                                                                     \
	(sizeof(struct ember_sample_event) + 8 * (EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS))

/*
 * The user stack above the frame where unwinding found no table: the last
 * user address of the sample is that frame's pc. The symbolizer unwinds the
 * copy with the same tables (symbolizer/unwind/stack_unwind.c).
 *
 * The copy covers `words` words of the stack from sp, but carries only
 * those whose value could be a user address (from EMBER_COPY_MIN_ADDR up to
 * the process's address-space size): unwinding reads nothing else (return
 * addresses, and saved frame or stack pointers that a caller's frame is
 * found from; a register that holds anything but a stack address is never
 * where a frame starts). That is a third to a half of a stack's words:
 * zeros, small integers, flags and floating-point values stay behind. The
 * len bytes that follow are the kept words in order, then two bitmaps of
 * EMBER_STACK_COPY_BITMAP_BYTES(words) each, bit i for the stack's word i:
 * the first says it was kept; the second, for a word not kept, that it was
 * not zero: it reads as EMBER_COPY_DROPPED_WORD (no address, so a walk that
 * lands on it stops as on the original value; a zero ends a walk at the
 * outermost frame).
 */
struct ember_stack_copy {
	__u64 pc, sp, fp; /* that frame's registers; the copy starts at sp */
	__u64 di;         /* with EMBER_COPY_DI: rdi (the frame is the sampled one) */
	__u64 bx;         /* with EMBER_COPY_BX: rbx (the sampled frame's, or restored) */
	__u32 len;   /* bytes that follow: a multiple of 8, at most EMBER_MAX_STACK_COPY_BYTES */
	__u16 flags; /* EMBER_COPY_* */
	__u16 words; /* stack words covered: at most EMBER_MAX_STACK_COPY / 8 */
};

#define EMBER_COPY_MIN_ADDR                  0x10000ull /* vm.mmap_min_addr's default */
#define EMBER_COPY_DROPPED_WORD              0x1ull
#define EMBER_STACK_COPY_BITMAP_BYTES(words) ((((__u64)(words) + 63) / 64) * 8)
#define EMBER_MAX_STACK_COPY_BYTES                                                                 \
	(EMBER_MAX_STACK_COPY + 2 * EMBER_STACK_COPY_BITMAP_BYTES(EMBER_MAX_STACK_COPY / 8))

#define EMBER_COPY_EXACT_PC 0x1 /* pc is where execution stopped, not a return address */
#define EMBER_COPY_DI       0x2 /* di is the frame's rdi (EMBER_ROW_RA_DI) */
#define EMBER_COPY_BX       0x4 /* bx is the frame's rbx (EMBER_ROW_CFA_BX) */

/*
 * The size a sample record must have: header, frames and stack copy. The
 * copy's length is read only when it lies within the avail bytes given.
 * 0: counts no record can have.
 */
static inline __u64 ember_sample_size(const struct ember_sample_event *s, __u64 avail)
{
	__u64 size = sizeof(*s) + 8ull * ((__u64)s->kstack_len + s->ustack_len);
	const struct ember_stack_copy *c;

	if (s->kstack_len > EMBER_MAX_KSTACK || s->ustack_len > EMBER_MAX_USTACK_WORDS)
		return 0;
	if (!(s->stack_flags & EMBER_STACK_COPY))
		return size;
	if (avail < size + sizeof(*c))
		return 0;
	c = (const struct ember_stack_copy *)((const char *)s + size);
	if (c->len > EMBER_MAX_STACK_COPY_BYTES || c->len % 8)
		return 0;
	return size + sizeof(*c) + c->len;
}

/*
 * A process began a new program (exec), its last thread left (exit), it was
 * running when sampling started (its unwind tables are wanted at once, the
 * busiest first), or it mapped a file executable (mmap: the kernel's word on
 * its mappings, for a process gone before its maps could be read).
 */
#define EMBER_MMAP_DEPTH    8  /* path components of a mapped file's name, the file's first */
#define EMBER_MMAP_NAME_LEN 32 /* of each (longer ones cut) */

struct ember_proc_event {
	__u32 kind; /* EMBER_EV_EXEC, EMBER_EV_EXIT, EMBER_EV_RUNNING or EMBER_EV_MMAP */
	__u32 tgid;
	__u64 time_ns;
	__u64 cpu_ns; /* EMBER_EV_RUNNING: CPU time the process has used */
	char comm[EMBER_COMM_LEN];
	/* EXEC: the new program's vDSO [start, end); MMAP: the mapping, its file offset, the
	 * file (device as major << 20 | minor and inode, as /proc/PID/maps shows them) and its
	 * path within its mount, up to depth components (the last first). */
	__u64 start, end, offset, ino;
	__u64 exec_id; /* EXEC, MMAP: the process's execs so far: which program mapped it */
	__u32 dev;
	__u32 depth;
	char name[EMBER_MMAP_DEPTH][EMBER_MMAP_NAME_LEN];
};

#endif
