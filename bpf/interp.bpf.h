/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The interpreters' dispatch in the user-stack unwinder (unwind.bpf.h): the
 * unwinder calls only the three functions at the end of this file, and
 * they reach the process's runtime's walker through one switch
 * (interp_call), one line per runtime.
 *
 * Which runtime a process has comes from the index interp_procs (tgid ->
 * runtime), which the collector keeps beside each runtime's map of rows:
 * one lookup per sample, as a single runtime's map took before; a process
 * of a runtime pays a second, its row's. The walk itself is the same for
 * every runtime that keeps a list of its frames (CPython, Ruby, PHP, Perl):
 * when the native unwinder reaches a pc in the runtime's interpreter loop,
 * the frames of that call of the loop are recorded first, one per step of
 * the unwinder's loop, from a cursor the walker moves; then the native frame.
 * A runtime whose code has no unwind tables (the JVM's JIT code) owns the
 * pcs in that code instead: its walker records the frame there and steps
 * the registers past it, one frame per step, until the pc is native again.
 *
 * A walker implements enum interp_op on its own scratch
 * (EMBER_INTERP_SCRATCH_BYTES of the sample's, cast to its struct) and
 * records with interp_frame and interp_stop, which tag the words with its
 * runtime.
 */
#ifndef EMBER_BPF_INTERP_BPF_H
#define EMBER_BPF_INTERP_BPF_H

#include "interp.h"
#include "scratch.bpf.h"

/* Process (tgid) -> its runtime (enum ember_runtime), whose map holds its row. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_INTERP_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u32);
} interp_procs SEC(".maps");

enum interp_walk_state {
	INTERP_OFF = 0,   /* no runtime (or its frames are done with) */
	INTERP_UNSTARTED, /* the first frame is found at the first interpreter loop's frame */
	INTERP_ON,        /* the cursor is valid */
};

/* What the dispatch asks of a walker; pc is the native frame's (INTERP_IN_LOOP). */
enum interp_op {
	INTERP_LOAD,    /* copy the process's row into the scratch: 1, or 0 without one */
	INTERP_IN_LOOP, /* 1 when pc lies in the interpreter loop */
	INTERP_FIRST,   /* the thread's innermost frame (the first cursor), 0 without one */
	INTERP_STEP,    /* record the frame at the cursor (or pass it), move the cursor: 0 */
	/* A runtime whose code has no unwind tables (JIT code): when st's pc is in it, record
	 * the frame there and step st past it (0 to go on, 1 to stop); else -1 (as a __u64). */
	INTERP_UNWIND,
};

/* Adds two words to the sample's user frames; false when they do not fit. */
static __always_inline bool interp_push(struct sample_scratch *s, __u64 idx, __u64 w0, __u64 w1)
{
	if (idx >= EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS - 1)
		return false;
	/* One register, checked where it is used (a 32-bit index would be re-extended). */
	barrier_var(idx);
	s->frames[idx] = w0;
	s->frames[idx + 1] = w1;
	return true;
}

/* Records a frame of the walking runtime: 56 bits of w0 under its tag, then w1, at the
 * sample's user words from base on. */
static __always_inline bool interp_frame_at(__u32 base, struct sample_scratch *s, __u64 w0,
                                            __u64 w1)
{
	__u64 tag = EMBER_INTERP_TAG_FRAME(s->interp_walk.runtime & 0xf);

	if (!interp_push(s, (__u64)base + s->uw_words,
	                 tag << EMBER_INTERP_TAG_SHIFT | (w0 & EMBER_INTERP_PAYLOAD_MASK), w1))
		return false;
	s->uw_words += 2;
	s->interp_walk.frames++;
	return true;
}

static __always_inline bool interp_frame(struct ember_uw_state *st, struct sample_scratch *s,
                                         __u64 w0, __u64 w1)
{
	return interp_frame_at(st->base, s, w0, w1);
}

/* Ends the runtime's frames with a marker (enum ember_interp_marker); native unwinding goes
 * on. Returns 0, for the unwinder's loop. */
static __always_inline long interp_stop(struct ember_uw_state *st, struct sample_scratch *s,
                                        __u32 reason)
{
	__u64 tag = EMBER_INTERP_TAG_MARKER(s->interp_walk.runtime & 0xf);

	if (interp_push(s, (__u64)st->base + s->uw_words, tag << EMBER_INTERP_TAG_SHIFT | reason,
	                0))
		s->uw_words += 2;
	s->interp_walk.state = INTERP_OFF;
	s->interp_walk.pending = 0;
	return 0;
}

/* The 8 or 4 bytes at off of a walker's window of size bytes (a constant once inlined, which
 * bounds the read for the verifier); 0 past its end. */
static __always_inline __u64 interp_win_u64(const __u8 *win, __u32 size, __u32 off)
{
	if (off > size - 8)
		return 0;
	return *(const __u64 *)(win + off);
}

static __always_inline __u32 interp_win_u32(const __u8 *win, __u32 size, __u32 off)
{
	if (off > size - 4)
		return 0;
	return *(const __u32 *)(win + off);
}

/* Reads len bytes at addr into a walker's window of size bytes: 0, or an error (len past the
 * window, no address, memory not there). */
static __always_inline long interp_win_read(__u8 *win, __u32 size, __u32 len, __u64 addr)
{
	if (len > size || !addr)
		return -1;
	return bpf_probe_read_user(win, len, (const void *)addr);
}

/* The value of glibc's pthread key whose number is the u32 at key_addr, in the current
 * thread (slot k at thread pointer + tsd_offset + 16 * k, for the first nkeys keys); 0. */
static __always_inline __u64 interp_pthread_value(__u64 key_addr, __u64 tsd_offset, __u32 nkeys)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase), value = 0;
	__u32 key = 0;

	if (bpf_probe_read_user(&key, sizeof(key), (const void *)key_addr) || key >= nkeys ||
	    bpf_probe_read_user(&value, sizeof(value),
	                        (const void *)(fsbase + tsd_offset + 16ull * key)))
		return 0;
	return value;
}

/* The walkers, one per runtime. */
#include "python.bpf.h"
#include "ruby.bpf.h"
#include "php.bpf.h"
#include "perl.bpf.h"
#include "jvm.bpf.h"
#include "v8.bpf.h"

/*
 * Each runtime's walker behind a global function: the verifier checks it once, on its
 * own, instead of once per path of the unwinder's step that reaches it (which took it
 * through 165,000 instructions in 0.3 s at every start; 54,000 this way). The walker
 * finds the sample's scratch again from st's slot.
 */
#define INTERP_GLOBAL_WALKER(name, walker)                                                         \
	__attribute__((noinline)) __u64 name(__u32 op, struct ember_uw_state *st, __u64 pc)        \
	{                                                                                          \
		struct sample_scratch *s;                                                          \
                                                                                                   \
		/* A walker may not read them: clang would then leave them unset at a call,        \
		 * which the verifier refuses for a global function's arguments. */                \
		barrier_var(op);                                                                   \
		barrier_var(pc);                                                                   \
		if (!st)                                                                           \
			return 0;                                                                  \
		s = bpf_map_lookup_elem(&scratch, &st->slot);                                      \
		if (!s)                                                                            \
			return 0;                                                                  \
		return walker((enum interp_op)op, st, s, pc);                                      \
	}

INTERP_GLOBAL_WALKER(ember_py_walk, py_walker)
INTERP_GLOBAL_WALKER(ember_rb_walk, rb_walker)
INTERP_GLOBAL_WALKER(ember_php_walk, php_walker)
INTERP_GLOBAL_WALKER(ember_perl_walk, perl_walker)
INTERP_GLOBAL_WALKER(ember_jvm_walk, jvm_walker)
INTERP_GLOBAL_WALKER(ember_v8_walk, v8_walker)

/* The one switch: the process's runtime's walker does op. */
static __always_inline __u64 interp_call(enum interp_op op, struct ember_uw_state *st,
                                         struct sample_scratch *s, __u64 pc)
{
	switch (s->interp_walk.runtime) {
	case EMBER_RUNTIME_PYTHON:
		return ember_py_walk(op, st, pc);
	case EMBER_RUNTIME_RUBY:
		return ember_rb_walk(op, st, pc);
	case EMBER_RUNTIME_PHP:
		return ember_php_walk(op, st, pc);
	case EMBER_RUNTIME_PERL:
		return ember_perl_walk(op, st, pc);
	case EMBER_RUNTIME_JVM:
		return ember_jvm_walk(op, st, pc);
	case EMBER_RUNTIME_V8:
		return ember_v8_walk(op, st, pc);
	}
	return 0;
}

/* At the start of a sample's user unwinding: which runtime, if any, the process has. */
static __always_inline void interp_walk_init(struct ember_uw_state *st, struct sample_scratch *s)
{
	const __u32 *runtime = bpf_map_lookup_elem(&interp_procs, &st->tgid);

	__builtin_memset(&s->interp_walk, 0, sizeof(s->interp_walk));
	if (!runtime || *runtime >= EMBER_RUNTIME_MAX)
		return;
	s->interp_walk.runtime = *runtime;
	if (interp_call(INTERP_LOAD, st, s, 0))
		s->interp_walk.state = INTERP_UNSTARTED;
}

/* Before the native unwinder looks pc up: a runtime whose code has no unwind tables (JIT
 * code) records the frame there and steps past it itself. -1 when pc is not such code
 * (native unwinding goes on); 0 to go on; 1 to stop. */
static __always_inline long interp_unwind(struct ember_uw_state *st, struct sample_scratch *s)
{
	if (s->interp_walk.state == INTERP_OFF)
		return -1;
	return (long)interp_call(INTERP_UNWIND, st, s, st->pc);
}

/*
 * Before a native frame at pc is recorded: true when the runtime's frames go
 * first (s->interp_walk.pending is then set and the next steps record them).
 */
static __always_inline bool interp_before_native(struct ember_uw_state *st,
                                                 struct sample_scratch *s, __u64 pc)
{
	struct ember_interp_walk *w = &s->interp_walk;

	if (w->state == INTERP_OFF || w->at_pc || !interp_call(INTERP_IN_LOOP, st, s, pc))
		return false;
	w->at_pc = 1;
	if (w->state == INTERP_UNSTARTED) {
		w->cursor = interp_call(INTERP_FIRST, st, s, pc);
		w->state = w->cursor ? INTERP_ON : INTERP_OFF;
		if (w->cursor)
			st->flags |= EMBER_STACK_INTERP;
	}
	w->pending = w->state == INTERP_ON && w->cursor;
	return w->pending;
}

/* Records the runtime's frame at the cursor, while pending; returns 0 to go on. */
static __always_inline long interp_step(struct ember_uw_state *st, struct sample_scratch *s)
{
	if (!s->interp_walk.cursor) {
		s->interp_walk.pending = 0;
		return 0;
	}
	if (s->interp_walk.frames >= EMBER_INTERP_MAX_FRAMES)
		return interp_stop(st, s, EMBER_INTERP_MARK_TRUNCATED);
	return (long)interp_call(INTERP_STEP, st, s, 0);
}

#endif
