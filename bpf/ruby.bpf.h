/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The Ruby frame walker, behind the interpreters' dispatch (interp.bpf.h)
 * in the user-stack unwinder (unwind.bpf.h, x86-64). For a process with a
 * row in rb_procs, every call of the interpreter loop first gets the Ruby
 * frames it runs, innermost first, one per step of the unwinder's loop;
 * then the native frame is recorded and native unwinding goes on. A C
 * function called as a method (Integer#times) is a control frame of the
 * loop call that called it, so its native frames come before (below, in a
 * flame graph) its name, and a block it yields to comes before those.
 *
 * The loop is two functions: vm_exec_core runs the instructions and its
 * caller rb_vm_exec catches what they throw. One call of the loop has both
 * frames, so the walk starts at vm_exec_core, or at rb_vm_exec when the
 * frame before it was not vm_exec_core (a sample inside rb_vm_exec itself).
 *
 * The execution context is libruby's thread-local ruby_current_ec: through
 * the thread pointer's dynamic thread vector, libruby's module's block (its
 * module id read from the slot the dynamic linker wrote it to: a process
 * sampled while libruby is being loaded has none yet), the variable's offset
 * in it. Per frame: the control frame, its environment's
 * three words, then the iseq and its body (Ruby code) or the method entry
 * (a C function). A frame that cannot be read ends the Ruby part with a
 * marker; native unwinding goes on.
 */
#ifndef EMBER_BPF_RUBY_BPF_H
#define EMBER_BPF_RUBY_BPF_H

#include "ruby.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_INTERP_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct ember_rb_proc);
} rb_procs SEC(".maps");

/* The walker's part of the sample's scratch: the row, the stack's end and the windows. */
struct rb_scratch {
	struct ember_rb_proc row;
	__u64 stack_end;  /* one past the execution context's VM stack */
	__u64 after_core; /* the last native frame asked about was vm_exec_core's */
	__u64 env[3];     /* ep[-2] (method entry or cref), ep[-1], ep[0] (flags) */
	__u8 frame[EMBER_RB_WINDOW];
	__u8 obj[EMBER_RB_WINDOW];
};

_Static_assert(sizeof(struct rb_scratch) <= EMBER_INTERP_SCRATCH_BYTES, "fits the scratch");

static __always_inline struct rb_scratch *rb_scratch(struct sample_scratch *s)
{
	return (struct rb_scratch *)s->interp;
}

/* Fields of the walker\'s windows, and reads into them (interp.bpf.h): bounded, 0 past. */
#define rb_u64(win, off)        interp_win_u64(win, EMBER_RB_WINDOW, off)
#define rb_u32(win, off)        interp_win_u32(win, EMBER_RB_WINDOW, off)
#define rb_read(win, len, addr) interp_win_read(win, EMBER_RB_WINDOW, len, addr)

static __always_inline bool rb_in(const struct ember_rb_proc *p, int i, __u64 pc)
{
	return pc >= p->loop_start[i] && pc < p->loop_end[i];
}

/* The thread's current control frame, through its execution context; 0 without one. */
static __always_inline __u64 rb_first_frame(struct rb_scratch *rs)
{
	const struct ember_rb_proc *p = &rs->row;
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase), modid = 0, dtv = 0, block = 0, ec = 0;
	__u64 stack, size, cfp;

	if (bpf_probe_read_user(&modid, sizeof(modid), (const void *)p->modid_slot) || !modid ||
	    modid >= EMBER_RB_MAX_MODID ||
	    bpf_probe_read_user(&dtv, sizeof(dtv), (const void *)(fsbase + p->dtv_offset)) ||
	    !dtv ||
	    bpf_probe_read_user(&block, sizeof(block),
	                        (const void *)(dtv + (modid << (p->dtv_shift & 7)))) ||
	    !block || block == ~0ull ||
	    bpf_probe_read_user(&ec, sizeof(ec), (const void *)(block + p->tls_offset)) ||
	    rb_read(rs->frame, p->ec_read, ec))
		return 0;
	stack = rb_u64(rs->frame, p->ec_vm_stack);
	size = rb_u64(rs->frame, p->ec_vm_stack_size);
	cfp = rb_u64(rs->frame, p->ec_cfp);
	if (size >= EMBER_RB_MAX_STACK || cfp < stack || cfp >= stack + 8 * size || cfp % 8)
		return 0;
	rs->stack_end = stack + 8 * size;
	return cfp;
}

/* The two words of a frame of Ruby code (iseq, pc; its method entry me, or 0); false when
 * the iseq cannot be read. */
static __always_inline bool rb_iseq_words(struct rb_scratch *rs, __u64 iseq, __u64 pc, __u64 me,
                                          __u64 *w)
{
	const struct ember_rb_proc *p = &rs->row;
	__u64 body, encoded, pos;
	__u32 size, type;

	if (rb_read(rs->obj, p->iseq_read, iseq))
		return false;
	body = rb_u64(rs->obj, p->iseq_body);
	if (rb_read(rs->obj, p->body_read, body))
		return false;
	encoded = rb_u64(rs->obj, p->body_encoded);
	size = rb_u32(rs->obj, p->body_size);
	type = rb_u32(rs->obj, p->body_type);
	/* The pc is the next instruction's (each one stores it first): the current is one
	 * before, as rb_profile_frames counts. Out of the body: no line, named all the same. */
	pos = (pc - encoded) / 8;
	if (pc < encoded || pos > size)
		pos = 0xffffffff;
	else if (pos)
		pos--;
	w[0] = me ? (__u64)EMBER_RB_FRAME_METHOD << EMBER_RB_ADDR_BITS | me
	          : (__u64)EMBER_RB_FRAME_ISEQ << EMBER_RB_ADDR_BITS | body;
	w[1] = pos << 32 | ember_interp_checksum(encoded, size | (__u64)type << 32,
	                                         rb_u64(rs->obj, p->body_first_lineno));
	return true;
}

/* Records the control frame at the cursor, or passes it; returns 0 to go on. */
static __always_inline long rb_step(struct ember_uw_state *st, struct sample_scratch *s)
{
	struct rb_scratch *rs = rb_scratch(s);
	const struct ember_rb_proc *p = &rs->row;
	__u64 cfp = s->interp_walk.cursor, pc, iseq, ep, flags, me, w[2] = {0, 0};
	__u32 step = p->cfp_read;

	if (step < 8 || cfp + step > rs->stack_end || rb_read(rs->frame, step, cfp))
		return interp_stop(st, s, EMBER_INTERP_MARK_UNREADABLE);
	pc = rb_u64(rs->frame, p->cfp_pc);
	iseq = rb_u64(rs->frame, p->cfp_iseq);
	ep = rb_u64(rs->frame, p->cfp_ep);
	if (ep < 16 || bpf_probe_read_user(rs->env, sizeof(rs->env), (const void *)(ep - 16)))
		return interp_stop(st, s, EMBER_INTERP_MARK_UNREADABLE);
	me = rs->env[0];
	flags = rs->env[2];
	if (iseq && pc && !(flags & EMBER_RB_FRAME_FLAG_CFRAME)) {
		/* A method's frame: ep[-2] is its method entry (a block's is not). */
		if ((flags & EMBER_RB_FRAME_MAGIC_MASK) != EMBER_RB_FRAME_MAGIC_METHOD)
			me = 0;
		if (!rb_iseq_words(rs, iseq, pc, me, w))
			return interp_stop(st, s, EMBER_INTERP_MARK_UNREADABLE);
	} else if ((flags & EMBER_RB_FRAME_MAGIC_MASK) == EMBER_RB_FRAME_MAGIC_CFUNC) {
		if (rb_read(rs->obj, p->cme_read, me))
			return interp_stop(st, s, EMBER_INTERP_MARK_UNREADABLE);
		w[0] = (__u64)EMBER_RB_FRAME_CFUNC << EMBER_RB_ADDR_BITS | me;
		w[1] = ember_interp_checksum(rb_u64(rs->obj, p->cme_def),
		                             rb_u64(rs->obj, p->cme_called_id),
		                             rb_u64(rs->obj, p->cme_owner));
	}
	/* Other frames (a block given by C, the thread's first dummy frames) are not shown. */
	if (w[0] && !interp_frame(st, s, w[0], w[1]))
		return interp_stop(st, s, EMBER_INTERP_MARK_TRUNCATED);
	s->interp_walk.cursor = cfp + step + step <= rs->stack_end ? cfp + step : 0;
	/* This call of the loop started with this frame: the next call resumes above it. */
	if (flags & EMBER_RB_FRAME_FLAG_FINISH)
		s->interp_walk.pending = 0;
	return 0;
}

/* The walker's side of the dispatch (enum interp_op). */
static __always_inline __u64 rb_walker(enum interp_op op, struct ember_uw_state *st,
                                       struct sample_scratch *s, __u64 pc)
{
	struct rb_scratch *rs = rb_scratch(s);
	const struct ember_rb_proc *row;
	__u64 after_core;

	switch (op) {
	case INTERP_LOAD:
		row = bpf_map_lookup_elem(&rb_procs, &st->tgid);
		if (row)
			__builtin_memcpy(&rs->row, row, sizeof(*row));
		rs->after_core = 0;
		return row != NULL;
	case INTERP_IN_LOOP:
		after_core = rs->after_core;
		rs->after_core = rb_in(&rs->row, 0, pc);
		return rs->after_core || (rb_in(&rs->row, 1, pc) && !after_core);
	case INTERP_FIRST:
		return rb_first_frame(rs);
	case INTERP_STEP:
		return rb_step(st, s);
	case INTERP_UNWIND: /* its code has tables */
		return (__u64)-1;
	}
	return 0;
}

#endif
