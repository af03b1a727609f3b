/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Where a sample is built before it goes to the ring buffer: it is too large
 * for the BPF stack. A per-CPU map with one slot per program that can
 * interrupt another on the same CPU (the perf event can fire while the
 * off-CPU program, which runs with interrupts on, builds one). The sampler,
 * the off-CPU programs and the user-stack unwinder (unwind.bpf.h) write
 * here; each includes this header, so the map is defined once per object.
 */
#ifndef EMBER_BPF_SCRATCH_BPF_H
#define EMBER_BPF_SCRATCH_BPF_H

#include "interp.h"
#include "records.h"

/* Bytes of user stack the native unwinder reads at once (a power of 2, at most a page). */
#define EMBER_STACK_WINDOW 512

struct sample_scratch {
	struct ember_sample_event hdr;
	__u64 frames[EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS];
	/* A stack copy (stack_copy.bpf.h) follows the frames, however many there are:
	 * the room it needs after the most frames, and what a page-at-a-time read of
	 * it may seem to reach to the verifier. */
	__u8 copy[sizeof(struct ember_stack_copy) + EMBER_MAX_STACK_COPY_BYTES];
	__u8 slack[4096];
	/* The copy's bitmaps while its words are sorted (struct ember_stack_copy), and the
	 * words kept so far: here, not on the stack, for the reason given below. */
	__u64 copy_kept[EMBER_MAX_STACK_COPY / 512], copy_nonzero[EMBER_MAX_STACK_COPY / 512];
	__u64 copy_kept_words;
	/* rdi for the copy (ember_missing_table): the sampled frame's, or none (copy_di_ok 0).
	 * Here: the copy's function takes no more arguments. */
	__u64 copy_di;
	__u32 copy_di_ok;
	/* rbx for the copy: the copied frame's, or none (copy_bx_ok 0). */
	__u64 copy_bx;
	__u32 copy_bx_ok;
	/* The user unwinder's counters: user words written (native and interpreted
	 * frames) and native frames. Kept here, not on the stack, like the interpreter
	 * walker's state below: the verifier then does not track them as constants, which
	 * would multiply the states it explores through the unwinder's loop. */
	__u32 uw_words, uw_native;
	/* The unwinder's window on the user stack (read_stack_u64): [win_lo, win_hi) of it. */
	__u64 win_lo, win_hi;
	__u64 win[EMBER_STACK_WINDOW / 8];
	/* The interpreter walk's state (interp.bpf.h) and the walker's own scratch: its copy
	 * of the process's row and its read windows, as its struct lays them out. */
	struct ember_interp_walk interp_walk;
	__u64 interp[EMBER_INTERP_SCRATCH_BYTES / 8];
};

#define SCRATCH_CPU     0
#define SCRATCH_OFF_CPU 1

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct sample_scratch);
} scratch SEC(".maps");

#endif
