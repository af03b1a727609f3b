/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The V8 frame walker, behind the interpreters' dispatch (interp.bpf.h) in
 * the user-stack unwinder (unwind.bpf.h, x86-64). For a process with a row in
 * v8_procs, a pc in one of its ranges (V8's builtins, their copy, the code
 * range) is the walker's: it reads the frame at rbp, records it (v8.h) and
 * steps through rbp to the caller, one frame per step of the unwinder's loop,
 * until the pc is native again.
 *
 * Which frame it is: a Smi in the context slot is the marker of a frame of
 * V8's own (its pc is recorded, as a native frame); else the function slot
 * holds a JSFunction, whose SharedFunctionInfo must have that type. A
 * BytecodeArray and a Smi offset in the frame, with the pc in the builtins,
 * make it interpreted; a pc inside the function's current Code, compiled.
 * A frame whose pc was in the code range but whose rbp does not lead up the
 * stack ends the walk with a marker.
 */
#ifndef EMBER_BPF_V8_BPF_H
#define EMBER_BPF_V8_BPF_H

#include "v8.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_INTERP_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct ember_v8_proc);
} v8_procs SEC(".maps");

#define V8_SLOTS     10 /* words of a frame read: rbp - 64 to rbp + 16 */
#define V8_SLOT_BASE 64 /* bytes below rbp where they start */
#define V8_TAG_MASK  3ull
#define V8_HEAP_TAG  1ull

/* The frame being stepped: its registers in, its caller's out. */
struct v8_regs {
	__u64 pc, sp, fp, r9;
	__u32 base;   /* the sample's user words start here */
	__u8 exact;   /* pc is where execution stopped (the innermost frame) */
	__u8 r9_live; /* r9 is the interpreter's yet: only V8's own frames are above */
};

/* The walker's part of the sample's scratch: the row, the registers and the read windows. */
struct v8_scratch {
	struct ember_v8_proc row;
	struct v8_regs regs;
	__u64 slots[V8_SLOTS];
	__u8 fn[EMBER_V8_WINDOW];
	__u8 obj[EMBER_V8_WINDOW];
};

_Static_assert(sizeof(struct v8_scratch) <= EMBER_INTERP_SCRATCH_BYTES, "fits the scratch");

static __always_inline struct v8_scratch *v8_scratch(struct sample_scratch *s)
{
	return (struct v8_scratch *)s->interp;
}

/* The range of the row holding pc: its index, or EMBER_V8_RANGES. */
static __always_inline __u32 v8_range_of(const struct ember_v8_proc *r, __u64 pc)
{
	for (__u32 i = 0; i < EMBER_V8_RANGES; i++)
		if (pc >= r->code_start[i] && pc < r->code_end[i])
			return i;
	return EMBER_V8_RANGES;
}

/* The frame slot at off bytes from rbp (negative: below it); 0 outside what was read. */
static __always_inline __u64 v8_slot(const struct v8_scratch *vs, __s32 off)
{
	__u32 i;

	if (off < -V8_SLOT_BASE || off >= 16)
		return 0;
	i = (__u32)(off + V8_SLOT_BASE) >> 3;
	if (i >= V8_SLOTS)
		return 0;
	return vs->slots[i];
}

static __always_inline bool v8_is_object(__u64 tagged)
{
	return (tagged & V8_TAG_MASK) == V8_HEAP_TAG && tagged < EMBER_INTERP_USER_LIMIT;
}

static __always_inline bool v8_is_smi(__u64 tagged)
{
	return !(tagged & 1);
}

/* The instance type of the object at tagged (its Map's), or 0xffffffff. */
static __always_inline __u32 v8_type_of(const struct ember_v8_proc *r, __u64 tagged)
{
	__u64 map = 0;
	__u16 type = 0;

	if (!v8_is_object(tagged) ||
	    bpf_probe_read_user(&map, sizeof(map), (const void *)(tagged - V8_HEAP_TAG)) ||
	    !v8_is_object(map) ||
	    bpf_probe_read_user(&type, sizeof(type),
	                        (const void *)(map - V8_HEAP_TAG + r->map_instance_type)))
		return 0xffffffffu;
	return type;
}

/* Records a native pc among the sample's user words (a frame of V8's own). */
static __always_inline bool v8_native(struct sample_scratch *s, __u32 base, __u64 pc)
{
	__u64 idx = (__u64)base + s->uw_words;

	if (s->uw_native >= EMBER_MAX_USTACK || idx >= EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS)
		return false;
	barrier_var(idx);
	s->frames[idx] = pc;
	s->uw_words++;
	s->uw_native++;
	return true;
}

/* A JavaScript frame, its JSFunction at fn (tagged): recorded as v8.h says. */
static __always_inline bool v8_js(struct sample_scratch *s, struct v8_scratch *vs, __u64 fn,
                                  __u32 range)
{
	const struct ember_v8_proc *r = &vs->row;
	struct v8_regs *st = &vs->regs;
	__u64 sfi, ba, off, code, start, pc, at, sum, ret = 0, len = 0;
	__u32 size, kind;
	bool call;

	if (bpf_probe_read_user(vs->fn, EMBER_V8_WINDOW, (const void *)(fn - V8_HEAP_TAG)))
		return false;
	sfi = interp_win_u64(vs->fn, EMBER_V8_WINDOW, r->fn_shared);
	if (v8_type_of(r, sfi) != r->type_sfi ||
	    bpf_probe_read_user(vs->obj, EMBER_V8_WINDOW, (const void *)(sfi - V8_HEAP_TAG)))
		return false;
	sfi -= V8_HEAP_TAG;
	sum = ember_interp_checksum(
	    sfi, interp_win_u64(vs->obj, EMBER_V8_WINDOW, r->sfi_name_or_scope_info),
	    interp_win_u64(vs->obj, EMBER_V8_WINDOW, r->sfi_script_or_debug_info));
	/* Interpreted: the frame's own bytecode offset, kept by the interpreter's builtins. */
	ba = v8_slot(vs, r->fp_bytecode_array);
	off = v8_slot(vs, r->fp_bytecode_offset);
	if (range < 2 && v8_is_smi(off) && v8_type_of(r, ba) == r->type_bytecode_array) {
		off >>= 32;
		/* The interpreter keeps the current offset in r9, and writes it to the frame when
		 * it calls out: while only V8's own frames were above this one, r9's is the
		 * current one, if it lies inside the bytecodes. */
		if (st->r9_live && st->r9 >= r->bytecode_data - 1 &&
		    !bpf_probe_read_user(&len, sizeof(len), (const void *)(ba - V8_HEAP_TAG + 8)) &&
		    v8_is_smi(len) && st->r9 - (r->bytecode_data - 1) < (len >> 32))
			off = st->r9;
		return interp_frame_at(st->base, s,
		                       (__u64)EMBER_V8_FRAME_BYTECODE << EMBER_V8_ADDR_BITS | sfi,
		                       off << 32 | sum);
	}
	/* Compiled: the pc inside the function's current code. */
	code = interp_win_u64(vs->fn, EMBER_V8_WINDOW, r->fn_code);
	if (r->dispatch_table) {
		__u64 entry = r->dispatch_table + ((code & 0xffffffffull) >> 8) * 16 + 8;

		code = bpf_probe_read_user(&code, sizeof(code), (const void *)entry)
		           ? 0
		           : (code >> 16) | V8_HEAP_TAG;
	}
	at = st->pc;
	call = !st->exact;
	/* Its Code matters for a pc in the code range, or for a builtin sampled (below). */
	if ((range == 2 || st->exact) && v8_type_of(r, code) == r->type_code &&
	    !bpf_probe_read_user(vs->obj, EMBER_V8_WINDOW, (const void *)(code - V8_HEAP_TAG))) {
		code -= V8_HEAP_TAG;
		start = r->code_start_inline
		            ? code + r->code_instruction_start
		            : interp_win_u64(vs->obj, EMBER_V8_WINDOW, r->code_instruction_start);
		size = interp_win_u32(vs->obj, EMBER_V8_WINDOW, r->code_instruction_size);
		kind = interp_win_u32(vs->obj, EMBER_V8_WINDOW, r->code_flags) >>
		           (r->code_kind_shift & 31) &
		       r->code_kind_mask;
		/* Sampled in a builtin that builds no frame (Sparkplug's *_Baseline ones): the
		 * frame at rbp is its caller's, which stands at the return address on top of the
		 * stack when that lies in the caller's code. The builtin is recorded above it. */
		if (range < 2 && st->exact &&
		    !bpf_probe_read_user(&ret, sizeof(ret), (const void *)st->sp) &&
		    ret - 1 - start < size) {
			v8_native(s, st->base, st->pc);
			at = ret;
			call = 1;
			range = v8_range_of(r, at);
		}
		pc = call ? at - 1 : at;
		if (range == 2 && pc >= start && pc - start < size && kind != r->code_kind_baseline)
			return interp_frame_at(
			    st->base, s, (__u64)EMBER_V8_FRAME_CODE << EMBER_V8_ADDR_BITS | code,
			    (at - start) << 32 | ember_interp_checksum(code, start, sfi));
	}
	/* In compiled code that is not the function's current (compiled on stack replacement,
	 * or since replaced), or in baseline code: where, for the symbolizer to find that
	 * code. */
	pc = range == 2 ? at - r->code_start[2] + 1 : 0;
	return interp_frame_at(st->base, s,
	                       (__u64)EMBER_V8_FRAME_FUNCTION << EMBER_V8_ADDR_BITS | sfi,
	                       (pc > 0xffffffffull ? 0 : pc) << 32 | sum);
}

/* Ends the JavaScript frames with a marker (the walk cannot go on). */
static __always_inline void v8_stop(struct sample_scratch *s, __u32 base, __u32 reason)
{
	__u64 tag = EMBER_INTERP_TAG_MARKER(EMBER_RUNTIME_V8);

	if (interp_push(s, (__u64)base + s->uw_words, tag << EMBER_INTERP_TAG_SHIFT | reason, 0))
		s->uw_words += 2;
	s->interp_walk.state = INTERP_OFF;
}

/*
 * The frame at the scratch's registers (slot's), when its pc is in one of the ranges:
 * recorded at the sample's user words, the registers stepped to its caller's. 1: not in a
 * range; 0: stepped; -1: the walk cannot go on, or EMBER_INTERP_MAX_FRAMES were recorded
 * (-2), a marker recorded.
 *
 * A global function: the verifier checks it once, on its own.
 */
__attribute__((noinline)) long ember_v8_unwind(__u32 slot)
{
	struct sample_scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	struct v8_scratch *vs;
	struct v8_regs *st;
	__u64 marker, fn;
	__u32 range;
	bool ok;

	if (!s)
		return -1;
	vs = v8_scratch(s);
	st = &vs->regs;
	range = v8_range_of(&vs->row, st->pc);
	if (range >= EMBER_V8_RANGES) {
		st->r9_live = 0; /* native code runs above what comes next */
		return 1;
	}
	if (s->interp_walk.frames >= EMBER_INTERP_MAX_FRAMES) {
		v8_stop(s, st->base, EMBER_INTERP_MARK_TRUNCATED);
		return -2;
	}
	if (st->fp < st->sp || st->fp - st->sp > EMBER_V8_MAX_FRAME || (st->fp & 7) ||
	    bpf_probe_read_user(vs->slots, sizeof(vs->slots),
	                        (const void *)(st->fp - V8_SLOT_BASE))) {
		v8_stop(s, st->base, EMBER_INTERP_MARK_UNREADABLE);
		return -1;
	}
	marker = v8_slot(vs, vs->row.fp_marker);
	fn = v8_slot(vs, vs->row.fp_function);
	if (!v8_is_smi(marker) && v8_is_object(fn)) {
		ok = v8_js(s, vs, fn, range) || v8_native(s, st->base, st->pc);
		st->r9_live = 0;
	} else {
		ok = v8_native(s, st->base, st->pc);
	}
	if (!ok || !vs->slots[V8_SLOTS - 1] || vs->slots[V8_SLOTS - 2] <= st->fp) {
		v8_stop(s, st->base, EMBER_INTERP_MARK_UNREADABLE);
		return -1;
	}
	st->sp = st->fp + 16;
	st->pc = vs->slots[V8_SLOTS - 1];
	st->fp = vs->slots[V8_SLOTS - 2];
	return 0;
}

/* The unwinder's step for a V8 process: its registers through the scratch and back. -1 when
 * pc is not V8's (native unwinding goes on); 0 to go on; 1 to stop. */
static __always_inline long v8_unwind(struct ember_uw_state *st, struct sample_scratch *s)
{
	struct v8_regs *r = &v8_scratch(s)->regs;
	long got;

	r->pc = st->pc;
	r->sp = st->sp;
	r->fp = st->fp;
	r->r9 = st->r9;
	r->base = st->base;
	r->exact = st->exact;
	if (st->exact)
		r->r9_live = 1;
	got = ember_v8_unwind(st->slot);
	if (got > 0)
		return -1;
	st->flags |= EMBER_STACK_INTERP;
	if (got < 0) {
		st->stop = got == -2 ? EMBER_UNWIND_STOP_DEPTH : EMBER_UNWIND_STOP_BAD_FRAME;
		return 1;
	}
	st->pc = r->pc;
	st->sp = r->sp;
	st->fp = r->fp;
	st->exact = 0;
	st->bx_known = 0;
	return 0;
}

static __always_inline __u64 v8_walker(enum interp_op op, struct ember_uw_state *st,
                                       struct sample_scratch *s, __u64 pc)
{
	struct v8_scratch *vs = v8_scratch(s);
	const struct ember_v8_proc *row;

	switch (op) {
	case INTERP_LOAD:
		row = bpf_map_lookup_elem(&v8_procs, &st->tgid);
		if (row)
			__builtin_memcpy(&vs->row, row, sizeof(*row));
		return row != NULL;
	case INTERP_UNWIND:
		return (__u64)v8_unwind(st, s);
	default:
		return 0;
	}
}

#endif
