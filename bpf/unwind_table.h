/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compact unwind tables: what the symbolizer builds from .eh_frame and
 * .debug_frame, what the collector checks and loads into BPF maps, and what
 * the unwinder in bpf/unwind.bpf.h walks (x86-64).
 *
 * A table belongs to one file and is shared by every process that maps it.
 * The BPF maps: unwind_tables (slot -> number of blocks, 0: empty, and in the
 * high 32 bits the table's generation: the collector's count of tables
 * written, so a slot written again is a new table to the unwinder's row cache),
 * unwind_blocks (hash: block key -> block of rows), unwind_files (a file's
 * device and inode -> struct ember_file_entry: its table, found by the
 * kernel from the file behind a pc) and unwind_procs (tgid -> struct
 * ember_unwind_proc: a process's mappings, for what the kernel cannot find
 * by file).
 * Its rows are sorted by pc; a row covers the addresses from its pc up to
 * the next row's pc. Addresses are the file's ELF virtual addresses; a
 * process's mapping tells the unwinder the bias to subtract from a pc.
 */
#ifndef EMBER_BPF_UNWIND_TABLE_H
#define EMBER_BPF_UNWIND_TABLE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define EMBER_UNWIND_MAX_TABLES     65536      /* table slots (files loaded at once) */
#define EMBER_UNWIND_MAX_TABLE_ROWS (4u << 20) /* rows of one table */
/*
 * Rows are stored in blocks of EMBER_UNWIND_BLOCK_ROWS, each an element of a
 * hash map that allocates memory only for the blocks in use: tables grow and
 * shrink at run time without creating maps (which would need CAP_BPF). Its
 * cap on blocks is not an allocation, but the map's buckets are: 16 bytes a
 * block (4 MiB; at 1 << 19, 8 MiB were a quarter of the maps' memory on a
 * quiet host of 1,000 processes).
 */
#define EMBER_UNWIND_BLOCK_ROWS    128
#define EMBER_UNWIND_MAX_BLOCKS    (1u << 18) /* 32 Mi rows (256 MiB) at most */
#define EMBER_UNWIND_BLOCK_STEPS   16         /* > log2(MAX_TABLE_ROWS / BLOCK_ROWS) */
#define EMBER_UNWIND_ROW_STEPS     8          /* > log2(BLOCK_ROWS) */
#define EMBER_UNWIND_HINTS         4096       /* per-CPU block hints (a power of 2) */
#define EMBER_UNWIND_ROW_CACHE     256        /* per-CPU rows found (a power of 2, one page) */
#define EMBER_UNWIND_MAX_MAPPINGS  64         /* executable mappings of one process's list */
#define EMBER_UNWIND_MAPPING_STEPS 7          /* > log2(EMBER_UNWIND_MAX_MAPPINGS) */
#define EMBER_UNWIND_MAX_PROCS     32768      /* processes with tables at once */
#define EMBER_UNWIND_MAX_FILES     65536      /* files with an entry in unwind_files */
#define EMBER_UNWIND_FILE_SEGS     4          /* executable segments of one file */
#define EMBER_UNWIND_NO_TABLE      0xffffffffu

/* What a row says about the addresses it covers. */
enum ember_row_kind {
	EMBER_ROW_INVALID = 0, /* CFI a row cannot express: stop here */
	EMBER_ROW_GAP,         /* no CFI covers these addresses: use the frame pointer */
	EMBER_ROW_CFA_SP,      /* CFA = SP + 8 * cfa_slots */
	EMBER_ROW_CFA_FP,      /* CFA = FP + 8 * cfa_slots */
	EMBER_ROW_PLT,         /* CFA = SP + 8, + 8 more when (pc & 15) >= cfa_slots */
	EMBER_ROW_SIGNAL,      /* signal trampoline: registers from the ucontext at SP */
	EMBER_ROW_END,         /* outermost frame (return address undefined): done */
	EMBER_ROW_RA_DI,       /* leaf only: return address in rdi, CFA = SP (glibc's vfork) */
	EMBER_ROW_CFA_BX,      /* CFA = BX + 8 * cfa_slots (glibc's _dl_runtime_resolve) */
	EMBER_ROW_KIND_MAX,    /* at most 16: a row's kind has 4 bits */
};

/*
 * One row. The return address is at CFA - 8, as the x86-64 psABI has it for
 * every frame a row describes but RA_DI's (other CFI that puts it elsewhere
 * becomes INVALID).
 *
 * BX (rbx) is followed only for CFA_BX rows: the caller's BX is where the
 * callee's row says it saved it (bx_slot), else the callee's own. Compiled
 * code pushes rbx among the first registers of a prologue: in libc, ld.so
 * and cc1 (Debian 12) every save is at CFA - 16 to CFA - 56, so 4 bits
 * keep rows at 8 bytes. A save they cannot say (farther, above the CFA, in
 * another register, an expression) is EMBER_ROW_BX_LOST: a CFA_BX frame
 * above it stops as BAD_CFI, as every CFA_BX frame did before.
 */
struct ember_unwind_row {
	__u32 pc;         /* first address covered (ELF virtual address) */
	__s16 cfa_slots;  /* see the kinds; offsets count 8-byte slots */
	__u8 kind : 4;    /* enum ember_row_kind */
	__u8 bx_slot : 4; /* saved BX at CFA - 8 * bx_slot; 0: BX keeps its value */
	__s8 fp_slot;     /* saved FP at CFA + 8 * fp_slot; 0: FP keeps its value */
};

#define EMBER_ROW_FP_SLOT_MIN   (-64)
#define EMBER_ROW_CFA_SLOTS_MAX 0x7fff
#define EMBER_ROW_BX_SLOT_MAX   14 /* saved BX at CFA - 112 at most */
#define EMBER_ROW_BX_LOST       15 /* the caller's BX cannot be found */
_Static_assert(sizeof(struct ember_unwind_row) == 8, "rows are 8 bytes");

/* Block `block` of the table in slot `table`: rows [block * 128, block * 128 + 128). */
struct ember_unwind_block_key {
	__u32 table;
	__u32 block;
};

/* A table's last block is filled up with copies of its last row. */
struct ember_unwind_block {
	struct ember_unwind_row rows[EMBER_UNWIND_BLOCK_ROWS];
};

/* One executable mapping of a process. */
struct ember_unwind_mapping {
	__u64 start; /* [start, end) in the process */
	__u64 end;
	__u64 bias;  /* table address = pc - bias */
	__u32 table; /* table slot, or EMBER_UNWIND_NO_TABLE (frame pointers) */
	__u32 reserved;
};

/*
 * The executable mappings of a process, sorted by start, not overlapping, as
 * its maps were read at read_ns (CLOCK_MONOTONIC): a list read before the
 * process's last exec is another program's, and the unwinder ignores it. At
 * most EMBER_UNWIND_MAX_MAPPINGS, the lowest: the files of the others are
 * found by file (unwind_files). Every process's entry takes the whole value:
 * at 256 mappings, 8 KiB each, 8 MiB of a host of 1,000 processes (a quarter
 * of the maps' memory); at 64, 2 KiB (the most a process of this host had:
 * 50).
 */
struct ember_unwind_proc {
	__u32 count;
	__u32 reserved;
	__u64 read_ns;
	struct ember_unwind_mapping mappings[EMBER_UNWIND_MAX_MAPPINGS];
};

/*
 * A file by the kernel's names for it: the device of its super block
 * (major << 20 | minor, as /proc/PID/maps prints it) and its inode number.
 * The vDSO, which is no file, is {0, 0}.
 */
struct ember_file_key {
	__u64 ino;
	__u32 dev;
	__u32 reserved;
};

/* Executable segment of a file: its file offsets [start, end), and table address - offset. */
struct ember_file_seg {
	__u64 start, end;
	__s64 delta;
};

/*
 * The table of a file, found by the file from a process's first sample
 * (bpf/unwind_file.h). The file must still be as the symbolizer read it:
 * same modification time and size (a file rewritten in place, or another
 * file given the inode number, is another version; the vDSO: its size). A
 * pc of the executable's code (mm->start_code up to end_code) is at table
 * address pc - start_code + exe_start (start_code is the lowest executable
 * segment's address; the vDSO: pc - its base + exe_start); a pc of another
 * mapping at the table address of its file offset.
 */
struct ember_file_entry {
	__s64 mtime_sec;
	__u32 mtime_nsec;
	__u32 table; /* slot, or EMBER_UNWIND_NO_TABLE: the file has none (frame pointers) */
	__u64 size;
	__u64 exe_start;
	__u32 nsegs; /* at most EMBER_UNWIND_FILE_SEGS */
	__u32 reserved;
	struct ember_file_seg segs[EMBER_UNWIND_FILE_SEGS];
};

/*
 * Why user unwinding ended, in bits 16..23 of a sample's stack_flags
 * (EMBER_STACK_UNWIND_STOP). 0: the outermost frame was reached.
 */
enum ember_unwind_stop {
	EMBER_UNWIND_COMPLETE = 0,
	EMBER_UNWIND_STOP_BAD_CFI,     /* the row says the CFI cannot be followed */
	EMBER_UNWIND_STOP_READ,        /* the stack could not be read */
	EMBER_UNWIND_STOP_NO_MAPPING,  /* a pc outside every mapping the tables know */
	EMBER_UNWIND_STOP_NO_TABLE,    /* the table of a mapping is not loaded */
	EMBER_UNWIND_STOP_BAD_FRAME,   /* the stack pointer did not move up */
	EMBER_UNWIND_STOP_DEPTH,       /* EMBER_MAX_USTACK frames */
	EMBER_UNWIND_STOP_NO_REGS,     /* the user registers could not be read */
	EMBER_UNWIND_STOP_UNCHECKED,   /* the process or a mapping had no tables yet: frame
	                                  pointers took over, the stack may be short */
	EMBER_UNWIND_STOP_COPY_SHORT,  /* the stack copy ended before the outermost frame */
	EMBER_UNWIND_STOP_COPY_BUDGET, /* no tables, and the stack-copy budget was spent */
	EMBER_UNWIND_STOP_NO_MAPS,     /* a stack copy whose process's mappings were not known */
	EMBER_UNWIND_STOP_MAX,
};

#define EMBER_STACK_UNWIND_STOP_SHIFT  16
#define EMBER_STACK_UNWIND_STOP(flags) (((flags) >> EMBER_STACK_UNWIND_STOP_SHIFT) & 0xff)

#endif
