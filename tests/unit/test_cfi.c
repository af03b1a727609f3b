// SPDX-License-Identifier: Apache-2.0
#include <dwarf.h>
#include <errno.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/resource.h>

#include "check_main.h"
#include "mini_elf.h"
#include "symbolizer/unwind/cfi.h"

/* A little assembler for CFI sections. */
struct buf {
	uint8_t b[512];
	size_t n;
};

static void put(struct buf *x, const void *p, size_t n)
{
	memcpy(x->b + x->n, p, n);
	x->n += n;
}
static void u8(struct buf *x, uint8_t v)
{
	put(x, &v, 1);
}
static void u32(struct buf *x, uint32_t v)
{
	put(x, &v, 4);
}

/* An .eh_frame CIE at offset 0: "zR", code 1, data -8, RA 16, pc-relative
 * sdata4 addresses; initial rule CFA = rsp + 8, RA at CFA - 8. */
static void cie(struct buf *x, const char *aug, bool signal)
{
	size_t len_at = x->n;

	u32(x, 0);
	u32(x, 0); /* CIE id */
	u8(x, 1);  /* version */
	put(x, aug, strlen(aug) + 1);
	u8(x, 1);                        /* code alignment */
	u8(x, 0x78);                     /* data alignment -8 */
	u8(x, 16);                       /* return address column */
	u8(x, signal ? 1 : 1);           /* augmentation data length */
	u8(x, 0x1b);                     /* R: pcrel | sdata4 */
	u8(x, 0x0c), u8(x, 7), u8(x, 8); /* def_cfa rsp, 8 */
	u8(x, 0x90), u8(x, 1);           /* offset r16, 1 * -8 */
	while ((x->n - len_at) % 4)
		u8(x, 0);
	memcpy(x->b + len_at, &(uint32_t){(uint32_t)(x->n - len_at - 4)}, 4);
}

/* An FDE for [start, start + range) with the CIE at offset 0 and the given instructions. */
static void fde(struct buf *x, uint64_t vaddr, uint64_t start, uint32_t range, const uint8_t *insns,
                size_t ninsns)
{
	size_t len_at = x->n;
	int32_t pcrel;

	u32(x, 0);
	u32(x, (uint32_t)(x->n)); /* CIE pointer: back to offset 0 */
	pcrel = (int32_t)(start - (vaddr + x->n));
	put(x, &pcrel, 4);
	u32(x, range);
	u8(x, 0); /* augmentation data length */
	put(x, insns, ninsns);
	while ((x->n - len_at) % 4)
		u8(x, 0);
	memcpy(x->b + len_at, &(uint32_t){(uint32_t)(x->n - len_at - 4)}, 4);
}

static void build(const struct buf *x, uint64_t vaddr, struct ember_unwind_rows *out,
                  struct ember_cfi_builder *b)
{
	ember_cfi_builder_init(b, 0);
	ck_assert_int_eq(ember_cfi_parse(b, x->b, x->n, vaddr, EMBER_CFI_EH_FRAME), 0);
	ck_assert_int_eq(ember_cfi_finish(b, out), 0);
}

static void expect_row(const struct ember_unwind_rows *r, size_t i, uint32_t pc, int kind,
                       int slots, int fp)
{
	ck_assert_uint_lt(i, r->count);
	ck_assert_uint_eq(r->rows[i].pc, pc);
	ck_assert_int_eq(r->rows[i].kind, kind);
	ck_assert_int_eq(r->rows[i].cfa_slots, slots);
	ck_assert_int_eq(r->rows[i].fp_slot, fp);
}

START_TEST(prologue_body_epilogue)
{
	/* push rbp; mov rbp, rsp; ...; pop rbp (remembered state); ret; more body */
	static const uint8_t insns[] = {
	    0x41,        /* advance 1 */
	    0x0e, 16,    /* def_cfa_offset 16 */
	    0x86, 2,     /* offset rbp, 2 * -8 */
	    0x43,        /* advance 3 */
	    0x0d, 6,     /* def_cfa_register rbp */
	    0x4c,        /* advance 12 */
	    0x0a,        /* remember_state */
	    0x0c, 7,  8, /* def_cfa rsp, 8 */
	    0xc6,        /* restore rbp */
	    0x41,        /* advance 1 */
	    0x0b,        /* restore_state */
	};
	struct ember_cfi_builder b;
	struct ember_unwind_rows r;
	struct buf x = {0};

	cie(&x, "zR", false);
	fde(&x, 0x2000, 0x1000, 0x40, insns, sizeof(insns));
	build(&x, 0x2000, &r, &b);
	ck_assert_uint_eq(r.count, 6);
	expect_row(&r, 0, 0x1000, EMBER_ROW_CFA_SP, 1, 0);
	expect_row(&r, 1, 0x1001, EMBER_ROW_CFA_SP, 2, -2);
	expect_row(&r, 2, 0x1004, EMBER_ROW_CFA_FP, 2, -2);
	expect_row(&r, 3, 0x1010, EMBER_ROW_CFA_SP, 1, 0);
	expect_row(&r, 4, 0x1011, EMBER_ROW_CFA_FP, 2, -2);
	expect_row(&r, 5, 0x1040, EMBER_ROW_GAP, 0, 0);
	ck_assert_ptr_null(ember_unwind_rows_find(&r, 0xfff));
	ck_assert_int_eq(ember_unwind_rows_find(&r, 0x1003)->kind, EMBER_ROW_CFA_SP);
	ck_assert_int_eq(ember_unwind_rows_find(&r, 0x1030)->kind, EMBER_ROW_CFA_FP);
	ck_assert_int_eq(ember_unwind_rows_find(&r, 0x5000)->kind, EMBER_ROW_GAP);
	ember_unwind_rows_free(&r);
	ember_cfi_builder_free(&b);
}
END_TEST

START_TEST(special_rows_and_gaps)
{
	/* The linker's .plt expression, an undefined RA, an unknown opcode. */
	static const uint8_t plt[] = {0x0f, 11,   0x77, 8,    0x80, 0,   0x3f,
	                              0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22};
	static const uint8_t end[] = {0x07, 16};                   /* undefined RA */
	static const uint8_t bad[] = {0x42, 0x3c, 0x41, 0x0e, 16}; /* advance 2, opcode 0x3c */
	static const uint8_t odd[] = {0x0e, 12}; /* CFA rsp + 12: not whole slots */
	/* vfork: pop the RA into rdi (CFA rsp + 0, RA in rdi), syscall, push it back; then the
	 * same with the RA in rsi, which no row says. */
	static const uint8_t vfork[] = {0x41, 0x0e, 0,    0x09, 16, 5,    0x42, 0x0e, 8,
	                                0x90, 1,    0x41, 0x0e, 0,  0x09, 16,   4};
	struct ember_cfi_builder b;
	struct ember_unwind_rows r;
	struct buf x = {0};

	cie(&x, "zR", false);
	fde(&x, 0, 0x100, 0x20, plt, sizeof(plt));
	fde(&x, 0, 0x200, 0x10, end, sizeof(end));
	fde(&x, 0, 0x300, 0x10, bad, sizeof(bad));
	fde(&x, 0, 0x310, 0x10, odd, sizeof(odd));
	fde(&x, 0, 0x108, 0x10, end, sizeof(end)); /* overlaps the first: dropped */
	fde(&x, 0, 0x400, 0x10, vfork, sizeof(vfork));
	build(&x, 0, &r, &b);
	expect_row(&r, 0, 0x100, EMBER_ROW_PLT, 11, 0);
	expect_row(&r, 1, 0x120, EMBER_ROW_GAP, 0, 0);
	expect_row(&r, 2, 0x200, EMBER_ROW_END, 0, 0);
	expect_row(&r, 3, 0x210, EMBER_ROW_GAP, 0, 0);
	expect_row(&r, 4, 0x300, EMBER_ROW_CFA_SP, 1, 0);
	expect_row(&r, 5, 0x302, EMBER_ROW_INVALID, 0, 0);
	expect_row(&r, 6, 0x320, EMBER_ROW_GAP, 0, 0);
	expect_row(&r, 7, 0x400, EMBER_ROW_CFA_SP, 1, 0);
	expect_row(&r, 8, 0x401, EMBER_ROW_RA_DI, 0, 0);
	expect_row(&r, 9, 0x403, EMBER_ROW_CFA_SP, 1, 0);
	expect_row(&r, 10, 0x404, EMBER_ROW_INVALID, 0, 0);
	expect_row(&r, 11, 0x410, EMBER_ROW_GAP, 0, 0);
	ck_assert_uint_eq(r.count, 12);
	ck_assert_uint_eq(b.plt_rows, 1);
	ember_unwind_rows_free(&r);
	ember_cfi_builder_free(&b);

	/* A signal frame ('S') is one SIGNAL row, whatever its instructions say. */
	memset(&x, 0, sizeof(x));
	cie(&x, "zRS", true);
	fde(&x, 0, 0x4000, 0x10, end, sizeof(end));
	build(&x, 0, &r, &b);
	expect_row(&r, 0, 0x4000, EMBER_ROW_SIGNAL, 0, 0);
	ck_assert_uint_eq(b.signal_fdes, 1);
	ember_unwind_rows_free(&r);
	ember_cfi_builder_free(&b);
}
END_TEST

/* rbx: a CFA in it (glibc's _dl_runtime_resolve) and where a frame saved it. */
START_TEST(rbx_rows)
{
	static const uint8_t trampoline[] = {
	    0x41,        /* advance 1 (push rbx) */
	    0x0e, 16,    /* def_cfa_offset 16 */
	    0x83, 2,     /* offset rbx, 2 * -8 */
	    0x43,        /* advance 3 (mov rsp, rbx) */
	    0x0d, 3,     /* def_cfa_register rbx */
	    0x44,        /* advance 4 */
	    0x83, 16,    /* offset rbx, 16 * -8: farther than a row says */
	    0x41,        /* advance 1 */
	    0xc3,        /* restore rbx: the CIE's, unchanged */
	    0x41,        /* advance 1 */
	    0x09, 3,  12 /* register rbx in r12 */
	};
	static const uint8_t above[] = {0x41, 0x11, 3, 0x7f}; /* offset_extended_sf rbx, CFA + 8 */
	struct ember_cfi_builder b;
	struct ember_unwind_rows r;
	struct buf x = {0};

	cie(&x, "zR", false);
	fde(&x, 0, 0x100, 0x20, trampoline, sizeof(trampoline));
	fde(&x, 0, 0x200, 0x10, above, sizeof(above));
	build(&x, 0, &r, &b);
	expect_row(&r, 0, 0x100, EMBER_ROW_CFA_SP, 1, 0);
	expect_row(&r, 1, 0x101, EMBER_ROW_CFA_SP, 2, 0);
	expect_row(&r, 2, 0x104, EMBER_ROW_CFA_BX, 2, 0);
	expect_row(&r, 3, 0x108, EMBER_ROW_CFA_BX, 2, 0);
	expect_row(&r, 4, 0x109, EMBER_ROW_CFA_BX, 2, 0);
	expect_row(&r, 5, 0x10a, EMBER_ROW_CFA_BX, 2, 0);
	expect_row(&r, 6, 0x120, EMBER_ROW_GAP, 0, 0);
	expect_row(&r, 7, 0x200, EMBER_ROW_CFA_SP, 1, 0);
	expect_row(&r, 8, 0x201, EMBER_ROW_CFA_SP, 1, 0);
	expect_row(&r, 9, 0x210, EMBER_ROW_GAP, 0, 0);
	ck_assert_uint_eq(r.count, 10);
	ck_assert_uint_eq(r.rows[0].bx_slot, 0);
	ck_assert_uint_eq(r.rows[1].bx_slot, 2); /* the caller's rbx at CFA - 16 */
	ck_assert_uint_eq(r.rows[2].bx_slot, 2);
	ck_assert_uint_eq(r.rows[3].bx_slot, EMBER_ROW_BX_LOST);
	ck_assert_uint_eq(r.rows[4].bx_slot, 0);
	ck_assert_uint_eq(r.rows[5].bx_slot, EMBER_ROW_BX_LOST);
	ck_assert_uint_eq(r.rows[7].bx_slot, 0);
	ck_assert_uint_eq(r.rows[8].bx_slot, EMBER_ROW_BX_LOST); /* above the CFA */
	ember_unwind_rows_free(&r);
	ember_cfi_builder_free(&b);
}
END_TEST

START_TEST(debug_frame)
{
	/* .debug_frame: CIE id 0xffffffff, absolute 8-byte addresses, CIE by section offset. */
	static const uint8_t sec[] = {
	    20, 0, 0,    0, 0xff, 0xff, 0xff, 0xff, 1, 0, 1,    0x78, 16, 0x0c, 7,    8, 0x90, 1, 0,
	    0,  0, 0,    0, 0,    28,   0,    0,    0, 0, 0,    0,    0,  0x00, 0x50, 0, 0,    0, 0,
	    0,  0, 0x20, 0, 0,    0,    0,    0,    0, 0, 0x41, 0x0e, 16, 0,    0,    0, 0,    0,
	};
	struct ember_cfi_builder b;
	struct ember_unwind_rows r;

	ember_cfi_builder_init(&b, 0);
	ck_assert_uint_eq(sizeof(sec), 24 + 32);
	ck_assert_int_eq(ember_cfi_parse(&b, sec, sizeof(sec), 0, EMBER_CFI_DEBUG_FRAME), 0);
	ck_assert_int_eq(ember_cfi_finish(&b, &r), 0);
	expect_row(&r, 0, 0x5000, EMBER_ROW_CFA_SP, 1, 0);
	expect_row(&r, 1, 0x5001, EMBER_ROW_CFA_SP, 2, 0);
	expect_row(&r, 2, 0x5020, EMBER_ROW_GAP, 0, 0);
	ember_unwind_rows_free(&r);
	ember_cfi_builder_free(&b);
}
END_TEST

START_TEST(hostile_sections_are_bounded)
{
	static const uint8_t deep[] = {0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a,
	                               0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x41, 0x0b};
	struct ember_cfi_builder b;
	struct ember_unwind_rows r;
	struct buf x = {0};
	uint8_t junk[300];

	/* Remember-state deeper than the unwinder's stack: INVALID, not a crash. */
	cie(&x, "zR", false);
	fde(&x, 0, 0x100, 0x10, deep, sizeof(deep));
	build(&x, 0, &r, &b);
	expect_row(&r, 0, 0x100, EMBER_ROW_INVALID, 0, 0);
	ember_unwind_rows_free(&r);
	ember_cfi_builder_free(&b);

	/* Every truncation of a valid section, and lengths that point past the end. */
	for (size_t n = 0; n <= x.n; n++) {
		ember_cfi_builder_init(&b, 0);
		ck_assert_int_eq(ember_cfi_parse(&b, x.b, n, 0, EMBER_CFI_EH_FRAME), 0);
		ck_assert_int_eq(ember_cfi_finish(&b, &r), 0);
		ember_unwind_rows_free(&r);
		ember_cfi_builder_free(&b);
	}
	x.b[x.n - 24] = 0xff; /* the FDE's length now runs past the section */
	ember_cfi_builder_init(&b, 0);
	ck_assert_int_eq(ember_cfi_parse(&b, x.b, x.n, 0, EMBER_CFI_EH_FRAME), 0);
	ck_assert_uint_ge(b.bad_entries, 1);
	ember_cfi_builder_free(&b);

	/* Noise: whatever it parses, the rows stay sorted. */
	srand(7);
	for (int round = 0; round < 2000; round++) {
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)rand();
		memcpy(junk, x.b, round % 64);
		ember_cfi_builder_init(&b, 1000);
		ember_cfi_parse(&b, junk, sizeof(junk), 0,
		                round & 1 ? EMBER_CFI_DEBUG_FRAME : EMBER_CFI_EH_FRAME);
		ck_assert_int_eq(ember_cfi_finish(&b, &r), 0);
		for (size_t i = 1; i < r.count; i++)
			ck_assert_uint_gt(r.rows[i].pc, r.rows[i - 1].pc);
		ember_unwind_rows_free(&r);
		ember_cfi_builder_free(&b);
	}
}
END_TEST

/* What libdw's CFI interpreter says about addr, in the terms of a row. */
static bool libdw_row(Dwarf_CFI *cfi, uint64_t addr, struct ember_unwind_row *out)
{
	Dwarf_Op mem[3], *ops, *cfa;
	size_t nops, ncfa;
	Dwarf_Addr start, end;
	Dwarf_Frame *f;
	bool signal;

	memset(out, 0, sizeof(*out));
	if (dwarf_cfi_addrframe(cfi, addr, &f)) {
		out->kind = EMBER_ROW_GAP;
		return true;
	}
	dwarf_frame_info(f, &start, &end, &signal);
	dwarf_frame_register(f, 16, mem, &ops, &nops);
	if (signal) {
		out->kind = EMBER_ROW_SIGNAL;
	} else if (!nops && ops == mem) {
		out->kind = EMBER_ROW_END;
	} else if (nops == 1 && ops[0].atom == DW_OP_regx && ops[0].number == 5) {
		/* The return address in rdi (glibc's vfork); the CFA is checked below. */
		if (dwarf_frame_cfa(f, &cfa, &ncfa) || ncfa != 1 || cfa[0].atom != DW_OP_bregx ||
		    cfa[0].number != 7 || cfa[0].number2) {
			free(f);
			return false;
		}
		out->kind = EMBER_ROW_RA_DI;
	} else if (!dwarf_frame_cfa(f, &cfa, &ncfa) && ncfa == 1 && cfa[0].atom == DW_OP_bregx &&
	           (cfa[0].number == 3 || cfa[0].number == 6 || cfa[0].number == 7)) {
		out->kind = cfa[0].number == 7   ? EMBER_ROW_CFA_SP
		            : cfa[0].number == 6 ? EMBER_ROW_CFA_FP
		                                 : EMBER_ROW_CFA_BX;
		out->cfa_slots = (int16_t)((int64_t)cfa[0].number2 / 8);
		dwarf_frame_register(f, 6, mem, &ops, &nops);
		if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa)
			out->fp_slot = (int8_t)((int64_t)ops[1].number / 8);
		/* rbx: saved at CFA + off, or anything else (lost); no ops: unchanged (libdw
		 * without the ABI's defaults says an unspecified rbx is undefined). */
		dwarf_frame_register(f, 3, mem, &ops, &nops);
		if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		    (int64_t)ops[1].number < 0 && (int64_t)ops[1].number % 8 == 0 &&
		    -(int64_t)ops[1].number / 8 <= EMBER_ROW_BX_SLOT_MAX)
			out->bx_slot = (uint8_t)(-(int64_t)ops[1].number / 8) & 0xf;
		else if (nops)
			out->bx_slot = EMBER_ROW_BX_LOST;
	} else {
		free(f);
		return false; /* an expression: rows say PLT or INVALID */
	}
	free(f);
	return true;
}

START_TEST(agrees_with_libdw_on_system_libraries)
{
	static const char *const files[] = {"/lib/x86_64-linux-gnu/libc.so.6",
	                                    "/lib64/ld-linux-x86-64.so.2", "/usr/bin/python3"};
	size_t compared = 0;

	elf_version(EV_CURRENT);
	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		struct ember_unwind_rows r;
		size_t kinds[EMBER_ROW_KIND_MAX] = {0}, disagree = 0, bx_saved = 0, bx_compared = 0;
		int fd = open(files[k], O_RDONLY);
		Dwarf_CFI *cfi;
		Elf *elf;

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ember_cfi_from_fd(fd, 0, &r), 0);
		ck_assert_uint_gt(r.count, 100);
		/* A cap on the rows (the memory budget's room): refused, not cut short. */
		{
			struct ember_unwind_rows capped;

			ck_assert_int_eq(ember_cfi_from_fd(fd, r.count / 4, &capped), -E2BIG);
			ck_assert_ptr_null(capped.rows);
			ck_assert_int_eq(ember_cfi_from_fd(fd, r.count + 64, &capped), 0);
			ck_assert_uint_eq(capped.count, r.count);
			ember_unwind_rows_free(&capped);
		}
		elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		cfi = dwarf_getcfi_elf(elf);
		ck_assert_ptr_nonnull(cfi);
		for (size_t i = 0; i < r.count; i++) {
			kinds[r.rows[i].kind]++;
			if (r.rows[i].bx_slot && r.rows[i].bx_slot != EMBER_ROW_BX_LOST)
				bx_saved++;
			if (i)
				ck_assert_uint_gt(r.rows[i].pc, r.rows[i - 1].pc);
		}
		for (size_t i = 0; i + 1 < r.count; i++) {
			uint64_t at[2] = {r.rows[i].pc, r.rows[i + 1].pc - 1};

			for (int j = 0; j < 2; j++) {
				const struct ember_unwind_row *got =
				    ember_unwind_rows_find(&r, at[j]);
				struct ember_unwind_row want;

				if (got->kind == EMBER_ROW_INVALID || !libdw_row(cfi, at[j], &want))
					continue;
				compared++;
				bx_compared += got->kind == EMBER_ROW_CFA_BX;
				if (got->kind != want.kind || got->cfa_slots != want.cfa_slots ||
				    got->fp_slot != want.fp_slot || got->bx_slot != want.bx_slot)
					disagree++;
			}
		}
		/* Rows either agree with libdw or are INVALID (large frames, other registers). */
		ck_assert_uint_eq(disagree, 0);
		ck_assert_uint_lt(kinds[EMBER_ROW_INVALID], r.count / 100 + 1);
		ck_assert_uint_ge(kinds[EMBER_ROW_PLT], 1);
		/* Most functions save rbx: their callers' is found (1,500 rows in ld.so). */
		ck_assert_uint_gt(bx_saved, r.count / 20);
		if (k == 1) {
			/* _dl_runtime_resolve_{fxsave,xsave,xsavec} (CFA = rbx + 32) and
			 * _dl_runtime_profile_* (rbx + 56), each checked at both its ends. */
			ck_assert_uint_ge(kinds[EMBER_ROW_CFA_BX], 3);
			ck_assert_uint_ge(bx_compared, 6);
			for (size_t i = 0; i < r.count; i++)
				if (r.rows[i].kind == EMBER_ROW_CFA_BX && r.rows[i].cfa_slots == 4)
					ck_assert_uint_eq(r.rows[i].bx_slot, 4); /* pushed first */
		}
		if (k == 0) {
			ck_assert_uint_ge(kinds[EMBER_ROW_SIGNAL], 1); /* __restore_rt */
			ck_assert_uint_ge(kinds[EMBER_ROW_END], 1);    /* clone, clone3 */
			ck_assert_uint_ge(kinds[EMBER_ROW_RA_DI], 1);  /* vfork */
		}
		dwarf_cfi_end(cfi); /* what dwarf_getcfi_elf made is the caller's to free */
		elf_end(elf);
		close(fd);
		ember_unwind_rows_free(&r);
	}
	ck_assert_uint_gt(compared, 10000);
}
END_TEST

START_TEST(not_elf)
{
	struct ember_unwind_rows r;
	static const char text[] = "not an ELF file";

	ck_assert_int_eq(ember_cfi_from_elf(text, sizeof(text), 0, &r), -ENOEXEC);
}
END_TEST

/*
 * A section of ncies CIEs, each followed by nops DW_CFA_nop instructions
 * (the bytes a CIE may legally hold), then nfdes FDEs naming them in turn.
 */
static uint8_t *many_fdes(size_t ncies, size_t nops, size_t nfdes, size_t *len)
{
	/* A CIE's length is rounded up to 4 bytes, as it is written below. */
	size_t cie_len = (4 + 1 + 3 + 3 + 1 + 1 + 5 + nops + 3) & ~(size_t)3;
	size_t fde_len = 4 + 4 + 4 + 1 + 3;
	size_t n = ncies * (4 + cie_len) + nfdes * (4 + fde_len), at = 0;
	uint8_t *x = calloc(1, n),
		head[] = {1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1};
	size_t cie_at[2];

	ck_assert_ptr_nonnull(x);
	ck_assert_uint_le(ncies, 2);
	for (size_t i = 0; i < ncies; i++) {
		cie_at[i] = at;
		memcpy(x + at, &(uint32_t){(uint32_t)cie_len}, 4);
		memcpy(x + at + 8, head, sizeof(head)); /* CIE id 0, then the rest; nops follow */
		at += 4 + cie_len;
	}
	for (size_t i = 0; i < nfdes; i++) {
		int32_t pcrel = (int32_t)(0x100000 + 16 * i - (at + 8));

		memcpy(x + at, &(uint32_t){(uint32_t)fde_len}, 4);
		memcpy(x + at + 4, &(uint32_t){(uint32_t)(at + 4 - cie_at[i % ncies])}, 4);
		memcpy(x + at + 8, &pcrel, 4);
		memcpy(x + at + 12, &(uint32_t){16}, 4);
		at += 4 + fde_len; /* augmentation length 0 and nops pad the rest */
	}
	*len = at;
	return x;
}

START_TEST(cie_work_is_bounded)
{
	struct ember_cfi_builder b;
	struct ember_unwind_rows r;
	size_t len;
	/* 1 MiB of CIE instructions and 50,000 FDEs: run once, not once per FDE. */
	uint8_t *x = many_fdes(1, 1u << 20, 50000, &len);

	ember_cfi_builder_init(&b, 0);
	ck_assert_int_eq(ember_cfi_parse(&b, x, len, 0, EMBER_CFI_EH_FRAME), 0);
	ck_assert_uint_eq(b.nfdes, 50000);
	ck_assert_uint_eq(b.bad_entries, 0);
	ck_assert_int_eq(ember_cfi_finish(&b, &r), 0);
	expect_row(&r, 0, 0x100000, EMBER_ROW_CFA_SP, 1, 0);
	ember_unwind_rows_free(&r);
	ember_cfi_builder_free(&b);
	free(x);

	/* Two such CIEs that the FDEs alternate between: re-reading them is capped. */
	x = many_fdes(2, 1u << 20, 50000, &len);
	ember_cfi_builder_init(&b, 0);
	ck_assert_int_eq(ember_cfi_parse(&b, x, len, 0, EMBER_CFI_EH_FRAME), 0);
	ck_assert_uint_ge(b.nfdes, 25000);
	ck_assert_uint_gt(b.bad_entries, 0);
	ember_cfi_builder_free(&b);
	free(x);
}
END_TEST

START_TEST(compressed_bomb_is_not_inflated)
{
	size_t zlen, len;
	void *z = mini_zlib_zeros(600u << 20, &zlen); /* 600 MiB of zeros in ~600 KiB */
	struct mini_section secs[] = {
	    {".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1000, "\xc3", 1, 0, 0, 0},
	    {".debug_frame", SHT_PROGBITS, SHF_COMPRESSED, 0, z, zlen, 0, 0, 0},
	};
	struct ember_unwind_rows r;
	struct rusage ru;
	uint8_t *img;

	mini_elf(secs, 2, NULL, 0, &img, &len);
	ck_assert_int_eq(ember_cfi_from_elf(img, len, 0, &r), -ENOENT);
	ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
	ck_assert_int_lt(ru.ru_maxrss, 200 * 1024); /* KiB: the 600 MiB were never allocated */
	free(img);
	free(z);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ehframe");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, prologue_body_epilogue);
	tcase_add_test(tc, special_rows_and_gaps);
	tcase_add_test(tc, rbx_rows);
	tcase_add_test(tc, debug_frame);
	tcase_add_test(tc, hostile_sections_are_bounded);
	tcase_add_test(tc, agrees_with_libdw_on_system_libraries);
	tcase_add_test(tc, not_elf);
	suite_add_tcase(s, tc);
	/* Hostile input that once took minutes or gigabytes: a tight CPU clock. */
	tc = tcase_create("bounded");
	ember_tcase_cpu_bound(tc);
	tcase_add_test(tc, cie_work_is_bounded);
	tcase_add_test(tc, compressed_bomb_is_not_inflated);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
