/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The CPython frame walker, a part of the user-stack unwinder
 * (unwind.bpf.h, x86-64). For a process with a row in py_procs, every
 * native frame whose pc lies in the interpreter loop first gets the Python
 * frames that call of the loop runs, innermost first, one per step of the
 * unwinder's loop; then the native frame itself is recorded and native
 * unwinding goes on. So a C extension's frames come before (below, in a
 * flame graph) the Python frame that called it.
 *
 * The thread state is found through the pthread key the interpreter keeps
 * it in (glibc's key slots in the thread control block); the chain starts
 * at its current frame when the first interpreter frame is met. Per frame:
 * one read of the frame, one of the code object. Frames beyond
 * EMBER_PY_MAX_FRAMES, or one that cannot be read, end the Python part
 * with a marker; native unwinding goes on.
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

enum py_walk_state {
	PY_OFF = 0,   /* not a Python process (or its frames are done with) */
	PY_UNSTARTED, /* the thread state is read at the first interpreter frame */
	PY_ON,        /* the cursor is valid */
};

static __always_inline __u64 py_u64(const __u8 *win, __u32 off)
{
	if (off > EMBER_PY_WINDOW - 8)
		return 0;
	return *(const __u64 *)(win + off);
}

static __always_inline __u32 py_u32(const __u8 *win, __u32 off)
{
	if (off > EMBER_PY_WINDOW - 4)
		return 0;
	return *(const __u32 *)(win + off);
}

static __always_inline __u8 py_u8(const __u8 *win, __u32 off)
{
	if (off > EMBER_PY_WINDOW - 1)
		return 0;
	return win[off];
}

/* Adds two words to the sample's user frames; false when they do not fit. */
static __always_inline bool py_push(struct sample_scratch *s, __u64 idx, __u64 w0, __u64 w1)
{
	if (idx >= EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS - 1)
		return false;
	/* One register, checked where it is used (a 32-bit index would be re-extended). */
	barrier_var(idx);
	s->frames[idx] = w0;
	s->frames[idx + 1] = w1;
	return true;
}

static __always_inline bool py_in_eval(const struct ember_py_proc *p, __u64 pc)
{
	return (pc >= p->eval_start[0] && pc < p->eval_end[0]) ||
	       (pc >= p->eval_start[1] && pc < p->eval_end[1]);
}

/* The thread's innermost Python frame, through its thread state; 0 when it has none. */
static __always_inline __u64 py_first_frame(const struct ember_py_proc *p)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase), tstate = 0, ptr = 0;
	__u32 key = 0;

	if (bpf_probe_read_user(&key, sizeof(key), (const void *)p->tss_key) ||
	    key >= EMBER_PY_MAX_TSS_KEYS)
		return 0;
	if (bpf_probe_read_user(&tstate, sizeof(tstate),
	                        (const void *)(fsbase + p->tsd_offset + 16ull * key)) ||
	    !tstate)
		return 0;
	if (bpf_probe_read_user(&ptr, sizeof(ptr), (const void *)(tstate + p->tstate_frame)))
		return 0;
	if (p->chain == EMBER_PY_CHAIN_CFRAME && ptr &&
	    bpf_probe_read_user(&ptr, sizeof(ptr), (const void *)(ptr + p->cframe_frame)))
		return 0;
	return ptr;
}

/*
 * Before a native frame at pc is recorded: true when Python frames go first
 * (s->pyw.pending is then set and the next steps record them).
 */
static __always_inline bool py_before_native(struct ember_uw_state *st, struct sample_scratch *s,
                                             __u64 pc)
{
	if (s->pyw.state == PY_OFF || s->pyw.at_pc || !py_in_eval(&s->py, pc))
		return false;
	s->pyw.at_pc = 1;
	if (s->pyw.state == PY_UNSTARTED) {
		s->pyw.cursor = py_first_frame(&s->py);
		s->pyw.state = s->pyw.cursor ? PY_ON : PY_OFF;
		if (s->pyw.cursor)
			st->flags |= EMBER_STACK_PYTHON;
	}
	s->pyw.pending = s->pyw.state == PY_ON && s->pyw.cursor;
	return s->pyw.pending;
}

/* Ends the Python part with a marker; native unwinding goes on. */
static __always_inline long py_stop(struct ember_uw_state *st, struct sample_scratch *s, __u64 idx,
                                    __u32 reason)
{
	if (py_push(s, idx, EMBER_PY_TAG_MARKER << EMBER_PY_TAG_SHIFT | reason, 0))
		s->uw_words += 2;
	s->pyw.state = PY_OFF;
	s->pyw.pending = 0;
	return 0;
}

/* Records the frame at the cursor (or passes a shim frame); returns 0 to go on. */
static __always_inline long py_step(struct ember_uw_state *st, struct sample_scratch *s)
{
	const struct ember_py_proc *p = &s->py;
	__u64 idx = (__u64)st->base + s->uw_words;
	__u32 fr = p->frame_read, cr = p->code_read, csum = 0;
	__u64 frame = s->pyw.cursor, code, back, off;
	__s64 delta;

	if (!frame) {
		s->pyw.pending = 0;
		return 0;
	}
	if (s->pyw.frames >= EMBER_PY_MAX_FRAMES)
		return py_stop(st, s, idx, EMBER_PY_MARK_TRUNCATED);
	if (fr > EMBER_PY_WINDOW || bpf_probe_read_user(s->py_frame, fr, (const void *)frame))
		return py_stop(st, s, idx, EMBER_PY_MARK_UNREADABLE);
	back = py_u64(s->py_frame, p->frame_back);
	if (p->entry == EMBER_PY_ENTRY_OWNER &&
	    py_u8(s->py_frame, p->frame_entry) >= p->entry_owner) {
		/* The shim at the bottom of one call of the loop: the next call resumes below. */
		s->pyw.cursor = back;
		s->pyw.pending = 0;
		return 0;
	}
	/* 3.14 tags the code reference in its low bits; objects are 8-aligned. */
	code = py_u64(s->py_frame, p->frame_code) & ~7ull;
	if (code && cr <= EMBER_PY_WINDOW &&
	    !bpf_probe_read_user(s->py_code, cr, (const void *)code))
		csum = ember_py_checksum(
		    py_u32(s->py_code, p->code_argcount), py_u32(s->py_code, p->code_firstlineno),
		    py_u64(s->py_code, p->code_name), py_u64(s->py_code, p->code_filename));
	if (p->instr == EMBER_PY_INSTR_LASTI) {
		off = py_u32(s->py_frame, p->frame_instr);
	} else {
		delta = (__s64)(py_u64(s->py_frame, p->frame_instr) - code - p->code_units);
		if (delta > 0x7fffffff || delta < -0x7fffffff)
			delta = -0x7fffffff;
		off = (__u32)delta;
	}
	if (!py_push(s, idx, EMBER_PY_TAG << EMBER_PY_TAG_SHIFT | (code & EMBER_PY_ADDR_MASK),
	             off << 32 | csum))
		return py_stop(st, s, idx, EMBER_PY_MARK_TRUNCATED);
	s->uw_words += 2;
	s->pyw.frames++;
	s->pyw.cursor = back;
	if (p->entry == EMBER_PY_ENTRY_ONE ||
	    (p->entry == EMBER_PY_ENTRY_FLAG && py_u8(s->py_frame, p->frame_entry)))
		s->pyw.pending = 0;
	return 0;
}

/* At the start of a sample's user unwinding: is the process a Python one? */
static __always_inline void py_walk_init(struct sample_scratch *s, __u32 tgid)
{
	const struct ember_py_proc *p = bpf_map_lookup_elem(&py_procs, &tgid);

	__builtin_memset(&s->pyw, 0, sizeof(s->pyw));
	if (!p)
		return;
	__builtin_memcpy(&s->py, p, sizeof(s->py));
	s->pyw.state = PY_UNSTARTED;
}

#endif
