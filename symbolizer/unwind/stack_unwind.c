// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/unwind/stack_unwind.h"

#include <errno.h>
#include <string.h>

/* Offsets in the ucontext an x86-64 signal handler returns to, as in bpf/unwind.bpf.h. */
#define UC_RBP 120
#define UC_RBX 128
#define UC_RSP 160
#define UC_RIP 168

struct copy {
	const uint8_t *bytes;
	uint64_t base; /* the address of bytes[0] in the process */
	size_t len;
};

struct state {
	uint64_t pc, sp, fp;
	bool exact;
	bool has_di; /* di is this frame's rdi: the walk's first frame only */
	bool has_bx; /* bx is this frame's rbx: the copy's, or restored from a callee's save */
	uint64_t di, bx;
};

/* 0, or the stop reason of a read outside the copy. */
static uint32_t read_u64(const struct copy *c, uint64_t addr, uint64_t *out)
{
	uint64_t off = addr - c->base;

	/* Below the copy (or wrapped around): not the stack that was copied. */
	if (addr < c->base)
		return EMBER_UNWIND_STOP_READ;
	if (off > c->len || c->len - off < sizeof(*out))
		return EMBER_UNWIND_STOP_COPY_SHORT;
	memcpy(out, c->bytes + off, sizeof(*out));
	return 0;
}

int ember_stack_copy_expand(uint32_t words, const uint8_t *bytes, size_t len, uint8_t *out,
                            size_t room)
{
	size_t maps = EMBER_STACK_COPY_BITMAP_BYTES(words), kept, k = 0;
	const uint8_t *kept_map, *nonzero_map;
	uint64_t w;

	if (!words || words > EMBER_MAX_STACK_COPY / 8 || 8 * (size_t)words > room || len % 8 ||
	    len < 2 * maps)
		return -EBADMSG;
	kept = (len - 2 * maps) / 8;
	kept_map = bytes + 8 * kept;
	nonzero_map = kept_map + maps;
	for (size_t i = 0; i < 8 * maps; i++) {
		bool is_kept = kept_map[i / 8] >> (i % 8) & 1;

		if (i >= words) {
			if (is_kept || (nonzero_map[i / 8] >> (i % 8) & 1))
				return -EBADMSG; /* a bit past the stack */
			continue;
		}
		if (is_kept) {
			if (k == kept)
				return -EBADMSG;
			memcpy(out + 8 * i, bytes + 8 * k++, 8);
			continue;
		}
		w = nonzero_map[i / 8] >> (i % 8) & 1 ? EMBER_COPY_DROPPED_WORD : 0;
		memcpy(out + 8 * i, &w, 8);
	}
	return k == kept ? (int)(8 * words) : -EBADMSG;
}

/* Each step returns true to end the walk (w->stop says why), false to go on. */
static bool step_frame_pointer(struct state *st, const struct copy *c, struct ember_stack_walk *w)
{
	uint64_t next_fp, ra;

	if (!st->fp) /* the outermost frame clears it (_start, thread start) */
		return true;
	if (st->fp < st->sp) {
		w->stop = EMBER_UNWIND_STOP_BAD_FRAME;
		return true;
	}
	if ((w->stop = read_u64(c, st->fp, &next_fp)) || (w->stop = read_u64(c, st->fp + 8, &ra)))
		return true;
	w->used_fp = true;
	st->has_bx = false;   /* code without CFI may have saved and changed it anywhere */
	st->sp = st->fp + 16; /* both reads were inside the copy: no overflow */
	st->fp = next_fp;
	st->pc = ra;
	return ra == 0;
}

static bool step_signal(struct state *st, const struct copy *c, struct ember_stack_walk *w)
{
	uint64_t fp, sp, pc;

	if ((w->stop = read_u64(c, st->sp + UC_RBP, &fp)) ||
	    (w->stop = read_u64(c, st->sp + UC_RSP, &sp)) ||
	    (w->stop = read_u64(c, st->sp + UC_RIP, &pc)))
		return true;
	st->has_bx = !read_u64(c, st->sp + UC_RBX, &st->bx);
	/* The interrupted pc is exact; the handler may have run on another stack. */
	st->fp = fp;
	st->sp = sp;
	st->pc = pc;
	st->exact = true;
	return pc == 0;
}

static bool step_row(struct state *st, const struct ember_unwind_row *row, const struct copy *c,
                     struct ember_stack_walk *w)
{
	uint64_t cfa, ra, fp;

	switch (row->kind) {
	case EMBER_ROW_CFA_SP:
		cfa = st->sp + 8 * (uint64_t)(int64_t)row->cfa_slots;
		break;
	case EMBER_ROW_CFA_FP:
		cfa = st->fp + 8 * (uint64_t)(int64_t)row->cfa_slots;
		break;
	case EMBER_ROW_CFA_BX:
		if (!st->has_bx) {
			w->stop = EMBER_UNWIND_STOP_BAD_CFI;
			return true;
		}
		cfa = st->bx + 8 * (uint64_t)(int64_t)row->cfa_slots;
		break;
	case EMBER_ROW_PLT:
		cfa = st->sp + 8 + ((st->pc & 15) >= (uint64_t)(int64_t)row->cfa_slots ? 8 : 0);
		break;
	case EMBER_ROW_SIGNAL:
		return step_signal(st, c, w);
	case EMBER_ROW_END:
		return true;
	case EMBER_ROW_GAP:
		return step_frame_pointer(st, c, w);
	case EMBER_ROW_RA_DI:
		/* The sampled frame's return address in rdi; the stack pointer stays. */
		if (st->has_di) {
			st->pc = st->di;
			return st->pc == 0;
		}
		/* Not the sampled frame, or its rdi was not copied. */
		__attribute__((fallthrough));
	default:
		w->stop = EMBER_UNWIND_STOP_BAD_CFI;
		return true;
	}
	/* The stack pointer moves up at every step: a walk cannot go round in circles. */
	if (cfa <= st->sp) {
		w->stop = EMBER_UNWIND_STOP_BAD_FRAME;
		return true;
	}
	if ((w->stop = read_u64(c, cfa - 8, &ra)))
		return true;
	if (row->fp_slot) {
		if ((w->stop = read_u64(c, cfa + 8 * (uint64_t)(int64_t)row->fp_slot, &fp)))
			return true;
		st->fp = fp;
	}
	/* The caller's rbx: where this frame saved it, else this frame's. */
	if (row->bx_slot == EMBER_ROW_BX_LOST)
		st->has_bx = false;
	else if (row->bx_slot)
		st->has_bx = !read_u64(c, cfa - 8 * (uint64_t)row->bx_slot, &st->bx);
	st->sp = cfa;
	st->pc = ra;
	return ra == 0;
}

void ember_stack_unwind(const struct ember_stack_regs *regs, const uint8_t *stack, size_t len,
                        ember_row_lookup_fn lookup, void *ctx, struct ember_stack_walk *w)
{
	struct copy c = {stack, regs->sp, stack ? len : 0};
	struct state st = {.pc = regs->pc,
	                   .sp = regs->sp,
	                   .fp = regs->fp,
	                   .exact = regs->exact,
	                   .has_di = regs->has_di,
	                   .has_bx = regs->has_bx,
	                   .di = regs->di,
	                   .bx = regs->bx};

	w->n = 0;
	w->stop = EMBER_UNWIND_COMPLETE;
	w->used_fp = false;
	/* Every round appends a frame or ends the walk: at most max + 1 rounds. */
	for (;;) {
		struct ember_unwind_row row = {.kind = EMBER_ROW_INVALID};
		/* A return address points after its call: look up the call itself. */
		uint64_t pc = st.exact ? st.pc : st.pc - 1;
		int err;

		st.exact = false;
		err = lookup(ctx, pc, &row);
		if (err) {
			w->stop = err == -ENOENT ? EMBER_UNWIND_STOP_NO_MAPPING
			                         : EMBER_UNWIND_STOP_NO_TABLE;
			return;
		}
		if (step_row(&st, &row, &c, w))
			return;
		st.has_di = false; /* the callers' rdi is not known */
		if (w->n >= w->max) {
			w->stop = EMBER_UNWIND_STOP_DEPTH;
			return;
		}
		w->frames[w->n++] = st.pc;
	}
}
