/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The CPython frame walker, behind the interpreters' dispatch
 * (interp.bpf.h) in the user-stack unwinder (unwind.bpf.h, x86-64). For a
 * process with a row in py_procs, every native frame whose pc lies in the
 * interpreter loop first gets the Python frames that call of the loop runs,
 * innermost first, one per step of the unwinder's loop; then the native
 * frame itself is recorded and native unwinding goes on. So a C extension's
 * frames come before (below, in a flame graph) the Python frame that called
 * it.
 *
 * The thread state is found through the pthread key the interpreter keeps
 * it in (glibc's key slots in the thread control block); the chain starts
 * at its current frame when the first interpreter frame is met. Per frame:
 * one read of the frame, one of the code object. A frame that cannot be
 * read ends the Python part with a marker; native unwinding goes on.
 */
#ifndef EMBER_BPF_PYTHON_BPF_H
#define EMBER_BPF_PYTHON_BPF_H

#include "python.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_PY_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct ember_py_proc);
} py_procs SEC(".maps");

/* The walker's part of the sample's scratch: the process's row and the read windows. */
struct py_scratch {
	struct ember_py_proc row;
	__u8 frame[EMBER_PY_WINDOW];
	__u8 code[EMBER_PY_WINDOW];
};

_Static_assert(sizeof(struct py_scratch) <= EMBER_INTERP_SCRATCH_BYTES, "fits the scratch");

static __always_inline struct py_scratch *py_scratch(struct sample_scratch *s)
{
	return (struct py_scratch *)s->interp;
}

/* Fields of the walker\'s windows, and reads into them (interp.bpf.h): bounded, 0 past. */
#define py_u64(win, off) interp_win_u64(win, EMBER_PY_WINDOW, off)
#define py_u32(win, off) interp_win_u32(win, EMBER_PY_WINDOW, off)
static __always_inline __u8 py_u8(const __u8 *win, __u32 off)
{
	if (off > EMBER_PY_WINDOW - 1)
		return 0;
	return win[off];
}

static __always_inline bool py_in_eval(const struct ember_py_proc *p, __u64 pc)
{
	return (pc >= p->eval_start[0] && pc < p->eval_end[0]) ||
	       (pc >= p->eval_start[1] && pc < p->eval_end[1]);
}

/* The thread's innermost Python frame, through its thread state; 0 when it has none. */
static __always_inline __u64 py_first_frame(const struct ember_py_proc *p)
{
	__u64 tstate = interp_pthread_value(p->tss_key, p->tsd_offset, EMBER_PY_MAX_TSS_KEYS),
	      ptr = 0;

	if (!tstate)
		return 0;
	if (bpf_probe_read_user(&ptr, sizeof(ptr), (const void *)(tstate + p->tstate_frame)))
		return 0;
	if (p->chain == EMBER_PY_CHAIN_CFRAME && ptr &&
	    bpf_probe_read_user(&ptr, sizeof(ptr), (const void *)(ptr + p->cframe_frame)))
		return 0;
	return ptr;
}

/* Records the frame at the cursor (or passes a shim frame); returns 0 to go on. */
static __always_inline long py_step(struct ember_uw_state *st, struct sample_scratch *s)
{
	struct py_scratch *ps = py_scratch(s);
	const struct ember_py_proc *p = &ps->row;
	__u32 fr = p->frame_read, cr = p->code_read, csum = 0;
	__u64 frame = s->interp_walk.cursor, code, back, off;
	__s64 delta;

	if (fr > EMBER_PY_WINDOW || bpf_probe_read_user(ps->frame, fr, (const void *)frame))
		return interp_stop(st, s, EMBER_INTERP_MARK_UNREADABLE);
	back = py_u64(ps->frame, p->frame_back);
	if (p->entry == EMBER_PY_ENTRY_OWNER &&
	    py_u8(ps->frame, p->frame_entry) >= p->entry_owner) {
		/* The shim at the bottom of one call of the loop: the next call resumes below. */
		s->interp_walk.cursor = back;
		s->interp_walk.pending = 0;
		return 0;
	}
	/* 3.14 tags the code reference in its low bits; objects are 8-aligned. */
	code = py_u64(ps->frame, p->frame_code) & ~7ull;
	if (code && cr <= EMBER_PY_WINDOW && !bpf_probe_read_user(ps->code, cr, (const void *)code))
		csum = ember_py_checksum(
		    py_u32(ps->code, p->code_argcount), py_u32(ps->code, p->code_firstlineno),
		    py_u64(ps->code, p->code_name), py_u64(ps->code, p->code_filename));
	if (p->instr == EMBER_PY_INSTR_LASTI) {
		off = py_u32(ps->frame, p->frame_instr);
	} else {
		delta = (__s64)(py_u64(ps->frame, p->frame_instr) - code - p->code_units);
		if (delta > 0x7fffffff || delta < -0x7fffffff)
			delta = -0x7fffffff;
		off = (__u32)delta;
	}
	if (!interp_frame(st, s, code, off << 32 | csum))
		return interp_stop(st, s, EMBER_INTERP_MARK_TRUNCATED);
	s->interp_walk.cursor = back;
	if (p->entry == EMBER_PY_ENTRY_ONE ||
	    (p->entry == EMBER_PY_ENTRY_FLAG && py_u8(ps->frame, p->frame_entry)))
		s->interp_walk.pending = 0;
	return 0;
}

/* The walker's side of the dispatch (enum interp_op). */
static __always_inline __u64 py_walker(enum interp_op op, struct ember_uw_state *st,
                                       struct sample_scratch *s, __u64 pc)
{
	const struct ember_py_proc *row;

	switch (op) {
	case INTERP_LOAD:
		row = bpf_map_lookup_elem(&py_procs, &st->tgid);
		if (row)
			__builtin_memcpy(&py_scratch(s)->row, row, sizeof(*row));
		return row != NULL;
	case INTERP_IN_LOOP:
		return py_in_eval(&py_scratch(s)->row, pc);
	case INTERP_FIRST:
		return py_first_frame(&py_scratch(s)->row);
	case INTERP_STEP:
		return py_step(st, s);
	case INTERP_UNWIND: /* its code has tables */
		return (__u64)-1;
	}
	return 0;
}

#endif
