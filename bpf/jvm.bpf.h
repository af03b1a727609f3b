/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The HotSpot frame walker, behind the interpreters' dispatch (interp.bpf.h)
 * in the user-stack unwinder (unwind.bpf.h, x86-64). For a process with a
 * row in jvm_procs, a pc in one of its code heaps is the walker's: it finds
 * the code blob holding the pc, records the frame and steps the registers
 * past it, one frame per step of the unwinder's loop, until the pc leaves
 * the heaps and native unwinding goes on.
 *
 * The blob: the heap's segment map leads from the pc's segment back to the
 * first of its block (at most EMBER_JVM_SEGMAP_HOPS steps), the blob follows
 * the block's header; the first bytes of its name say its kind.
 *
 * The step, by kind (the frame layouts of HotSpot's x86-64 port):
 * - interpreted: the Method at fp-3 words, the bcp at fp-8 (r13 for the
 *   innermost frame: the interpreter keeps it there), the caller's sp at
 *   fp-1, its fp at fp, its pc at fp+1;
 * - compiled (C1, C2, a native method's wrapper): the caller's pc and fp
 *   just below sp + frame size; a deoptimized frame's pc (its return address
 *   is the deopt handler) at sp + the nmethod's orig_pc_offset; the
 *   innermost frame may be in its prologue (the frame not built yet: the
 *   return address at sp, or at sp+8 after push rbp) or its epilogue (the
 *   frame popped, before ret or on the return poll);
 * - stubs: through rbp when their frame size is 0 (the call stub, by which
 *   Java is left), else like compiled code; vtable and itable chunks only
 *   hold the return address.
 * A frame that cannot be stepped past ends the walk with a marker.
 */
#ifndef EMBER_BPF_JVM_BPF_H
#define EMBER_BPF_JVM_BPF_H

#include "jvm.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_INTERP_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct ember_jvm_proc);
} jvm_procs SEC(".maps");

#define JVM_CODE_BYTES 32  /* bytes of code looked at in a prologue or around an epilogue */
#define JVM_MIN_BLOB   128 /* bytes of a blob read when the whole window is not there */

/* The frame being stepped: its registers in, its caller's out. */
struct jvm_regs {
	__u64 pc, sp, fp, r13;
	__u32 base; /* the sample's user words start here */
	__u8 exact; /* pc is where execution stopped (the innermost frame) */
};

/* The walker's part of the sample's scratch: the row, the registers and the read windows. */
struct jvm_scratch {
	struct ember_jvm_proc row;
	struct jvm_regs regs;
	__u8 blob[EMBER_JVM_BLOB_WINDOW];
	__u64 words[EMBER_JVM_INTERP_WORDS];
	__u8 code[JVM_CODE_BYTES];
};

_Static_assert(sizeof(struct jvm_scratch) <= EMBER_INTERP_SCRATCH_BYTES, "fits the scratch");

static __always_inline struct jvm_scratch *jvm_scratch(struct sample_scratch *s)
{
	return (struct jvm_scratch *)s->interp;
}

#define jvm_u64(js, off) interp_win_u64((js)->blob, EMBER_JVM_BLOB_WINDOW, off)
#define jvm_u32(js, off) interp_win_u32((js)->blob, EMBER_JVM_BLOB_WINDOW, off)

/* The heap holding pc: its index, or EMBER_JVM_HEAPS. */
static __always_inline __u32 jvm_heap_of(const struct ember_jvm_proc *r, __u64 pc)
{
	for (__u32 i = 0; i < EMBER_JVM_HEAPS; i++)
		if (pc >= r->heap_start[i] && pc < r->heap_end[i])
			return i;
	return EMBER_JVM_HEAPS;
}

/* The code blob holding pc (in heap h), read into the window: its address, or 0. */
static __always_inline __u64 jvm_blob_of(struct jvm_scratch *js, __u32 h, __u64 pc)
{
	const struct ember_jvm_proc *r = &js->row;
	__u32 shift = r->segment_shift & 31;
	__u64 start, seg, segmap, blob;
	__u8 tag = 0xff;

	if (h >= EMBER_JVM_HEAPS)
		return 0;
	start = r->heap_start[h];
	segmap = r->segmap[h];
	seg = (pc - start) >> shift;
	for (int i = 0; i < EMBER_JVM_SEGMAP_HOPS; i++) {
		if (bpf_probe_read_user(&tag, 1, (const void *)(segmap + seg)) || tag == 0xff ||
		    tag > seg)
			return 0;
		if (!tag)
			break;
		seg -= tag;
	}
	if (tag)
		return 0;
	blob = start + (seg << shift) + r->heap_block;
	/* A small blob at the end of what the heap has committed: its header only. */
	if (bpf_probe_read_user(js->blob, EMBER_JVM_BLOB_WINDOW, (const void *)blob) &&
	    bpf_probe_read_user(js->blob, JVM_MIN_BLOB, (const void *)blob))
		return 0;
	return blob;
}

/* Steps past a frame whose caller's pc is at sp' - 8 and fp at sp' - 16. */
static __always_inline long jvm_step_to(struct jvm_regs *st, __u64 next_sp)
{
	__u64 regs[2];

	if (next_sp <= st->sp ||
	    bpf_probe_read_user(regs, sizeof(regs), (const void *)(next_sp - 16)) || !regs[1])
		return -1;
	st->fp = regs[0];
	st->pc = regs[1];
	st->sp = next_sp;
	return 0;
}

/* Steps past a frame that holds only its return address, at sp. */
static __always_inline long jvm_step_pc_only(struct jvm_regs *st)
{
	__u64 ra;

	if (bpf_probe_read_user(&ra, sizeof(ra), (const void *)st->sp) || !ra)
		return -1;
	st->pc = ra;
	st->sp += 8;
	return 0;
}

/* Steps past a frame whose saved rbp is at sp and return address at sp + 8. */
static __always_inline long jvm_step_fp_pc(struct jvm_regs *st)
{
	return jvm_step_to(st, st->sp + 16);
}

static __always_inline long jvm_step_through_fp(struct jvm_regs *st)
{
	if (st->fp < st->sp)
		return -1;
	return jvm_step_to(st, st->fp + 16);
}

/* An interpreted frame: records its Method and bci; steps to its caller. */
static __always_inline long jvm_interpreted(struct jvm_regs *st, struct sample_scratch *s)
{
	struct jvm_scratch *js = jvm_scratch(s);
	const struct ember_jvm_proc *r = &js->row;
	__u64 *w = js->words, method, bcp, cm = 0, bci = EMBER_JVM_NO_BCI;

	if (st->fp < st->sp || st->fp - st->sp > 0x10000 ||
	    bpf_probe_read_user(w, sizeof(js->words), (const void *)(st->fp - 80)))
		return -1;
	method = w[7];
	bcp = st->exact ? st->r13 : w[2];
	if (!method ||
	    bpf_probe_read_user(&cm, sizeof(cm), (const void *)(method + r->method_const_method)))
		return -1;
	if (bcp >= cm + r->const_method_size && bcp - cm - r->const_method_size < 0x10000)
		bci = bcp - cm - r->const_method_size;
	if (!interp_frame_at(
		st->base, s, (__u64)EMBER_JVM_FRAME_INTERPRETED << EMBER_JVM_ADDR_BITS | method,
		bci << 32 | ember_interp_checksum(method, cm, EMBER_JVM_FRAME_INTERPRETED)))
		return -1;
	if (w[9] <= st->sp || !w[11])
		return -1;
	st->sp = w[9];
	st->fp = w[10];
	st->pc = w[11];
	return 0;
}

/* Where `sub $n,%rsp` ends in a prologue that starts at c[q]: `push %rbp` first or not
 * (*push_end then set); -1 when it does not start there. */
static __always_inline int jvm_sub_rsp_end(const __u8 *c, int q, int *push_end)
{
	if (c[q] == 0x55) {
		*push_end = q + 1;
		q++;
	}
	if (c[q] != 0x48 || c[q + 2] != 0xec || (c[q + 1] != 0x83 && c[q + 1] != 0x81))
		return -1;
	return q + (c[q + 1] == 0x83 ? 4 : 7);
}

/*
 * The innermost compiled frame, in its prologue (pc before frame_complete, which from JDK
 * 20 on comes after the nmethod entry barrier): the frame is built once `sub $n,%rsp` ran;
 * before it, only the return address (and after `push %rbp`, the caller's rbp) is on the
 * stack. C1 and C2 start with the stack bang (`mov %eax,-n(%rsp)`, 7 bytes) or without it,
 * then `push %rbp; sub` or `sub; mov %rbp,n(%rsp)`: the sub is looked for at those two
 * places only. -1: not there; 1: stepped; 0: the frame is built.
 */
static __always_inline long jvm_prologue(struct jvm_regs *st, struct jvm_scratch *js, __u64 code,
                                         __u64 off)
{
	int push_end = -1, sub_end;

	if (bpf_probe_read_user(js->code, JVM_CODE_BYTES, (const void *)code))
		return -1;
	sub_end = jvm_sub_rsp_end(js->code, 0, &push_end);
	if (sub_end < 0 && js->code[0] == 0x89 && js->code[1] == 0x84 && js->code[2] == 0x24)
		sub_end = jvm_sub_rsp_end(js->code, 7, &push_end);
	if (sub_end >= 0 && off >= (__u64)sub_end)
		return 0;
	if (push_end >= 0 && off >= (__u64)push_end)
		return jvm_step_fp_pc(st) ? -1 : 1;
	return jvm_step_pc_only(st) ? -1 : 1;
}

/* The innermost compiled frame, in its epilogue: on `pop %rbp` (the frame freed), or after
 * it, on the return poll (`cmp` of rsp with the thread's watermark, `ja`) or on `ret`.
 * -1: not there; 1: stepped; 0: not in an epilogue. */
static __always_inline long jvm_epilogue(struct jvm_regs *st, struct jvm_scratch *js)
{
	const __u8 *c = js->code;
	const int p = 12; /* the byte at pc */

	if (bpf_probe_read_user(js->code, JVM_CODE_BYTES, (const void *)(st->pc - p)))
		return 0;
	if (c[p] == 0xc3)
		return jvm_step_pc_only(st) ? -1 : 1;
	if (c[p] == 0x5d)
		return jvm_step_fp_pc(st) ? -1 : 1;
	if (c[p - 1] == 0x5d && (c[p] == 0xc3 || (c[p] == 0x49 && c[p + 1] == 0x3b)))
		return jvm_step_pc_only(st) ? -1 : 1;
	if (c[p] == 0x0f && c[p + 1] == 0x87 &&
	    ((c[p - 5] == 0x5d && c[p - 4] == 0x49 && c[p - 3] == 0x3b) ||
	     (c[p - 8] == 0x5d && c[p - 7] == 0x49 && c[p - 6] == 0x3b)))
		return jvm_step_pc_only(st) ? -1 : 1;
	return 0;
}

/* Code compiled by C1 or C2, or a native method's wrapper: records the nmethod and the pc's
 * offset in its code; steps to its caller. */
static __always_inline long jvm_compiled(struct jvm_regs *st, struct sample_scratch *s, __u64 blob,
                                         __u32 kind)
{
	struct jvm_scratch *js = jvm_scratch(s);
	const struct ember_jvm_proc *r = &js->row;
	__u64 code, deopt, off, pc = st->pc;
	__s64 size = (__s32)jvm_u32(js, r->blob_frame_size), complete;
	long done;

	code = r->code_is_offset ? blob + (__s64)(__s32)jvm_u32(js, r->blob_code_begin)
	                         : jvm_u64(js, r->blob_code_begin);
	deopt = r->deopt_is_offset ? blob + (__s64)(__s32)jvm_u32(js, r->nm_deopt)
	                           : jvm_u64(js, r->nm_deopt);
	complete = r->complete_width == 2 ? (__s16)jvm_u32(js, r->blob_frame_complete)
	                                  : (__s32)jvm_u32(js, r->blob_frame_complete);
	/* A deoptimized frame returns to the deopt handler; its own pc was saved in it. */
	if (pc == deopt &&
	    bpf_probe_read_user(&pc, sizeof(pc),
	                        (const void *)(st->sp + jvm_u32(js, r->nm_orig_pc_offset))))
		return -1;
	if (pc < code || size <= 0 || size > 0x10000)
		return -1;
	off = pc - code;
	if (!interp_frame_at(st->base, s, (__u64)kind << EMBER_JVM_ADDR_BITS | blob,
	                     off << 32 | jvm_u32(js, r->nm_compile_id)))
		return -1;
	if (st->exact) {
		done = complete > 0 && off < (__u64)complete ? jvm_prologue(st, js, code, off)
		                                             : jvm_epilogue(st, js);
		if (done)
			return done < 0 ? -1 : 0;
	}
	return jvm_step_to(st, st->sp + (__u64)size * 8);
}

/* A stub: records the blob and the pc's offset in it; steps through rbp (frame size 0: the
 * call stub), the frame size, or only the return address (vtable and itable chunks). */
static __always_inline long jvm_stub(struct jvm_regs *st, struct sample_scratch *s, __u64 blob,
                                     __u32 name)
{
	struct jvm_scratch *js = jvm_scratch(s);
	__s64 size = (__s32)jvm_u32(js, js->row.blob_frame_size);

	if (!interp_frame_at(st->base, s, (__u64)EMBER_JVM_FRAME_STUB << EMBER_JVM_ADDR_BITS | blob,
	                     (st->pc - blob) << 32 | name))
		return -1;
	if (name == EMBER_JVM_NAME_VTABLE || name == EMBER_JVM_NAME_ITABLE)
		return jvm_step_pc_only(st);
	if (size <= 0)
		return jvm_step_through_fp(st);
	if (size > 0x10000)
		return -1;
	return jvm_step_to(st, st->sp + (__u64)size * 8);
}

/* Ends the Java frames with a marker (the walk cannot go on): interp_stop's, in here. */
static __always_inline void jvm_stop(struct sample_scratch *s, __u32 base, __u32 reason)
{
	__u64 tag = EMBER_INTERP_TAG_MARKER(EMBER_RUNTIME_JVM);

	if (interp_push(s, (__u64)base + s->uw_words, tag << EMBER_INTERP_TAG_SHIFT | reason, 0))
		s->uw_words += 2;
	s->interp_walk.state = INTERP_OFF;
}

/* Where the frame at the scratch's registers is: 1 when its pc is in no heap. */
static __always_inline long jvm_frame(struct sample_scratch *s, struct jvm_scratch *js)
{
	struct jvm_regs *st = &js->regs;
	__u32 heap = jvm_heap_of(&js->row, st->pc), name = 0;
	__u64 blob, name_at;

	if (heap >= EMBER_JVM_HEAPS)
		return 1;
	blob = jvm_blob_of(js, heap, st->pc);
	if (!blob)
		return -1;
	name_at = jvm_u64(js, js->row.blob_name);
	if (!name_at || bpf_probe_read_user(&name, sizeof(name), (const void *)name_at) || !name)
		return -1;
	if (name == EMBER_JVM_NAME_INTERPRETER)
		return jvm_interpreted(st, s);
	if (name == EMBER_JVM_NAME_NMETHOD)
		return jvm_compiled(st, s, blob, EMBER_JVM_FRAME_COMPILED);
	if (name == EMBER_JVM_NAME_NATIVE)
		return jvm_compiled(st, s, blob, EMBER_JVM_FRAME_NATIVE);
	return jvm_stub(st, s, blob, name);
}

/*
 * The frame at the scratch's registers (slot's), when its pc is in one of the heaps:
 * recorded at the sample's user words, the registers stepped to its caller's. 1: not in a
 * heap; 0: stepped; -1: the walk cannot go on, or EMBER_INTERP_MAX_FRAMES were recorded
 * (-2), a marker recorded.
 *
 * A global function: the verifier checks it once, on its own, rather than along every path
 * of the unwinder's loop that leads to it.
 */
__attribute__((noinline)) long ember_jvm_unwind(__u32 slot)
{
	struct sample_scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	struct jvm_scratch *js;
	long err;

	if (!s)
		return -1;
	js = jvm_scratch(s);
	if (jvm_heap_of(&js->row, js->regs.pc) >= EMBER_JVM_HEAPS)
		return 1;
	if (s->interp_walk.frames >= EMBER_INTERP_MAX_FRAMES) {
		jvm_stop(s, js->regs.base, EMBER_INTERP_MARK_TRUNCATED);
		return -2;
	}
	err = jvm_frame(s, js);
	if (err < 0)
		jvm_stop(s, js->regs.base, EMBER_INTERP_MARK_UNREADABLE);
	return err < 0 ? -1 : 0;
}

/* The unwinder's step for a JVM process: its registers through the scratch and back. -1
 * when pc is not Java code (native unwinding goes on); 0 to go on; 1 to stop. */
static __always_inline long jvm_unwind(struct ember_uw_state *st, struct sample_scratch *s)
{
	struct jvm_regs *r = &jvm_scratch(s)->regs;
	long got;

	r->pc = st->pc;
	r->sp = st->sp;
	r->fp = st->fp;
	r->r13 = st->r13;
	r->base = st->base;
	r->exact = st->exact;
	got = ember_jvm_unwind(st->slot);
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

static __always_inline __u64 jvm_walker(enum interp_op op, struct ember_uw_state *st,
                                        struct sample_scratch *s, __u64 pc)
{
	struct jvm_scratch *js = jvm_scratch(s);
	const struct ember_jvm_proc *row;

	switch (op) {
	case INTERP_LOAD:
		row = bpf_map_lookup_elem(&jvm_procs, &st->tgid);
		if (row)
			__builtin_memcpy(&js->row, row, sizeof(*row));
		return row != NULL;
	case INTERP_UNWIND:
		return (__u64)jvm_unwind(st, s);
	default:
		return 0;
	}
}

#endif
