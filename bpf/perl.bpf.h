/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The Perl frame walker, behind the interpreters' dispatch (interp.bpf.h) in
 * the user-stack unwinder (unwind.bpf.h, x86-64). For a process with a row
 * in perl_procs, every call of the interpreter loop (Perl_runops_standard)
 * first gets the Perl frames it runs, innermost first, one per step of the
 * unwinder's loop; then the native frame is recorded and native unwinding
 * goes on.
 *
 * The thread's interpreter is the value of the pthread key PL_thr_key (each
 * ithread has its own). Its context stack is a chain of stackinfos (a new
 * one for sort, MULTICALL, signal handlers, DESTROY, tie and overload
 * calls), innermost PL_curstackinfo; in each, si_cxsubix indexes the
 * innermost sub, format or eval entry and each such entry's old_cxsubix the
 * next one out, so the walk visits frames only, never loops or blocks.
 *
 * Which frames a call of the loop runs: a call from C (call_sv, MULTICALL,
 * sort's named sub) pushes a sub whose return op (retop) is NULL, and the
 * code run in a new stackinfo (sort's block, whose entry is no sub) is that
 * call's too. So the loop's part ends after a sub or format with a NULL
 * retop, or at the end of a stackinfo that has entries below the last frame
 * recorded; the next call of the loop resumes there. The last frame is the
 * main program's (the end of the outermost stackinfo), with its line.
 * Per frame: its context entry, the COP it runs (its line) and, for a sub,
 * its CV's head and body (the checksum). A frame that cannot be read ends
 * the Perl part with a marker; native unwinding goes on.
 */
#ifndef EMBER_BPF_PERL_BPF_H
#define EMBER_BPF_PERL_BPF_H

#include "perl.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_INTERP_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct ember_perl_proc);
} perl_procs SEC(".maps");

/* The walker's part of the sample's scratch: the row, the walk's place and the windows. */
struct perl_scratch {
	struct ember_perl_proc row;
	__u64 cxstack, prev; /* the current stackinfo's */
	__u64 cop;           /* the COP the next frame runs */
	__s32 ix;            /* the next frame's entry in the stackinfo; < 0: none left */
	__s32 low;           /* the lowest entry recorded in the stackinfo, or its top + 1 */
	__u8 si[EMBER_PERL_WINDOW];
	__u8 cx[EMBER_PERL_WINDOW];
	__u8 cop_win[EMBER_PERL_WINDOW];
	__u8 cv[EMBER_PERL_WINDOW];
};

_Static_assert(sizeof(struct perl_scratch) <= EMBER_INTERP_SCRATCH_BYTES, "fits the scratch");

static __always_inline struct perl_scratch *perl_scratch(struct sample_scratch *s)
{
	return (struct perl_scratch *)s->interp;
}

/* Fields of the walker\'s windows, and reads into them (interp.bpf.h): bounded, 0 past. */
#define pl_u64(win, off) interp_win_u64(win, EMBER_PERL_WINDOW, off)
#define pl_u32(win, off) interp_win_u32(win, EMBER_PERL_WINDOW, off)

#define pl_read(win, len, addr) interp_win_read(win, EMBER_PERL_WINDOW, len, addr)

/* Enters the stackinfo at si: its context stack and innermost frame. 0 or an error. */
static __always_inline long pl_enter_si(struct perl_scratch *ps, __u64 si)
{
	const struct ember_perl_proc *p = &ps->row;
	__s32 top;

	if (pl_read(ps->si, p->si_read, si))
		return -1;
	ps->cxstack = pl_u64(ps->si, p->si_cxstack);
	ps->prev = pl_u64(ps->si, p->si_prev);
	top = (__s32)pl_u32(ps->si, p->si_cxix);
	ps->ix = (__s32)pl_u32(ps->si, p->si_cxsubix);
	if (top >= EMBER_PERL_MAX_CX || ps->ix > top)
		return -1;
	ps->low = top + 1;
	return 0;
}

/* The thread's innermost stackinfo (the first cursor), its COP noted; 0 without one. */
static __always_inline __u64 pl_first(struct perl_scratch *ps)
{
	const struct ember_perl_proc *p = &ps->row;
	__u64 interp = interp_pthread_value(p->thr_key, p->tsd_offset, EMBER_PERL_MAX_KEYS), si = 0;

	ps->cop = 0;
	if (!interp ||
	    bpf_probe_read_user(&si, sizeof(si), (const void *)(interp + p->i_curstackinfo)) ||
	    bpf_probe_read_user(&ps->cop, sizeof(ps->cop), (const void *)(interp + p->i_curcop)) ||
	    pl_enter_si(ps, si))
		return 0;
	return si;
}

/* Records a frame of kind at addr running ps->cop: its line and checksum. */
static __always_inline bool pl_record(struct ember_uw_state *st, struct sample_scratch *s,
                                      __u32 kind, __u64 addr)
{
	struct perl_scratch *ps = perl_scratch(s);
	const struct ember_perl_proc *p = &ps->row;
	__u64 line = 0, csum, body = 0;

	if (!pl_read(ps->cop_win, p->cop_read, ps->cop))
		line = pl_u32(ps->cop_win, p->cop_line);
	else
		__builtin_memset(ps->cop_win, 0, sizeof(ps->cop_win));
	if (kind == EMBER_PERL_FRAME_SUB || kind == EMBER_PERL_FRAME_FORMAT) {
		/* A CV's head starts with its body pointer (sv_any). */
		if (bpf_probe_read_user(&body, sizeof(body), (const void *)addr) ||
		    pl_read(ps->cv, p->cv_read, body))
			return false;
		csum = ember_interp_checksum(body, pl_u64(ps->cv, p->cv_gv),
		                             pl_u64(ps->cv, p->cv_file));
	} else {
		addr = ps->cop;
		csum = ember_interp_checksum(pl_u64(ps->cop_win, p->cop_file),
		                             pl_u32(ps->cop_win, p->cop_stash), kind);
	}
	return interp_frame(st, s, (__u64)kind << EMBER_PERL_ADDR_BITS | addr, line << 32 | csum);
}

/* The end of a stackinfo: the main program's frame at the outermost one, else the next
 * stackinfo out; the loop's part ends there when this one has entries below its frames. */
static __always_inline long pl_next_si(struct ember_uw_state *st, struct sample_scratch *s)
{
	struct perl_scratch *ps = perl_scratch(s);
	bool ends = ps->low > 0;

	if (!ps->prev) {
		s->interp_walk.cursor = 0;
		if (!pl_record(st, s, EMBER_PERL_FRAME_MAIN, 0))
			return interp_stop(st, s, EMBER_INTERP_MARK_TRUNCATED);
		s->interp_walk.pending = 0;
		return 0;
	}
	s->interp_walk.cursor = ps->prev;
	if (pl_enter_si(ps, ps->prev))
		return interp_stop(st, s, EMBER_INTERP_MARK_UNREADABLE);
	if (ends)
		s->interp_walk.pending = 0;
	return 0;
}

/* Records the frame at the cursor, or moves to the next stackinfo; returns 0 to go on. */
static __always_inline long pl_step(struct ember_uw_state *st, struct sample_scratch *s)
{
	struct perl_scratch *ps = perl_scratch(s);
	const struct ember_perl_proc *p = &ps->row;
	__u32 type, kind;
	__s32 next;

	if (ps->ix < 0)
		return pl_next_si(st, s);
	if (pl_read(ps->cx, p->cx_read, ps->cxstack + (__u64)ps->ix * p->cx_size))
		return interp_stop(st, s, EMBER_INTERP_MARK_UNREADABLE);
	type = ps->cx[p->cx_type % EMBER_PERL_WINDOW] & 0xf;
	kind = type == EMBER_PERL_CXT_SUB      ? EMBER_PERL_FRAME_SUB
	       : type == EMBER_PERL_CXT_FORMAT ? EMBER_PERL_FRAME_FORMAT
	       : type == EMBER_PERL_CXT_EVAL   ? EMBER_PERL_FRAME_EVAL
	                                       : 0;
	if (!kind)
		return interp_stop(st, s, EMBER_INTERP_MARK_UNREADABLE);
	if (!pl_record(st, s, kind, pl_u64(ps->cx, p->cx_cv)))
		return interp_stop(st, s, EMBER_INTERP_MARK_UNREADABLE);
	ps->low = ps->ix;
	ps->cop = pl_u64(ps->cx, p->cx_oldcop);
	next = (__s32)pl_u32(ps->cx, p->cx_subix);
	/* Outwards only: a cycle in hostile memory ends at the stackinfo's bottom. */
	ps->ix = next < ps->ix ? next : -1;
	/* Called from C: this call of the loop started with this frame. */
	if (kind != EMBER_PERL_FRAME_EVAL && !pl_u64(ps->cx, p->cx_retop))
		s->interp_walk.pending = 0;
	return 0;
}

/* The walker's side of the dispatch (enum interp_op). */
static __always_inline __u64 perl_walker(enum interp_op op, struct ember_uw_state *st,
                                         struct sample_scratch *s, __u64 pc)
{
	struct perl_scratch *ps = perl_scratch(s);
	const struct ember_perl_proc *row;

	switch (op) {
	case INTERP_LOAD:
		row = bpf_map_lookup_elem(&perl_procs, &st->tgid);
		if (row)
			__builtin_memcpy(&ps->row, row, sizeof(*row));
		return row != NULL;
	case INTERP_IN_LOOP:
		return pc >= ps->row.loop_start && pc < ps->row.loop_end;
	case INTERP_FIRST:
		return pl_first(ps);
	case INTERP_STEP:
		return pl_step(st, s);
	case INTERP_UNWIND: /* its code has tables */
		return (__u64)-1;
	}
	return 0;
}

#endif
