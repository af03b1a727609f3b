// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <stdio.h>
#include <stdlib.h>
#include "bpf/interp_rows.h"
#include "check_main.h"
#include "collector/table_loader.h"

#define B EMBER_UNWIND_BLOCK_ROWS

static union ember_msg table_msg(uint32_t slot, uint32_t op, uint32_t nrows)
{
	union ember_msg m;

	ember_msg_init(&m, EMBER_MSG_UNWIND_TABLE, 0);
	m.unwind_table.table = slot;
	m.unwind_table.op = op;
	m.unwind_table.nrows = nrows;
	return m;
}

static union ember_msg rows_msg(uint32_t slot, uint32_t first, uint32_t count)
{
	union ember_msg m;

	ember_msg_init(&m, EMBER_MSG_UNWIND_ROWS, 0);
	m.unwind_rows.table = slot;
	m.unwind_rows.first = first;
	m.unwind_rows.count = count;
	for (uint32_t i = 0; i < count; i++)
		m.unwind_rows.rows[i] = (struct ember_unwind_row){
		    .pc = 0x1000 + 16 * (first + i), .cfa_slots = 1, .kind = EMBER_ROW_CFA_SP};
	return m;
}

static union ember_msg proc_msg(uint32_t pid, uint32_t first, uint32_t count, uint32_t total)
{
	union ember_msg m;

	ember_msg_init(&m, EMBER_MSG_UNWIND_PROC, 0);
	m.unwind_proc.pid = pid;
	m.unwind_proc.first = first;
	m.unwind_proc.count = count;
	m.unwind_proc.total = total;
	for (uint32_t i = 0; i < count; i++)
		m.unwind_proc.mappings[i] =
		    (struct ember_unwind_mapping){.start = 0x10000ull * (first + i + 1),
		                                  .end = 0x10000ull * (first + i + 1) + 0x1000,
		                                  .table = i % 2 ? EMBER_UNWIND_NO_TABLE : 7};
	return m;
}

static int handle(struct ember_tables *t, union ember_msg m)
{
	return ember_tables_handle(t, &m);
}

/* The entry of a file (device 8:1, inode ino) with its table in slot, two executable segments. */
static union ember_msg file_msg(uint32_t op, uint64_t ino, uint32_t slot)
{
	union ember_msg m;

	ember_msg_init(&m, EMBER_MSG_UNWIND_FILE, 0);
	m.unwind_file.op = op;
	m.unwind_file.key = (struct ember_file_key){ino, 8u << 20 | 1, 0};
	m.unwind_file.file = (struct ember_file_entry){
	    .mtime_sec = 1700000000,
	    .mtime_nsec = 5,
	    .table = slot,
	    .size = 1 << 20,
	    .exe_start = 0x1000,
	    .nsegs = 2,
	    .segs = {{0x1000, 0x8000, 0}, {0x9000, 0xa000, 0x1000}},
	};
	return m;
}

/*
 * Which file a table is for: bounds and order, a slot that holds a loaded table. Without maps no
 * table loads: the entries are then of files without one (EMBER_UNWIND_NO_TABLE).
 */
static void check_file_validation(struct ember_tables *t, bool maps)
{
	uint32_t slot = maps ? 5 : EMBER_UNWIND_NO_TABLE;
	union ember_msg m;

#define REFUSED(change)                                                                            \
	do {                                                                                       \
		m = file_msg(EMBER_UNWIND_FILE_SET, 42, slot);                                     \
		change;                                                                            \
		ck_assert_msg(ember_tables_handle(t, &m) == -EPROTO, "accepted: %s", #change);     \
	} while (0)
	REFUSED(m.unwind_file.file.table = 5); /* slot 5 holds no table yet */
	ck_assert_int_eq(handle(t, table_msg(5, EMBER_UNWIND_TABLE_CREATE, B)), 0);
	REFUSED(m.unwind_file.file.table = 5); /* nor while it is built */
	ck_assert_int_eq(handle(t, rows_msg(5, 0, B)), 0);
	ck_assert_int_eq(handle(t, table_msg(5, EMBER_UNWIND_TABLE_COMMIT, 0)), 0);
	ck_assert_int_eq(handle(t, file_msg(EMBER_UNWIND_FILE_SET, 42, slot)), 0);
	ck_assert_int_eq(handle(t, file_msg(EMBER_UNWIND_FILE_SET, 43, EMBER_UNWIND_NO_TABLE)), 0);
	REFUSED(m.unwind_file.op = 0);
	REFUSED(m.unwind_file.op = 3);
	REFUSED(m.unwind_file.reserved = 1);
	REFUSED(m.unwind_file.key.reserved = 1);
	REFUSED(m.unwind_file.file.reserved = 1);
	REFUSED(m.unwind_file.file.table = 6); /* empty */
	REFUSED(m.unwind_file.file.table = EMBER_UNWIND_MAX_TABLES);
	REFUSED(m.unwind_file.file.nsegs = EMBER_UNWIND_FILE_SEGS + 1);
	REFUSED(m.unwind_file.file.segs[1].end = 0x9000);    /* empty */
	REFUSED(m.unwind_file.file.segs[1].start = 0x7000);  /* overlaps */
	REFUSED(m.unwind_file.file.segs[2].start = 0x10000); /* past nsegs */
	REFUSED(m.unwind_file.file.nsegs = 1);               /* ... so is [1] */
	REFUSED(m.unwind_file.op = EMBER_UNWIND_FILE_DROP; m.unwind_file.reserved = 2);
	/* Wrong but in bounds: any times, sizes and deltas (another file's slot, too). */
	m = file_msg(EMBER_UNWIND_FILE_SET, 44, slot);
	m.unwind_file.file.segs[0].delta = -0x7fffffff;
	m.unwind_file.file.mtime_sec = -1;
	ck_assert_int_eq(ember_tables_handle(t, &m), 0);
	ck_assert_int_eq(handle(t, file_msg(EMBER_UNWIND_FILE_DROP, 44, 0)), 0);
	ck_assert_int_eq(handle(t, file_msg(EMBER_UNWIND_FILE_DROP, 45, 0)), 0); /* none: fine */
#undef REFUSED
	/* A list's parts come from one read of the maps. */
	m = proc_msg(42, 0, 40, 60);
	m.unwind_proc.read_ns = 1;
	ck_assert_int_eq(ember_tables_handle(t, &m), 0);
	ck_assert_int_eq(handle(t, proc_msg(42, 40, 20, 60)), -EPROTO);
	/* The symbolizer drops a file's entry before its table; one left names an empty slot. */
	ck_assert_int_eq(handle(t, table_msg(5, EMBER_UNWIND_TABLE_DROP, 0)), 0);
}

/* A well-formed row, as the symbolizer builds it for CPython 3.12 (none to REMOVE). */
static union ember_msg py_msg(uint32_t pid, uint32_t op)
{
	struct ember_py_proc row = {
	    .eval_start = {0x7f0000010000, 0x7f000000f000},
	    .eval_end = {0x7f0000020000, 0x7f000000f100},
	    .tss_key = 0x7f0000400000 + 1548,
	    .tsd_offset = 0x318,
	    .tstate_frame = 56,
	    .cframe_frame = 0,
	    .code_units = 192,
	    .chain = EMBER_PY_CHAIN_CFRAME,
	    .entry = EMBER_PY_ENTRY_OWNER,
	    .instr = EMBER_PY_INSTR_POINTER,
	    .entry_owner = 3,
	    .frame_read = 72,
	    .frame_code = 0,
	    .frame_back = 8,
	    .frame_instr = 56,
	    .frame_entry = 70,
	    .code_read = 128,
	    .code_argcount = 52,
	    .code_firstlineno = 68,
	    .code_name = 120,
	    .code_filename = 112,
	    .version = 12,
	};
	union ember_msg m;

	ck_assert_int_eq(ember_msg_interp_row(&m, pid, EMBER_RUNTIME_PYTHON, op, &row,
	                                      op == EMBER_INTERP_ROW_SET ? sizeof(row) : 0),
	                 0);
	return m;
}

/* The generic checks of an interpreter row, before its runtime's own. */
static void check_interp_validation(struct ember_tables *t)
{
	union ember_msg m;

#define REFUSED(change)                                                                            \
	do {                                                                                       \
		m = py_msg(42, EMBER_INTERP_ROW_SET);                                              \
		change;                                                                            \
		ck_assert_msg(ember_tables_handle(t, &m) == -EPROTO, "accepted: %s", #change);     \
	} while (0)
	REFUSED(m.interp_row.pid = 0);
	REFUSED(m.interp_row.pid = 1u << 23);
	REFUSED(m.interp_row.op = 3);
	REFUSED(m.interp_row.op = 0);
	REFUSED(m.interp_row.reserved = 1);
	/* Unknown runtimes: none, past the last, a tag's largest. */
	REFUSED(m.interp_row.runtime = EMBER_RUNTIME_NONE);
	REFUSED(m.interp_row.runtime = EMBER_ROW_KINDS);
	REFUSED(m.interp_row.runtime = 15);
	REFUSED(m.interp_row.runtime = UINT32_MAX);
	/* Exactly the runtime's row size: a byte less or more is refused. */
	REFUSED(m.hdr.length -= 1);
	REFUSED(m.hdr.length += 8);
	REFUSED(m.hdr.length = EMBER_MSG_INTERP_ROW_HEADER);
	/* REMOVE carries no row. */
	REFUSED(m.interp_row.op = EMBER_INTERP_ROW_REMOVE);
	m = py_msg(42, EMBER_INTERP_ROW_REMOVE);
	m.hdr.length += 8;
	ck_assert_int_eq(ember_tables_handle(t, &m), -EPROTO);
	m = py_msg(42, EMBER_INTERP_ROW_REMOVE);
	m.interp_row.runtime = EMBER_ROW_KINDS;
	ck_assert_int_eq(ember_tables_handle(t, &m), -EPROTO);
#undef REFUSED
}

/* Each field out of bounds, one at a time: the collector refuses the row. */
/* A Ruby 3.1 row as Debian 12's libruby gives it. */
static union ember_msg rb_msg(uint32_t pid)
{
	struct ember_rb_proc row = {
	    .loop_start = {0x7f000024ebd0, 0x7f0000253060},
	    .loop_end = {0x7f0000253047, 0x7f0000253bca},
	    .modid_slot = 0x7f00003aea48,
	    .dtv_offset = 8,
	    .tls_offset = 8,
	    .dtv_shift = 4,
	    .ec_read = 24,
	    .ec_cfp = 0x10,
	    .cfp_read = 0x40,
	    .iseq_read = 0x18,
	    .body_read = 0x60,
	    .cme_read = 0x28,
	    .version = 0x31,
	};
	union ember_msg m;

	ck_assert_int_eq(ember_msg_interp_row(&m, pid, EMBER_RUNTIME_RUBY, EMBER_INTERP_ROW_SET,
	                                      &row, sizeof(row)),
	                 0);
	return m;
}

static void check_rb_validation(struct ember_tables *t)
{
	struct ember_rb_proc *r;
	union ember_msg m;

#define REFUSED(change)                                                                            \
	do {                                                                                       \
		m = rb_msg(42);                                                                    \
		r = (struct ember_rb_proc *)m.interp_row.row;                                      \
		change;                                                                            \
		ck_assert_msg(ember_tables_handle(t, &m) == -EPROTO, "accepted: %s", #change);     \
	} while (0)
	ck_assert_int_eq(handle(t, rb_msg(42)), 0);
	REFUSED(r->loop_end[1] = 0); /* both parts of the loop are needed */
	REFUSED(r->loop_end[0] = r->loop_start[0]);
	REFUSED(r->loop_end[0] = r->loop_start[0] + EMBER_RB_MAX_LOOP + 1);
	REFUSED(r->loop_start[1] = 1ull << 60; r->loop_end[1] = (1ull << 60) + 10);
	REFUSED(r->reserved[6] = 1);
#undef REFUSED
	/* What the walker bounds itself is not the collector's to refuse (row_ruby.c). */
	m = rb_msg(42);
	r = (struct ember_rb_proc *)m.interp_row.row;
	r->cfp_read = 255;
	r->ec_read = 0;
	r->dtv_shift = 200;
	r->modid_slot = 3;
	ck_assert_int_eq(ember_tables_handle(t, &m), 0);
}

/* A PHP 8.2 row as Debian 12's php8.2 gives it. */
static union ember_msg php_msg(uint32_t pid)
{
	struct ember_php_proc row = {
	    .loop_start = 0x55550036cbe0,
	    .loop_end = 0x555500375f0e,
	    .current_ex = 0x55550058b048,
	    .ex_read = 0x38,
	    .ex_func = 0x18,
	    .ex_call_info = 0x28,
	    .ex_prev = 0x30,
	    .fn_read = 0xa8,
	    .version = 0x82,
	};
	union ember_msg m;

	ck_assert_int_eq(ember_msg_interp_row(&m, pid, EMBER_RUNTIME_PHP, EMBER_INTERP_ROW_SET,
	                                      &row, sizeof(row)),
	                 0);
	return m;
}

static void check_php_validation(struct ember_tables *t)
{
	struct ember_php_proc *r;
	union ember_msg m;

#define REFUSED(change)                                                                            \
	do {                                                                                       \
		m = php_msg(42);                                                                   \
		r = (struct ember_php_proc *)m.interp_row.row;                                     \
		change;                                                                            \
		ck_assert_msg(ember_tables_handle(t, &m) == -EPROTO, "accepted: %s", #change);     \
	} while (0)
	ck_assert_int_eq(handle(t, php_msg(42)), 0);
	REFUSED(r->loop_end = 0);
	REFUSED(r->loop_end = r->loop_start);
	REFUSED(r->loop_end = r->loop_start + EMBER_PHP_MAX_LOOP + 1);
	REFUSED(r->loop_start = 1ull << 60; r->loop_end = (1ull << 60) + 10);
	REFUSED(r->reserved[0] = 1);
#undef REFUSED
	/* Windows and offsets are the walker's to bound (php_read, php_u64). */
	m = php_msg(42);
	r = (struct ember_php_proc *)m.interp_row.row;
	r->fn_read = 255;
	r->ex_func = 250;
	r->current_ex = 0xffff800000001000ull;
	ck_assert_int_eq(ember_tables_handle(t, &m), 0);
}

/* A JDK 17 row as a Debian 12 JVM gives it: three code heaps of a 240 MiB code cache. */
static union ember_msg jvm_msg(uint32_t pid)
{
	struct ember_jvm_proc row = {
	    .heap_start = {0x7f00a9400000, 0x7f00b0938000, 0x7f00b0ec7000},
	    .heap_end = {0x7f00b0938000, 0x7f00b0ec7000, 0x7f00b8400000},
	    .segmap = {0x7f00c1000000, 0x7f00c1100000, 0x7f00c1200000},
	    .segment_shift = 7,
	    .heap_block = 16,
	    .complete_width = 4,
	    .version = 17,
	    .blob_name = 96,
	    .blob_frame_complete = 20,
	    .blob_frame_size = 28,
	    .blob_code_begin = 32,
	    .blob_code_end = 40,
	    .nm_compile_id = 304,
	    .nm_orig_pc_offset = 300,
	    .nm_deopt = 128,
	    .method_const_method = 8,
	    .const_method_size = 48,
	};
	union ember_msg m;

	ck_assert_int_eq(ember_msg_interp_row(&m, pid, EMBER_RUNTIME_JVM, EMBER_INTERP_ROW_SET,
	                                      &row, sizeof(row)),
	                 0);
	return m;
}

static void check_jvm_validation(struct ember_tables *t)
{
	struct ember_jvm_proc *r;
	union ember_msg m;

#define REFUSED(change)                                                                            \
	do {                                                                                       \
		m = jvm_msg(42);                                                                   \
		r = (struct ember_jvm_proc *)m.interp_row.row;                                     \
		change;                                                                            \
		ck_assert_msg(ember_tables_handle(t, &m) == -EPROTO, "accepted: %s", #change);     \
	} while (0)
	ck_assert_int_eq(handle(t, jvm_msg(42)), 0);
	REFUSED(r->heap_end[0] = 0; r->heap_start[0] = 0); /* no heap: nothing to walk */
	REFUSED(r->heap_end[1] = r->heap_start[1]);
	REFUSED(r->heap_end[2] = r->heap_start[2] + EMBER_JVM_MAX_HEAP + 1);
	REFUSED(r->heap_start[2] = 1ull << 60; r->heap_end[2] = (1ull << 60) + 4096);
	REFUSED(r->heap_start[2] = 4096; r->heap_end[2] = 0); /* a start without an end */
	REFUSED(r->reserved[5] = 1);
#undef REFUSED
	/* One heap (-XX:-SegmentedCodeCache), the others empty: a row. */
	m = jvm_msg(42);
	r = (struct ember_jvm_proc *)m.interp_row.row;
	r->heap_start[1] = r->heap_end[1] = r->heap_start[2] = r->heap_end[2] = 0;
	ck_assert_int_eq(ember_tables_handle(t, &m), 0);
	/* Offsets and segment maps are the walker's to bound (jvm_u64, bpf_probe_read_user). */
	m = jvm_msg(42);
	r = (struct ember_jvm_proc *)m.interp_row.row;
	r->blob_name = 0xffff;
	r->segment_shift = 200;
	r->segmap[0] = 0xffff800000001000ull;
	ck_assert_int_eq(ember_tables_handle(t, &m), 0);
}

static void check_py_validation(struct ember_tables *t)
{
	struct ember_py_proc *r;
	union ember_msg m;

#define REFUSED(change)                                                                            \
	do {                                                                                       \
		m = py_msg(42, EMBER_INTERP_ROW_SET);                                              \
		r = (struct ember_py_proc *)m.interp_row.row;                                      \
		change;                                                                            \
		ck_assert_msg(ember_tables_handle(t, &m) == -EPROTO, "accepted: %s", #change);     \
	} while (0)
	(void)r;
	ck_assert_int_eq(handle(t, py_msg(42, EMBER_INTERP_ROW_SET)), 0);
	REFUSED(r->eval_end[0] = 0);                /* no interpreter loop */
	REFUSED(r->eval_end[0] = r->eval_start[0]); /* empty */
	REFUSED(r->eval_end[0] = r->eval_start[0] + EMBER_PY_MAX_EVAL + 1);
	REFUSED(r->eval_end[1] = 0); /* a start without an end */
	REFUSED(r->eval_start[1] = 1ull << 60; r->eval_end[1] = (1ull << 60) + 10);
	REFUSED(r->tss_key = 0);
	REFUSED(r->tss_key = 0xffff800000001000ull); /* the kernel's */
	REFUSED(r->tss_key += 2);                    /* misaligned */
	REFUSED(r->tss_key = UINT64_MAX - 3);        /* its 4 bytes wrap past the top */
	REFUSED(r->tsd_offset = EMBER_PY_MAX_TSD + 1);
	REFUSED(r->tstate_frame = EMBER_PY_MAX_TSTATE + 1);
	REFUSED(r->cframe_frame = EMBER_PY_MAX_TSTATE + 1);
	REFUSED(r->code_units = EMBER_PY_MAX_CODE + 1);
	REFUSED(r->chain = 0);
	REFUSED(r->chain = EMBER_PY_CHAIN_MAX);
	REFUSED(r->entry = EMBER_PY_ENTRY_MAX);
	REFUSED(r->instr = 0);
	REFUSED(r->frame_code = 65); /* 8 bytes past the 72 read */
	REFUSED(r->frame_back = 70);
	REFUSED(r->frame_instr = 66);
	REFUSED(r->frame_entry = 72);
	REFUSED(r->code_argcount = 125);
	REFUSED(r->code_firstlineno = 126);
	REFUSED(r->code_name = 121);
	REFUSED(r->code_filename = 255);
	REFUSED(r->reserved[3] = 1);
#undef REFUSED
	/* f_lasti is an int: 4 bytes at the end of the window fit. */
	m = py_msg(42, EMBER_INTERP_ROW_SET);
	r = (struct ember_py_proc *)m.interp_row.row;
	r->instr = EMBER_PY_INSTR_LASTI;
	r->frame_instr = 68;
	ck_assert_int_eq(ember_tables_handle(t, &m), 0);
	/* No cold part is fine. */
	m = py_msg(43, EMBER_INTERP_ROW_SET);
	r = (struct ember_py_proc *)m.interp_row.row;
	r->eval_start[1] = r->eval_end[1] = 0;
	ck_assert_int_eq(ember_tables_handle(t, &m), 0);
	ck_assert_int_eq(handle(t, py_msg(43, EMBER_INTERP_ROW_REMOVE)), 0);
}

/* The checks do not depend on the maps: run them without (fds -1) and, as root, with. */
static void check_validation(struct ember_tables *t)
{
	union ember_msg m;

	ck_assert_int_eq(handle(t, rows_msg(7, 0, 3)), -EPROTO); /* no table being built */
	ck_assert_int_eq(
	    handle(t, table_msg(EMBER_UNWIND_MAX_TABLES, EMBER_UNWIND_TABLE_CREATE, 3)), -EPROTO);
	ck_assert_int_eq(handle(t, table_msg(7, EMBER_UNWIND_TABLE_CREATE, 0)), -EPROTO);
	ck_assert_int_eq(
	    handle(t, table_msg(7, EMBER_UNWIND_TABLE_CREATE, EMBER_UNWIND_MAX_TABLE_ROWS + 1)),
	    -EPROTO);
	ck_assert_int_eq(handle(t, table_msg(7, 99, 3)), -EPROTO);

	ck_assert_int_eq(handle(t, table_msg(7, EMBER_UNWIND_TABLE_CREATE, B + 1)), -EPROTO);
	ck_assert_int_eq(handle(t, table_msg(7, EMBER_UNWIND_TABLE_CREATE, 2 * B)), 0);
	ck_assert_int_eq(handle(t, table_msg(8, EMBER_UNWIND_TABLE_CREATE, 2 * B)), -EPROTO);
	ck_assert_int_eq(handle(t, rows_msg(7, B, B)), -EPROTO);     /* out of order */
	ck_assert_int_eq(handle(t, rows_msg(7, 0, 3 * B)), -EPROTO); /* past nrows */
	ck_assert_int_eq(handle(t, rows_msg(7, 0, 0)), -EPROTO);
	ck_assert_int_eq(handle(t, rows_msg(7, 0, B - 1)), -EPROTO); /* not whole blocks */
	m = rows_msg(7, 0, B);
	m.unwind_rows.rows[1].kind = EMBER_ROW_KIND_MAX;
	ck_assert_int_eq(ember_tables_handle(t, &m), -EPROTO);
	m = rows_msg(7, 0, B);
	m.unwind_rows.rows[1].pc = 0x10; /* unsorted */
	ck_assert_int_eq(ember_tables_handle(t, &m), -EPROTO);
	m = rows_msg(7, 0, B);
	m.unwind_rows.rows[0].cfa_slots = 0; /* CFA at SP: the return address below the stack */
	ck_assert_int_eq(ember_tables_handle(t, &m), -EPROTO);
	m = rows_msg(7, 0, B);
	m.unwind_rows.rows[0].fp_slot = 3; /* a saved FP above the CFA */
	ck_assert_int_eq(ember_tables_handle(t, &m), -EPROTO);
	m = rows_msg(7, 0, B);
	m.unwind_rows.rows[B - 1] =
	    (struct ember_unwind_row){.pc = 0x100000, .kind = EMBER_ROW_PLT, .cfa_slots = 16};
	ck_assert_int_eq(ember_tables_handle(t, &m), -EPROTO);
	m = rows_msg(7, 0, B);
	m.unwind_rows.rows[2].kind = EMBER_ROW_CFA_BX;
	m.unwind_rows.rows[2].cfa_slots = 0; /* CFA at BX: no frame either */
	ck_assert_int_eq(ember_tables_handle(t, &m), -EPROTO);
	m.unwind_rows.rows[2].cfa_slots = 4; /* glibc's _dl_runtime_resolve, rbx pushed first */
	m.unwind_rows.rows[2].bx_slot = 4;
	m.unwind_rows.rows[3].bx_slot = EMBER_ROW_BX_LOST;
	ck_assert_int_eq(ember_tables_handle(t, &m), 0);
	ck_assert_int_eq(handle(t, table_msg(7, EMBER_UNWIND_TABLE_COMMIT, 0)),
	                 -EPROTO); /* 1 missing */
	ck_assert_int_eq(handle(t, rows_msg(7, B, B)), 0);
	ck_assert_int_eq(handle(t, table_msg(7, EMBER_UNWIND_TABLE_COMMIT, 0)), 0);

	ck_assert_int_eq(handle(t, proc_msg(0, 0, 1, 1)), -EPROTO);
	ck_assert_int_eq(handle(t, proc_msg(1u << 23, 0, 1, 1)), -EPROTO);
	ck_assert_int_eq(handle(t, proc_msg(42, 0, 1, EMBER_UNWIND_MAX_MAPPINGS + 1)), -EPROTO);
	ck_assert_int_eq(handle(t, proc_msg(42, 0, 5, 4)), -EPROTO);
	m = proc_msg(42, 0, 3, 3);
	m.unwind_proc.mappings[2].start = m.unwind_proc.mappings[1].start; /* overlap */
	ck_assert_int_eq(ember_tables_handle(t, &m), -EPROTO);
	m = proc_msg(42, 0, 3, 3);
	m.unwind_proc.mappings[0].table = EMBER_UNWIND_MAX_TABLES;
	ck_assert_int_eq(ember_tables_handle(t, &m), -EPROTO);
	m = proc_msg(42, 0, 3, 3);
	m.unwind_proc.mappings[0].end = m.unwind_proc.mappings[0].start;
	ck_assert_int_eq(ember_tables_handle(t, &m), -EPROTO);
	/* In two parts, in order; a part of another process in between is refused. */
	ck_assert_int_eq(handle(t, proc_msg(42, 0, 40, EMBER_UNWIND_MAX_MAPPINGS)), 0);
	ck_assert_int_eq(
	    handle(t, proc_msg(43, 40, EMBER_UNWIND_MAX_MAPPINGS - 40, EMBER_UNWIND_MAX_MAPPINGS)),
	    -EPROTO);
	ck_assert_int_eq(
	    handle(t, proc_msg(42, 40, EMBER_UNWIND_MAX_MAPPINGS - 40, EMBER_UNWIND_MAX_MAPPINGS)),
	    0);
	ck_assert_int_eq(handle(t, proc_msg(42, 0, 0, 0)), 0); /* forget it */
	ck_assert_int_eq(handle(t, table_msg(7, EMBER_UNWIND_TABLE_DROP, 0)), 0);
}

/* The checks every runtime's row uses: fields inside their windows, the loop's ranges. */
START_TEST(row_checks)
{
	const uint64_t fits[][3] = {{0, 8, 8}, {120, 8, 128}, {128, 0, 128}, {0, 0, 0}},
		       past[][3] = {{121, 8, 128}}, over[][3] = {{0, 9, 8}},
		       wraps[][3] = {{UINT64_MAX - 3, 4, 1ull << 47}, {UINT64_MAX, 1, 10}};
	__u64 start[3] = {0x1000, 0x3000, 0}, end[3] = {0x2000, 0x3100, 0};

	ck_assert(ember_row_fields_ok(fits, 4));
	ck_assert(ember_row_fields_ok(past, 0)); /* none */
	ck_assert(!ember_row_fields_ok(past, 1));
	ck_assert(!ember_row_fields_ok(over, 1));
	ck_assert(!ember_row_fields_ok(wraps, 1));
	ck_assert(!ember_row_fields_ok(wraps + 1, 1));
	/* Two required, the third optional and absent. */
	ck_assert(ember_row_ranges_ok(start, end, 3, 2, 0x4000, 0x1000));
	ck_assert(!ember_row_ranges_ok(start, end, 3, 3, 0x4000, 0x1000)); /* required */
	ck_assert(!ember_row_ranges_ok(start, end, 3, 2, 0x30ff, 0x1000)); /* past the limit */
	ck_assert(ember_row_ranges_ok(start, end, 3, 2, 0x3100, 0x1000));  /* ends at it */
	ck_assert(!ember_row_ranges_ok(start, end, 3, 2, 0x4000, 0xfff));  /* too long */
	start[2] = 0x5000; /* a start without an end */
	ck_assert(!ember_row_ranges_ok(start, end, 3, 2, UINT64_MAX, UINT64_MAX));
	start[2] = 0;
	end[1] = start[1]; /* empty, not absent */
	ck_assert(!ember_row_ranges_ok(start, end, 3, 1, 0x4000, 0x1000));
	end[1] = start[1] - 1; /* reversed */
	ck_assert(!ember_row_ranges_ok(start, end, 3, 1, 0x4000, 0x1000));
	start[1] = end[1] = 0; /* the first alone */
	ck_assert(ember_row_ranges_ok(start, end, 3, 1, 0x4000, 0x1000));
	start[0] = 0; /* [0, end) is a range */
	ck_assert(ember_row_ranges_ok(start, end, 3, 1, 0x4000, 0x2000));
}
END_TEST

START_TEST(validation_without_maps)
{
	struct ember_tables t;

	int none[EMBER_PROC_MAPS];

	memset(none, -1, sizeof(none));
	ck_assert_int_eq(ember_tables_init(&t, -1, -1, -1, none, 0), 0);
	check_validation(&t);
	check_file_validation(&t, false);
	check_interp_validation(&t);
	check_py_validation(&t);
	check_rb_validation(&t);
	check_php_validation(&t);
	check_jvm_validation(&t);
	ember_tables_free(&t);
}
END_TEST

START_TEST(loads_and_forgets_with_maps)
{
	LIBBPF_OPTS(bpf_map_create_opts, hash_opts, .map_flags = BPF_F_NO_PREALLOC);
	struct ember_unwind_block_key key = {7, 1}, cut = {9, 0};
	struct ember_unwind_block blk;
	struct ember_unwind_proc proc;
	struct ember_tables t;
	uint32_t slot = 7, pid = 42;
	uint64_t entry; /* a table slot's: its blocks, and its generation above them */
	struct ember_py_proc py_row;
	struct ember_file_key fkey = {42, 8u << 20 | 1, 0};
	struct ember_file_entry fentry;
	int tables, blocks, procs, index, py_procs, tctx_procs, files, proc_fds[EMBER_PROC_MAPS];
	struct ember_tctx_proc tctx = {.offset = -8, .mode = EMBER_TCTX_LE}, tctx_got;
	union ember_msg m;
	uint32_t runtime;

	/* Creating maps needs CAP_BPF; the checks above ran without it. */
	if (geteuid() != 0)
		EMBER_SKIP("not root: BPF map loading not tested (run as root)");
	tables = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_tables", 4, 8, 16, NULL);
	blocks =
	    bpf_map_create(BPF_MAP_TYPE_HASH, "t_blocks", sizeof(key), sizeof(blk), 64, &hash_opts);
	procs = bpf_map_create(BPF_MAP_TYPE_HASH, "t_procs", 4, sizeof(struct ember_unwind_proc),
	                       64, &hash_opts);
	ck_assert_int_ge(tables, 0);
	ck_assert_int_ge(blocks, 0);
	index = bpf_map_create(BPF_MAP_TYPE_HASH, "t_index", 4, 4, 64, &hash_opts);
	py_procs = bpf_map_create(BPF_MAP_TYPE_HASH, "t_py", 4, sizeof(struct ember_py_proc), 64,
	                          &hash_opts);
	files = bpf_map_create(BPF_MAP_TYPE_HASH, "t_files", sizeof(fkey), sizeof(fentry), 64,
	                       &hash_opts);
	ck_assert_int_ge(procs, 0);
	ck_assert_int_ge(index, 0);
	ck_assert_int_ge(py_procs, 0);
	tctx_procs = bpf_map_create(BPF_MAP_TYPE_HASH, "t_tctx", 4, sizeof(tctx), 64, &hash_opts);
	ck_assert_int_ge(files, 0);
	ck_assert_int_ge(tctx_procs, 0);
	memset(proc_fds, -1, sizeof(proc_fds));
	proc_fds[1 + EMBER_ROW_THREAD_CTX] = tctx_procs;
	proc_fds[0] = procs;
	proc_fds[1] = index;
	proc_fds[1 + EMBER_RUNTIME_PYTHON] = py_procs;
	ck_assert_int_eq(ember_tables_init(&t, tables, blocks, files, proc_fds, 0), 0);
	check_validation(&t);
	check_file_validation(&t, true);
	check_interp_validation(&t);
	check_py_validation(&t);
	/* The files named stand as the last messages left them. */
	ck_assert_int_eq(bpf_map_lookup_elem(files, &fkey, &fentry), 0);
	ck_assert_uint_eq(fentry.table, 5);
	ck_assert_uint_eq(fentry.segs[1].start, 0x9000);
	fkey.ino = 43;
	ck_assert_int_eq(bpf_map_lookup_elem(files, &fkey, &fentry), 0);
	ck_assert_uint_eq(fentry.table, EMBER_UNWIND_NO_TABLE);
	fkey.ino = 44;
	ck_assert_int_ne(bpf_map_lookup_elem(files, &fkey, &fentry), 0);
	/* The last row accepted for 42 is loaded, and the index names its runtime; 43's row was
	 * removed (its index entry stays until it exits: a runtime without its row is not
	 * walked). */
	ck_assert_int_eq(bpf_map_lookup_elem(py_procs, &pid, &py_row), 0);
	ck_assert_uint_eq(py_row.frame_instr, 68);
	ck_assert_int_eq(bpf_map_lookup_elem(index, &pid, &runtime), 0);
	ck_assert_uint_eq(runtime, EMBER_RUNTIME_PYTHON);
	ck_assert_int_ne(bpf_map_lookup_elem(py_procs, &(uint32_t){43}, &py_row), 0);
	/* A thread-context row is loaded beside the runtime's and never indexed: the index
	 * still names 42's runtime, and 44, which has no runtime, gets no entry. */
	for (uint32_t p = 42; p <= 44; p += 2) {
		ck_assert_int_eq(ember_msg_interp_row(&m, p, EMBER_ROW_THREAD_CTX,
		                                      EMBER_INTERP_ROW_SET, &tctx, sizeof(tctx)),
		                 0);
		ck_assert_int_eq(handle(&t, m), 0);
		ck_assert_int_eq(bpf_map_lookup_elem(tctx_procs, &p, &tctx_got), 0);
		ck_assert_int_eq(tctx_got.offset, -8);
	}
	ck_assert_int_eq(bpf_map_lookup_elem(index, &pid, &runtime), 0);
	ck_assert_uint_eq(runtime, EMBER_RUNTIME_PYTHON);
	ck_assert_int_ne(bpf_map_lookup_elem(index, &(uint32_t){44}, &runtime), 0);
	tctx.reserved[0] = 1; /* reserved bytes must be 0 */
	ck_assert_int_eq(ember_msg_interp_row(&m, 44, EMBER_ROW_THREAD_CTX, EMBER_INTERP_ROW_SET,
	                                      &tctx, sizeof(tctx)),
	                 0);
	ck_assert_int_eq(handle(&t, m), -EPROTO);
	ck_assert_uint_eq(t.tables_loaded, 2); /* 7 and 5 */
	ck_assert_uint_eq(t.failures, 0);
	/* Dropped at the end of the checks: the slot is empty, the blocks gone. */
	ck_assert_int_eq(bpf_map_lookup_elem(tables, &slot, &entry), 0);
	ck_assert_uint_eq(entry, 0);
	ck_assert_int_ne(bpf_map_lookup_elem(blocks, &key, &blk), 0);

	ck_assert_int_eq(handle(&t, table_msg(7, EMBER_UNWIND_TABLE_CREATE, 2 * B)), 0);
	ck_assert_int_eq(handle(&t, rows_msg(7, 0, 2 * B)), 0);
	ck_assert_int_eq(bpf_map_lookup_elem(tables, &slot, &entry), 0);
	ck_assert_uint_eq(entry, 0); /* not in use before COMMIT */
	ck_assert_int_eq(handle(&t, table_msg(7, EMBER_UNWIND_TABLE_COMMIT, 0)), 0);
	ck_assert_int_eq(bpf_map_lookup_elem(tables, &slot, &entry), 0);
	ck_assert_uint_eq((uint32_t)entry, 2);
	ck_assert_uint_eq(entry >> 32, 3); /* the third table written (7 and 5 before) */
	/* The same slot written again is a new table to the unwinder's row cache. */
	ck_assert_int_eq(handle(&t, table_msg(7, EMBER_UNWIND_TABLE_CREATE, 2 * B)), 0);
	ck_assert_int_eq(handle(&t, rows_msg(7, 0, 2 * B)), 0);
	ck_assert_int_eq(handle(&t, table_msg(7, EMBER_UNWIND_TABLE_COMMIT, 0)), 0);
	ck_assert_int_eq(bpf_map_lookup_elem(tables, &slot, &entry), 0);
	ck_assert_uint_eq((uint32_t)entry, 2);
	ck_assert_uint_eq(entry >> 32, 4);
	ck_assert_int_eq(bpf_map_lookup_elem(blocks, &key, &blk), 0);
	ck_assert_uint_eq(blk.rows[0].pc, 0x1000 + 16 * B);
	ck_assert_uint_eq(t.rows_loaded, 2 * B);
	ck_assert_int_eq(handle(&t, proc_msg(42, 0, 3, 3)), 0);
	ck_assert_int_eq(bpf_map_lookup_elem(procs, &pid, &proc), 0);
	ck_assert_uint_eq(proc.count, 3);
	ck_assert_uint_eq(proc.mappings[2].start, 0x30000);
	/* An exit deletes its process from the maps that ever held one (ring_drain.c): these. */
	ck_assert_uint_eq(t.proc_maps_set, 1u | 1u << 1 | 1u << (1 + EMBER_RUNTIME_PYTHON) |
	                                       1u << (1 + EMBER_ROW_THREAD_CTX));
	/* A budget of three blocks: a second table of two does not fit and is refused, counted. */
	t.max_rows = 3 * B;
	ck_assert_int_eq(handle(&t, table_msg(8, EMBER_UNWIND_TABLE_CREATE, 2 * B)), 0);
	ck_assert_int_eq(handle(&t, rows_msg(8, 0, 2 * B)), 0);
	ck_assert_int_eq(handle(&t, table_msg(8, EMBER_UNWIND_TABLE_COMMIT, 0)), 0);
	slot = 8;
	ck_assert_int_eq(bpf_map_lookup_elem(tables, &slot, &entry), 0);
	ck_assert_uint_eq(entry, 0);
	ck_assert_uint_eq(t.failures, 1);
	ck_assert_uint_eq(t.rows_loaded, 2 * B);

	/* A table cut off before its COMMIT by the symbolizer going away: its blocks go too,
	 * or every reconnect could leave some in the map until it is full. */
	ck_assert_int_eq(handle(&t, table_msg(9, EMBER_UNWIND_TABLE_CREATE, B)), 0);
	ck_assert_int_eq(handle(&t, rows_msg(9, 0, B)), 0);
	cut.table = 9;
	ck_assert_int_eq(bpf_map_lookup_elem(blocks, &cut, &blk), 0);

	/* The symbolizer went away: nothing it loaded stays. */
	ember_tables_reset(&t);
	slot = 7;
	ck_assert_int_eq(bpf_map_lookup_elem(tables, &slot, &entry), 0);
	ck_assert_uint_eq(entry, 0);
	ck_assert_int_ne(bpf_map_lookup_elem(blocks, &key, &blk), 0);
	ck_assert_int_ne(bpf_map_lookup_elem(procs, &pid, &proc), 0);
	ck_assert_int_ne(bpf_map_lookup_elem(blocks, &cut, &blk), 0);
	ck_assert_int_ne(bpf_map_lookup_elem(py_procs, &pid, &py_row), 0);
	ck_assert_int_ne(bpf_map_lookup_elem(tctx_procs, &pid, &tctx_got), 0);
	ck_assert_int_ne(bpf_map_lookup_elem(index, &pid, &runtime), 0);
	ck_assert_int_ne(bpf_map_lookup_elem(index, &(uint32_t){43}, &runtime), 0);
	fkey.ino = 42;
	ck_assert_int_ne(bpf_map_lookup_elem(files, &fkey, &fentry), 0);
	fkey.ino = 43;
	ck_assert_int_ne(bpf_map_lookup_elem(files, &fkey, &fentry), 0);
	ck_assert_uint_eq(t.rows_loaded, 0);
	ember_tables_free(&t);
	close(files);
	close(py_procs);
	close(tctx_procs);
	close(index);
	close(tables);
	close(blocks);
	close(procs);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("tables");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, row_checks);
	tcase_add_test(tc, validation_without_maps);
	tcase_add_test(tc, loads_and_forgets_with_maps);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
