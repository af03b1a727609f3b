// SPDX-License-Identifier: Apache-2.0
/*
 * The stack-copy unwinder: hand-made stacks for every row kind, hostile
 * copies (cycles, reads outside the copy, depth), and this process's own
 * stack unwound from a copy with tables cfi.c builds from its files,
 * checked against the return addresses the functions saw themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/unwind/cfi.h"
#include "symbolizer/unwind/stack_unwind.h"

#define BASE 0x7ff000000000ull /* where the hand-made stacks "live" */

/* A table for addresses [0x1000, 0x2000): row i covers [0x1000 + 0x100 i, ...). */
struct fake_table {
	struct ember_unwind_row rows[16];
	size_t n;
	int err; /* returned for every lookup when set */
	uint64_t lookups;
};

static int fake_lookup(void *ctx, uint64_t pc, struct ember_unwind_row *row)
{
	struct fake_table *t = ctx;
	struct ember_unwind_rows r = {t->rows, t->n};
	const struct ember_unwind_row *found;

	t->lookups++;
	if (t->err)
		return t->err;
	if (pc < 0x1000 || pc >= 0x2000)
		return -ENOENT;
	found = ember_unwind_rows_find(&r, pc);
	*row = found ? *found : (struct ember_unwind_row){.kind = EMBER_ROW_GAP};
	return 0;
}

static void add_row(struct fake_table *t, uint32_t pc, uint8_t kind, int16_t cfa, int8_t fp)
{
	t->rows[t->n++] =
	    (struct ember_unwind_row){.pc = pc, .cfa_slots = cfa, .kind = kind, .fp_slot = fp};
}

static uint64_t stack[512]; /* the copied bytes; stack[i] lives at BASE + 8 i */

static void walk(struct fake_table *t, const struct ember_stack_regs *r, size_t len, uint32_t max,
                 uint64_t *frames, struct ember_stack_walk *w)
{
	memset(w, 0, sizeof(*w));
	w->frames = frames;
	w->max = max;
	ember_stack_unwind(r, (const uint8_t *)stack, len, fake_lookup, t, w);
}

/* f1 (0x1000, CFA = SP + 16) -> f2 (0x1100, CFA = SP + 8) -> f3 (0x1200, the outermost). */
static void three_frames(struct fake_table *t)
{
	memset(t, 0, sizeof(*t));
	memset(stack, 0, sizeof(stack));
	add_row(t, 0x1000, EMBER_ROW_CFA_SP, 2, 0);
	add_row(t, 0x1100, EMBER_ROW_CFA_SP, 1, 0);
	add_row(t, 0x1200, EMBER_ROW_END, 0, 0);
	add_row(t, 0x1300, EMBER_ROW_GAP, 0, 0);
	stack[1] = 0x1150; /* f1's return address, at its CFA - 8 */
	stack[2] = 0x1250; /* f2's, at its CFA (BASE + 16) + 8 - 8 */
}

START_TEST(sp_rows_to_the_outermost_frame)
{
	struct ember_stack_regs r = {.pc = 0x1010, .sp = BASE, .exact = true};
	struct fake_table t;
	struct ember_stack_walk w;
	uint64_t frames[8];

	three_frames(&t);
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
	ck_assert_uint_eq(w.n, 2);
	ck_assert_uint_eq(frames[0], 0x1150);
	ck_assert_uint_eq(frames[1], 0x1250);
	ck_assert(!w.used_fp);
}
END_TEST

START_TEST(return_addresses_are_looked_up_at_their_call)
{
	/* A return address at the very start of the next function's row belongs to the call. */
	struct ember_stack_regs r = {.pc = 0x1010, .sp = BASE, .exact = true};
	struct fake_table t;
	struct ember_stack_walk w;
	uint64_t frames[8];

	three_frames(&t);
	stack[1] = 0x1200; /* after a call at the end of f2: f2's row, not f3's END */
	stack[2] = 0x1250;
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
	ck_assert_uint_eq(w.n, 2);
	/* An exact pc at a row's start is that row's. */
	r.pc = 0x1200;
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.n, 0);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
}
END_TEST

START_TEST(frame_pointer_rows_and_saved_fp)
{
	/* f1: CFA = FP + 16, FP saved at CFA - 16; f2 has no CFI: frame pointers. */
	struct ember_stack_regs r = {.pc = 0x1010, .sp = BASE, .fp = BASE + 32, .exact = true};
	struct fake_table t = {0};
	struct ember_stack_walk w;
	uint64_t frames[8];

	memset(stack, 0, sizeof(stack));
	add_row(&t, 0x1000, EMBER_ROW_CFA_FP, 2, -2);
	add_row(&t, 0x1100, EMBER_ROW_GAP, 0, 0);
	stack[4] = BASE + 64; /* saved FP at CFA - 16 = BASE + 32 */
	stack[5] = 0x1150;    /* return address at CFA - 8 */
	stack[8] = 0;         /* f2's frame: next FP 0 (outermost) */
	stack[9] = 0x1180;    /* and its return address */
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
	ck_assert_uint_eq(w.n, 2);
	ck_assert_uint_eq(frames[0], 0x1150);
	ck_assert_uint_eq(frames[1], 0x1180);
	ck_assert(w.used_fp);
}
END_TEST

START_TEST(plt_and_signal_rows)
{
	/* A PLT stub (CFA = SP + 8, + 8 from offset 11 on), then a signal trampoline whose
	 * ucontext names the interrupted frame, an exact pc in a frame with an END row. */
	struct ember_stack_regs r = {.pc = 0x100c, .sp = BASE, .exact = true};
	struct fake_table t = {0};
	struct ember_stack_walk w;
	uint64_t frames[8];

	memset(stack, 0, sizeof(stack));
	add_row(&t, 0x1000, EMBER_ROW_PLT, 11, 0);
	add_row(&t, 0x1100, EMBER_ROW_SIGNAL, 0, 0);
	add_row(&t, 0x1200, EMBER_ROW_END, 0, 0);
	stack[1] = 0x1101;           /* (pc & 15) = 12 >= 11: CFA = SP + 16 */
	stack[2 + 120 / 8] = 0;      /* uc rbp */
	stack[2 + 160 / 8] = BASE;   /* uc rsp */
	stack[2 + 168 / 8] = 0x1200; /* uc rip: exact, the start of the END row */
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
	ck_assert_uint_eq(w.n, 2);
	ck_assert_uint_eq(frames[0], 0x1101);
	ck_assert_uint_eq(frames[1], 0x1200);
}
END_TEST

/* glibc's vfork: the sampled frame's return address in rdi, the stack pointer its caller's. */
START_TEST(return_address_in_rdi_at_the_sampled_frame)
{
	/* The copy starts at the caller's stack pointer: f1's frame as three_frames has it. */
	struct ember_stack_regs r = {
	    .pc = 0x1410, .sp = BASE, .exact = true, .has_di = true, .di = 0x1050};
	struct fake_table t;
	struct ember_stack_walk w;
	uint64_t frames[8];

	three_frames(&t);
	add_row(&t, 0x1400, EMBER_ROW_RA_DI, 0, 0);
	add_row(&t, 0x1500, EMBER_ROW_GAP, 0, 0);
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
	ck_assert_uint_eq(w.n, 3);
	ck_assert_uint_eq(frames[0], 0x1050);
	ck_assert_uint_eq(frames[1], 0x1150);
	ck_assert_uint_eq(frames[2], 0x1250);
	/* Without the sampled frame's rdi (a copy taken further up, or none copied): stop. */
	r.has_di = false;
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_BAD_CFI);
	ck_assert_uint_eq(w.n, 0);
	/* A caller's row never takes the sampled frame's rdi. */
	r = (struct ember_stack_regs){
	    .pc = 0x1010, .sp = BASE, .exact = true, .has_di = true, .di = 0x1050};
	stack[1] = 0x1411; /* f1 returns into the RA_DI region */
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_BAD_CFI);
	ck_assert_uint_eq(w.n, 1);
	ck_assert_uint_eq(frames[0], 0x1411);
}
END_TEST

/*
 * glibc's _dl_runtime_resolve: push rbx; mov rsp, rbx; CFA = rbx + 32; and $-64, rsp; ...;
 * call _dl_fixup, which saves rbx (at its CFA - 16) and changes it. f0 (_dl_fixup, CFA =
 * SP + 24) -> f1 (the trampoline, CFA_BX 4, its caller's rbx at CFA - 32) -> f2 (CFA = SP +
 * 8) -> f3 (END).
 */
static void rbx_frames(struct fake_table *t, uint8_t f0_bx_slot)
{
	memset(t, 0, sizeof(*t));
	memset(stack, 0, sizeof(stack));
	add_row(t, 0x1000, EMBER_ROW_CFA_SP, 3, 0);
	t->rows[0].bx_slot = f0_bx_slot & 0xf;
	add_row(t, 0x1100, EMBER_ROW_CFA_BX, 4, 0);
	t->rows[1].bx_slot = 4;
	add_row(t, 0x1200, EMBER_ROW_CFA_SP, 1, 0);
	add_row(t, 0x1300, EMBER_ROW_END, 0, 0);
	add_row(t, 0x1400, EMBER_ROW_GAP, 0, 0);
	stack[1] = BASE + 64;  /* f0 saved the trampoline's rbx at its CFA - 16 */
	stack[2] = 0x1150;     /* f0's return address at CFA (BASE + 24) - 8 */
	stack[8] = 0x7ff0beef; /* the trampoline saved its caller's rbx at rbx (CFA - 32) */
	stack[11] = 0x1250;    /* its return address at CFA (rbx + 32 = BASE + 96) - 8 */
	stack[12] = 0x1350;    /* f2's at BASE + 104 - 8 */
}

START_TEST(cfa_in_rbx_restored_from_a_callee)
{
	struct ember_stack_regs r = {.pc = 0x1010, .sp = BASE, .exact = true, .has_bx = true};
	struct fake_table t;
	struct ember_stack_walk w;
	uint64_t frames[8];

	/* The sampled frame's rbx is its own (0x42); the trampoline's is where f0 saved it. */
	r.bx = 0x42;
	rbx_frames(&t, 2);
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
	ck_assert_uint_eq(w.n, 3);
	ck_assert_uint_eq(frames[0], 0x1150);
	ck_assert_uint_eq(frames[1], 0x1250);
	ck_assert_uint_eq(frames[2], 0x1350);
	/* The same without the copy's rbx: f0's save is enough. */
	r.has_bx = false;
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
	ck_assert_uint_eq(w.n, 3);
	/* f0 leaves rbx alone: the copy's rbx is the trampoline's. */
	rbx_frames(&t, 0);
	r.has_bx = true;
	r.bx = BASE + 64;
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
	ck_assert_uint_eq(w.n, 3);
	/* ... and without it, rbx is not known at the trampoline: stop there. */
	r.has_bx = false;
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_BAD_CFI);
	ck_assert_uint_eq(w.n, 1);
	ck_assert_uint_eq(frames[0], 0x1150);
	/* f0's save is one a row cannot say (EMBER_ROW_BX_LOST): the copy's rbx is not used. */
	rbx_frames(&t, EMBER_ROW_BX_LOST);
	r.has_bx = true;
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_BAD_CFI);
	ck_assert_uint_eq(w.n, 1);
	/* Sampled in the trampoline itself: its rbx is the sample's. */
	rbx_frames(&t, 2);
	r = (struct ember_stack_regs){
	    .pc = 0x1110, .sp = BASE + 24, .exact = true, .has_bx = true, .bx = BASE + 64};
	memset(&w, 0, sizeof(w));
	w.frames = frames;
	w.max = 8;
	ember_stack_unwind(&r, (const uint8_t *)&stack[3], sizeof(stack) - 24, fake_lookup, &t, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
	ck_assert_uint_eq(w.n, 2);
	ck_assert_uint_eq(frames[0], 0x1250);
	/* A frame found through the frame pointer may have changed rbx anywhere. */
	rbx_frames(&t, 0);
	t.rows[0] = (struct ember_unwind_row){.pc = 0x1000, .kind = EMBER_ROW_GAP};
	r = (struct ember_stack_regs){.pc = 0x1010,
	                              .sp = BASE,
	                              .fp = BASE + 8,
	                              .exact = true,
	                              .has_bx = true,
	                              .bx = BASE + 64};
	stack[1] = BASE + 200; /* next fp; the return address stays at BASE + 16 */
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_BAD_CFI);
	ck_assert_uint_eq(w.n, 1);
	ck_assert(w.used_fp);
}
END_TEST

START_TEST(reads_stay_inside_the_copy)
{
	struct ember_stack_regs r = {.pc = 0x1010, .sp = BASE, .exact = true};
	struct fake_table t;
	struct ember_stack_walk w;
	uint64_t frames[8];

	three_frames(&t);
	/* f2's return address lies at BASE + 16: a 16-byte copy ends before it. */
	walk(&t, &r, 16, 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_COPY_SHORT);
	ck_assert_uint_eq(w.n, 1);
	/* A copy of 15 bytes holds no whole word past the first. */
	walk(&t, &r, 15, 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_COPY_SHORT);
	ck_assert_uint_eq(w.n, 0);
	/* No copy at all. */
	memset(&w, 0, sizeof(w));
	w.frames = frames;
	w.max = 8;
	ember_stack_unwind(&r, NULL, 100, fake_lookup, &t, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_COPY_SHORT);
	/* A frame pointer below the copy is not followed. */
	memset(&t, 0, sizeof(t));
	add_row(&t, 0x1000, EMBER_ROW_GAP, 0, 0);
	r.fp = BASE - 8;
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_BAD_FRAME);
	/* A signal frame that points below the copy: the read is refused. */
	memset(&t, 0, sizeof(t));
	add_row(&t, 0x1000, EMBER_ROW_SIGNAL, 0, 0);
	add_row(&t, 0x1100, EMBER_ROW_CFA_SP, 1, 0);
	memset(stack, 0, sizeof(stack));
	stack[160 / 8] = BASE - 4096;
	stack[168 / 8] = 0x1100;
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_READ);
	ck_assert_uint_eq(w.n, 1);
	/* Registers near the top of the address space do not wrap into the copy. */
	r.sp = UINT64_MAX - 7;
	r.pc = 0x1010;
	memset(&t, 0, sizeof(t));
	add_row(&t, 0x1000, EMBER_ROW_CFA_SP, 2, 0);
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_BAD_FRAME);
}
END_TEST

START_TEST(hostile_stacks_end)
{
	struct ember_stack_regs r = {.pc = 0x1010, .sp = BASE, .fp = BASE, .exact = true};
	struct fake_table t = {0};
	struct ember_stack_walk w;
	uint64_t frames[200];

	/* A frame pointer chain that points at itself: the second step finds it below SP. */
	memset(stack, 0, sizeof(stack));
	add_row(&t, 0x1000, EMBER_ROW_GAP, 0, 0);
	stack[0] = BASE;
	stack[1] = 0x1010;
	walk(&t, &r, sizeof(stack), 200, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_BAD_FRAME);
	ck_assert_uint_eq(w.n, 1);
	/* A CFA that does not move up. */
	memset(&t, 0, sizeof(t));
	add_row(&t, 0x1000, EMBER_ROW_CFA_FP, 1, 0);
	r.fp = BASE - 64;
	walk(&t, &r, sizeof(stack), 200, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_BAD_FRAME);
	ck_assert_uint_eq(w.n, 0);
	/* Every return address leads back into the same function, one slot up: the walk
	 * ends at max frames, after max + 1 lookups. */
	memset(&t, 0, sizeof(t));
	add_row(&t, 0x1000, EMBER_ROW_CFA_SP, 1, 0);
	for (size_t i = 0; i < 512; i++)
		stack[i] = 0x1011;
	walk(&t, &r, sizeof(stack), 100, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_DEPTH);
	ck_assert_uint_eq(w.n, 100);
	ck_assert_uint_eq(t.lookups, 101);
	/* Signal frames that return to themselves on the same stack. */
	memset(&t, 0, sizeof(t));
	add_row(&t, 0x1000, EMBER_ROW_SIGNAL, 0, 0);
	memset(stack, 0, sizeof(stack));
	stack[160 / 8] = BASE;
	stack[168 / 8] = 0x1010;
	walk(&t, &r, sizeof(stack), 50, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_DEPTH);
	ck_assert_uint_eq(w.n, 50);
	/* Rows the unwinder does not know. */
	memset(&t, 0, sizeof(t));
	add_row(&t, 0x1000, EMBER_ROW_INVALID, 0, 0);
	walk(&t, &r, sizeof(stack), 50, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_BAD_CFI);
	t.rows[0].kind = 15; /* kinds have 4 bits */
	walk(&t, &r, sizeof(stack), 50, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_BAD_CFI);
}
END_TEST

START_TEST(lookup_failures_say_why)
{
	struct ember_stack_regs r = {.pc = 0x1010, .sp = BASE, .exact = true};
	struct fake_table t;
	struct ember_stack_walk w;
	uint64_t frames[8];

	three_frames(&t);
	stack[1] = 0x5000; /* a return address in no mapping */
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_NO_MAPPING);
	ck_assert_uint_eq(w.n, 1);
	t.err = -ENODATA;
	walk(&t, &r, sizeof(stack), 8, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_NO_TABLE);
	ck_assert_uint_eq(w.n, 0);
	/* No room for a single frame. */
	three_frames(&t);
	walk(&t, &r, sizeof(stack), 0, frames, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_STOP_DEPTH);
	ck_assert_uint_eq(w.n, 0);
}
END_TEST

/* ---- this process's own stack ---- */

#define SELF_MAX_OBJECTS 32

struct self_object {
	uint64_t start, end, bias;
	struct ember_unwind_rows rows;
};

static struct self_object objects[SELF_MAX_OBJECTS];
static size_t nobjects;

static int add_object(struct dl_phdr_info *info, size_t size, void *ctx)
{
	const char *path = info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
	struct self_object *o;
	int fd;

	(void)size;
	(void)ctx;
	if (nobjects == SELF_MAX_OBJECTS || strstr(path, "vdso"))
		return 0;
	o = &objects[nobjects];
	memset(o, 0, sizeof(*o));
	o->bias = info->dlpi_addr;
	o->start = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (o->bias + ph->p_vaddr < o->start)
			o->start = o->bias + ph->p_vaddr;
		if (o->bias + ph->p_vaddr + ph->p_memsz > o->end)
			o->end = o->bias + ph->p_vaddr + ph->p_memsz;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || o->start >= o->end || ember_cfi_from_fd(fd, 0, &o->rows)) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	close(fd);
	nobjects++;
	return 0;
}

static int self_lookup(void *ctx, uint64_t pc, struct ember_unwind_row *row)
{
	(void)ctx;
	for (size_t i = 0; i < nobjects; i++) {
		const struct ember_unwind_row *r;

		if (pc < objects[i].start || pc >= objects[i].end)
			continue;
		r = ember_unwind_rows_find(&objects[i].rows, pc - objects[i].bias);
		*row = r ? *r : (struct ember_unwind_row){.kind = EMBER_ROW_GAP};
		return 0;
	}
	return -ENOENT;
}

struct capture {
	struct ember_stack_regs regs;
	uint8_t *copy;
	size_t len;
	uint64_t ra[4]; /* the return addresses each level saw, innermost first */
};

/*
 * The stack as it is, from sp up: a copy of memory the sanitizers keep for frames and their
 * redzones, which AddressSanitizer must not check (it is no access of this program's).
 */
__attribute__((noinline, no_sanitize("address"))) static void copy_stack(void *dst,
                                                                        const void *src,
                                                                        size_t n)
{
	const volatile unsigned char *s = src;
	unsigned char *d = dst;

	for (size_t i = 0; i < n; i++)
		d[i] = s[i];
}

/* Registers and a copy of the stack from them to its top, as the sampler would take them. */
__attribute__((noinline)) static void capture_here(struct capture *c)
{
	uint64_t pc, sp, fp, bx, top;
	pthread_attr_t attr;
	void *addr;
	size_t size;

	/* rbx first: an output register the compiler gave rbx is written after. */
	__asm__ volatile("mov %%rbx, %3\n\tlea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
	                 : "=&r"(pc), "=&r"(sp), "=&r"(fp), "=&r"(bx));
	c->regs = (struct ember_stack_regs){
	    .pc = pc, .sp = sp, .fp = fp, .exact = true, .has_bx = true, .bx = bx};
	ck_assert_int_eq(pthread_getattr_np(pthread_self(), &attr), 0);
	ck_assert_int_eq(pthread_attr_getstack(&attr, &addr, &size), 0);
	pthread_attr_destroy(&attr);
	top = (uint64_t)(uintptr_t)addr + size;
	c->len = top - sp < (256u << 10) ? top - sp : (256u << 10);
	c->copy = malloc(c->len);
	ck_assert_ptr_nonnull(c->copy);
	copy_stack(c->copy, (const void *)(uintptr_t)sp, c->len);
	c->ra[0] = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

__attribute__((noinline)) static void level3(struct capture *c)
{
	capture_here(c);
	c->ra[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) static void level2(struct capture *c)
{
	level3(c);
	c->ra[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void level1(struct capture *c)
{
	level2(c);
	c->ra[3] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

/*
 * A trampoline shaped like glibc's _dl_runtime_resolve: the CFA in rbx, the stack pointer
 * realigned, then a call to a function that saves rbx and changes it.
 */
void ember_test_rbx_trampoline(struct capture *c);
void ember_test_rbx_callee(struct capture *c);

__asm__(".text\n"
        ".globl ember_test_rbx_trampoline\n"
        ".hidden ember_test_rbx_trampoline\n"
        ".type ember_test_rbx_trampoline, @function\n"
        "ember_test_rbx_trampoline:\n"
        ".cfi_startproc\n"
        "push %rbx\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset rbx, -16\n"
        "mov %rsp, %rbx\n"
        ".cfi_def_cfa_register rbx\n"
        "and $-64, %rsp\n"
        "sub $192, %rsp\n"
        "call ember_test_rbx_callee\n"
        "mov %rbx, %rsp\n"
        ".cfi_def_cfa_register rsp\n"
        "pop %rbx\n"
        ".cfi_restore rbx\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size ember_test_rbx_trampoline, .-ember_test_rbx_trampoline\n");

__attribute__((noinline, visibility("hidden"))) void ember_test_rbx_callee(struct capture *c)
{
	__asm__ volatile("mov $0x5a5a, %%ebx" ::: "rbx", "memory"); /* saved, then changed */
	capture_here(c);
	c->ra[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

START_TEST(own_stack_through_a_cfa_in_rbx)
{
	struct capture c = {0};
	struct ember_stack_walk w = {0};
	struct ember_unwind_row row;
	uint64_t frames[128];

	dl_iterate_phdr(add_object, NULL);
	ember_test_rbx_trampoline(&c);
	c.ra[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	ck_assert_int_eq(self_lookup(NULL, c.ra[1] - 1, &row), 0);
	ck_assert_int_eq(row.kind, EMBER_ROW_CFA_BX);
	w.frames = frames;
	w.max = 128;
	ember_stack_unwind(&c.regs, c.copy, c.len, self_lookup, NULL, &w);
	/* capture_here -> the callee -> the trampoline -> this test -> ... -> libc's start. */
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
	ck_assert_uint_ge(w.n, 5);
	ck_assert_uint_eq(frames[0], c.ra[0]);
	ck_assert_uint_eq(frames[1], c.ra[1]);
	ck_assert_uint_eq(frames[3], c.ra[2]);
	/* The sample's own rbx is not needed: the callee saved the trampoline's. */
	c.regs.has_bx = false;
	ember_stack_unwind(&c.regs, c.copy, c.len, self_lookup, NULL, &w);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
	free(c.copy);
	for (size_t i = 0; i < nobjects; i++)
		ember_unwind_rows_free(&objects[i].rows);
	nobjects = 0;
}
END_TEST

START_TEST(own_stack_from_a_copy)
{
	struct capture c = {0};
	struct ember_stack_walk w = {0};
	uint64_t frames[128];

	dl_iterate_phdr(add_object, NULL);
	ck_assert_uint_ge(nobjects, 2); /* the test program and libc at least */
	level1(&c);
	w.frames = frames;
	w.max = 128;
	ember_stack_unwind(&c.regs, c.copy, c.len, self_lookup, NULL, &w);
	/* The callers each level saw, then on to main and libc's start: complete. */
	ck_assert_uint_ge(w.n, 6);
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(frames[i], c.ra[i]);
	ck_assert_uint_eq(w.stop, EMBER_UNWIND_COMPLETE);
	/* The same copy cut short stops inside it and says so. */
	ember_stack_unwind(&c.regs, c.copy, 64, self_lookup, NULL, &w);
	ck_assert(w.stop == EMBER_UNWIND_STOP_COPY_SHORT);
	free(c.copy);
	for (size_t i = 0; i < nobjects; i++)
		ember_unwind_rows_free(&objects[i].rows);
	nobjects = 0;
}
END_TEST

/* A copy as the sampler sends it (bpf/stack_copy.bpf.h): the words that could be addresses,
 * then the bitmaps of those kept and of those left behind that were not zero. */
static size_t sparse_copy(const uint8_t *stack, size_t len, uint8_t *out)
{
	size_t words = len / 8, maps = EMBER_STACK_COPY_BITMAP_BYTES(words), kept = 0;
	uint64_t w, kept_map[EMBER_MAX_STACK_COPY / 512] = {0},
						    nonzero[EMBER_MAX_STACK_COPY / 512] = {0};

	for (size_t i = 0; i < words; i++) {
		memcpy(&w, stack + 8 * i, 8);
		if (w >= EMBER_COPY_MIN_ADDR && w < (1ull << 47)) {
			memcpy(out + 8 * kept++, &w, 8);
			kept_map[i / 64] |= 1ull << (i % 64);
		} else if (w) {
			nonzero[i / 64] |= 1ull << (i % 64);
		}
	}
	memcpy(out + 8 * kept, kept_map, maps);
	memcpy(out + 8 * kept + maps, nonzero, maps);
	return 8 * kept + 2 * maps;
}

START_TEST(sparse_copy_of_own_stack)
{
	static uint8_t sent[EMBER_MAX_STACK_COPY_BYTES], expanded[EMBER_MAX_STACK_COPY];
	struct capture c = {0};
	struct ember_stack_walk w = {0}, whole = {0};
	uint64_t frames[128], whole_frames[128], word;
	size_t len, n;
	int got;

	dl_iterate_phdr(add_object, NULL);
	level1(&c);
	len = c.len < EMBER_MAX_STACK_COPY ? c.len & ~(size_t)7 : EMBER_MAX_STACK_COPY;
	whole.frames = whole_frames;
	whole.max = 128;
	ember_stack_unwind(&c.regs, c.copy, len, self_lookup, NULL, &whole);
	ck_assert_uint_eq(whole.stop, EMBER_UNWIND_COMPLETE);
	n = sparse_copy(c.copy, len, sent);
	/* Zeros, small integers and the like stay behind: the stack costs a fraction of its
	 * bytes (2/3 at most here; a third to a half on a busy host's stacks). */
	ck_assert_uint_lt(n, len * 2 / 3);
	got = ember_stack_copy_expand(len / 8, sent, n, expanded, sizeof(expanded));
	ck_assert_int_eq(got, (int)len);
	for (size_t i = 0; i < len / 8; i++) {
		uint64_t was;

		memcpy(&was, c.copy + 8 * i, 8);
		memcpy(&word, expanded + 8 * i, 8);
		if (was >= EMBER_COPY_MIN_ADDR && was < (1ull << 47))
			ck_assert_uint_eq(word, was);
		else
			ck_assert_uint_eq(word, was ? EMBER_COPY_DROPPED_WORD : 0);
	}
	/* The same callers, to the same end. */
	w.frames = frames;
	w.max = 128;
	ember_stack_unwind(&c.regs, expanded, (size_t)got, self_lookup, NULL, &w);
	ck_assert_uint_eq(w.n, whole.n);
	ck_assert_mem_eq(frames, whole_frames, 8 * w.n);
	ck_assert_uint_eq(w.stop, whole.stop);
	/* Sizes and bitmaps that disagree are refused. */
	ck_assert_int_eq(ember_stack_copy_expand(len / 8, sent, n - 8, expanded, sizeof(expanded)),
	                 -EBADMSG); /* a bitmap word short: a kept word too few */
	ck_assert_int_eq(ember_stack_copy_expand(len / 8, sent, n, expanded, len - 8), -EBADMSG);
	ck_assert_int_eq(ember_stack_copy_expand(0, sent, 0, expanded, sizeof(expanded)), -EBADMSG);
	ck_assert_int_eq(
	    ember_stack_copy_expand(EMBER_MAX_STACK_COPY / 8 + 1, sent, n, expanded, 1 << 20),
	    -EBADMSG);
	free(c.copy);
	for (size_t i = 0; i < nobjects; i++)
		ember_unwind_rows_free(&objects[i].rows);
	nobjects = 0;
}
END_TEST

/* A bit set past the stack's words, or more bits than kept words, is refused. */
START_TEST(sparse_copy_bits_must_match)
{
	uint8_t expanded[8 * 3];
	/* 3 words: word 0 kept (0x7f0000001000), word 1 zero, word 2 dropped non-zero. */
	uint64_t sent[3] = {0x7f0000001000ull, 0x1, 0x4};
	uint64_t w;

	ck_assert_int_eq(
	    ember_stack_copy_expand(3, (uint8_t *)sent, sizeof(sent), expanded, sizeof(expanded)),
	    24);
	memcpy(&w, expanded, 8);
	ck_assert_uint_eq(w, 0x7f0000001000ull);
	memcpy(&w, expanded + 8, 8);
	ck_assert_uint_eq(w, 0);
	memcpy(&w, expanded + 16, 8);
	ck_assert_uint_eq(w, EMBER_COPY_DROPPED_WORD);
	sent[1] = 0x1 | 0x8; /* kept past the third word */
	ck_assert_int_eq(
	    ember_stack_copy_expand(3, (uint8_t *)sent, sizeof(sent), expanded, sizeof(expanded)),
	    -EBADMSG);
	sent[1] = 0x3; /* two kept, one word carried */
	ck_assert_int_eq(
	    ember_stack_copy_expand(3, (uint8_t *)sent, sizeof(sent), expanded, sizeof(expanded)),
	    -EBADMSG);
	sent[1] = 0x1;
	sent[2] = 0x10; /* not zero past the third word */
	ck_assert_int_eq(
	    ember_stack_copy_expand(3, (uint8_t *)sent, sizeof(sent), expanded, sizeof(expanded)),
	    -EBADMSG);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("stack_unwind");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, sp_rows_to_the_outermost_frame);
	tcase_add_test(tc, return_addresses_are_looked_up_at_their_call);
	tcase_add_test(tc, frame_pointer_rows_and_saved_fp);
	tcase_add_test(tc, plt_and_signal_rows);
	tcase_add_test(tc, return_address_in_rdi_at_the_sampled_frame);
	tcase_add_test(tc, cfa_in_rbx_restored_from_a_callee);
	tcase_add_test(tc, own_stack_through_a_cfa_in_rbx);
	tcase_add_test(tc, reads_stay_inside_the_copy);
	tcase_add_test(tc, hostile_stacks_end);
	tcase_add_test(tc, lookup_failures_say_why);
	tcase_add_test(tc, own_stack_from_a_copy);
	tcase_add_test(tc, sparse_copy_of_own_stack);
	tcase_add_test(tc, sparse_copy_bits_must_match);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
