/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * User-space stack unwinding with the tables of bpf/unwind_table.h, for
 * sampler.bpf.c (x86-64). Per frame: find the mapping of the pc in the
 * process's mapping list, binary-search the row of its file's table, then
 * recover CFA, return address and frame pointer from the stack (x86-64;
 * other architectures use frame pointers for now). Where a process or a
 * mapping has no table yet, the CPU sampler's walk stops and the sample
 * carries a copy of the stack above that frame for the symbolizer
 * (stack_copy.bpf.h); without a copy (budget spent, stack not readable, an
 * off-CPU sample) frame pointers take over, as they do for mappings without
 * a table. Every stop that is not the outermost frame is recorded as a
 * reason in the sample's stack_flags: a stack is never silently short.
 *
 * Everything read here comes from the symbolizer (through the collector's
 * checks) or from the profiled process: a wrong table can only produce a
 * wrong stack. Loops are bpf_loop callbacks and bounded searches.
 *
 * Frames go to a slot of the per-CPU `scratch` map (scratch.bpf.h): each
 * program that can interrupt another on the same CPU (the perf-event sampler
 * can fire inside the off-CPU tracepoint programs) builds its record in its
 * own slot. The header needs nothing else from its includer (the build
 * compiles it on its own to keep it so).
 */
#ifndef EMBER_BPF_UNWIND_BPF_H
#define EMBER_BPF_UNWIND_BPF_H

#include "mapped_file.bpf.h"
#include "records.h"
#include "scratch.bpf.h"
#include "shared.bpf.h"
#include "unwind_file.h"
#include "unwind_table.h"

#define PF_KTHREAD_FLAG 0x00200000 /* PF_KTHREAD in include/linux/sched.h */

/* Offsets in the ucontext that an x86-64 signal handler returns to
 * (uc_mcontext at 40; gregs rbp, rbx, rsp, rip at 10, 11, 15, 16). */
#define UC_RBP 120
#define UC_RBX 128
#define UC_RSP 160
#define UC_RIP 168

/* Table slot -> its number of blocks (0: no table) and, above them, its generation. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EMBER_UNWIND_MAX_TABLES);
	__type(key, __u32);
	__type(value, __u64);
} unwind_tables SEC(".maps");

/* (slot, block) -> EMBER_UNWIND_BLOCK_ROWS rows; memory only for blocks in use. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_UNWIND_MAX_BLOCKS);
	__type(key, struct ember_unwind_block_key);
	__type(value, struct ember_unwind_block);
} unwind_blocks SEC(".maps");

/*
 * Per CPU, the block where a (table, address) was last found. Profiles
 * revisit the same return addresses over and over, so most frames find their
 * block with one array and one hash lookup instead of a binary search of
 * about log2(blocks) hash lookups. A hint is only a guess: it is checked
 * against the block's own rows, so a stale one (a freed and reused slot, a
 * colliding address) costs a search, never a wrong row.
 */
struct ember_unwind_hint {
	__u32 table;
	__u32 block;
	__u32 row; /* in the block: where addr was found, checked like the block */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_UNWIND_HINTS);
	__type(key, __u32);
	__type(value, struct ember_unwind_hint);
} unwind_hints SEC(".maps");

/*
 * Per CPU, the rows last found, by table generation and address: a frame seen
 * before costs one line of one page, where the blocks' hash, the hint and a
 * block's rows are half a dozen lines on three pages. At 19 Hz a sample finds
 * them out of the caches: six frames cost a median of 21.8 us a sample before
 * this, 18.0 with it. A generation is a table's, never reused (a slot written again
 * has a new one), so an entry is right or missed, never stale; 0 is no table's.
 * One cache per scratch slot (scratch.bpf.h): a program that interrupts another
 * on the same CPU (the perf event, the off-CPU programs) would find an entry half
 * written, or finish writing one over the other's.
 */
struct ember_row_cache_entry {
	__u32 generation, addr;
	struct ember_unwind_row row;
};

struct ember_row_cache {
	struct ember_row_cache_entry e[EMBER_UNWIND_ROW_CACHE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2); /* SCRATCH_CPU, SCRATCH_OFF_CPU */
	__type(key, __u32);
	__type(value, struct ember_row_cache);
} unwind_row_cache SEC(".maps");

/* Process (tgid) -> its executable mappings and their tables. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_UNWIND_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct ember_unwind_proc);
} unwind_procs SEC(".maps");

/*
 * Tables by file: the symbolizer names the file each table is for (device,
 * inode, modification time and size, its executable segments), and the
 * unwinder finds a frame's table from the file behind its pc: the
 * executable's and the vDSO's from the memory map's own fields, another
 * file's from the process's mappings the unwinder learns (unwind_vmas). So every process of a
 * program whose table is loaded is unwound in the kernel from its first sample, without a message
 * for it (a compiler in a build, a shell loop's commands, any process of a
 * host where the program ran before). The collector deletes an entry when
 * its table goes; a file changed since its table was built is not served.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_UNWIND_MAX_FILES);
	__type(key, struct ember_file_key);
	__type(value, struct ember_file_entry);
} unwind_files SEC(".maps");

#if defined(__TARGET_ARCH_x86)
#include "stack_copy.bpf.h"

struct ember_uw_state {
	__u64 pc, sp, fp;
	__u64 di;  /* the sampled frame's rdi (EMBER_ROW_RA_DI) */
	__u64 bx;  /* this frame's rbx, if bx_known (EMBER_ROW_CFA_BX) */
	__u64 r13; /* the sampled frame's r13 (the JVM interpreter's bcp) */
	__u64 r9;  /* the sampled frame's r9 (V8's interpreter's bytecode offset) */
	__u32 tgid;
	__u32 slot; /* words go to scratch[slot].frames[base + uw_words] */
	__u32 base;
	__u32 stop;  /* enum ember_unwind_stop */
	__u32 flags; /* EMBER_STACK_* to add to the sample */
	__u8 exact;  /* pc is where execution stopped, not a return address */
	__u8 copy;   /* where tables are missing, copy the stack (once) and stop */
	__u8 budget_spent;
	__u8 vma_tried;  /* bpf_find_vma was called (once per sample) */
	__u8 bx_known;   /* the sample's, or restored from where a callee saved it */
	__u8 list_stale; /* the process's mapping list is older than its exec: not used */
	__u8 exe_known;  /* exe_* are set (ember_file_mapping, once a sample) */
	__u32 copied;    /* bytes of the stack copy that follows the frames */
	/* Found by file (ember_file_mapping): the executable's code and its table, and the
	 * mapping bpf_find_vma found; *_why: 0, or the EMBER_STACK_FILE_* flag of a miss. */
	__u64 exe_start, exe_end, exe_bias;
	__u64 vma_start, vma_end, vma_bias;
	__u32 exe_table, exe_why, vma_table, vma_why;
	/* The process list's mapping of the last frame: most callers are in the same file, and
	 * a sample's frames need no second search of the list (a hash lookup and a binary
	 * search) for it. Empty (end 0) until a frame is found in the list. */
	struct ember_unwind_mapping last_map;
};

#include "interp.bpf.h"

static __always_inline int read_user_u64(__u64 *out, __u64 addr)
{
	return bpf_probe_read_user(out, sizeof(*out), (const void *)addr);
}

/*
 * A word of the user stack for the native walk, from the sample's window on it:
 * one read brings the EMBER_STACK_WINDOW bytes from addr up (to the page's end
 * when the next page is not there), which hold the saved words of several
 * frames, where a read per word costs a helper call and its user-access checks
 * each. The stack cannot change under the walk: its thread is interrupted.
 */
static __always_inline int read_stack_u64(struct ember_uw_state *st, __u64 *out, __u64 addr)
{
	struct sample_scratch *s = bpf_map_lookup_elem(&scratch, &st->slot);
	__u64 len = EMBER_STACK_WINDOW;

	if (!s || (addr & 7))
		return read_user_u64(out, addr);
	if (addr < s->win_lo || addr >= s->win_hi) {
		if (bpf_probe_read_user(s->win, len, (const void *)addr)) {
			len = 4096 - (addr & 4095);
			if (len > EMBER_STACK_WINDOW)
				len = EMBER_STACK_WINDOW;
			if (bpf_probe_read_user(s->win, len, (const void *)addr)) {
				s->win_hi = 0;
				*out = 0;
				return -1;
			}
		}
		s->win_lo = addr;
		s->win_hi = addr + len;
	}
	*out = s->win[((addr - s->win_lo) / 8) & (EMBER_STACK_WINDOW / 8 - 1)];
	return 0;
}

/*
 * The binary searches are bpf_loop callbacks too: the verifier then checks
 * one step instead of every path through every step.
 */
struct mapping_search {
	const struct ember_unwind_proc *proc;
	__u64 pc;
	__u32 lo, hi;
};

static long mapping_search_step(__u64 i, void *ctx)
{
	struct mapping_search *ms = ctx;
	__u32 mid;

	if (ms->hi - ms->lo <= 1)
		return 1;
	mid = ms->lo + (ms->hi - ms->lo) / 2;
	if (mid >= EMBER_UNWIND_MAX_MAPPINGS)
		return 1;
	if (ms->proc->mappings[mid].start <= ms->pc)
		ms->lo = mid;
	else
		ms->hi = mid;
	return 0;
}

static __always_inline const struct ember_unwind_mapping *
find_mapping(const struct ember_unwind_proc *p, __u64 pc)
{
	struct mapping_search ms = {.proc = p, .pc = pc, .hi = p->count};
	const struct ember_unwind_mapping *m;
	__u32 lo;

	if (ms.hi > EMBER_UNWIND_MAX_MAPPINGS)
		ms.hi = EMBER_UNWIND_MAX_MAPPINGS;
	if (!ms.hi)
		return NULL;
	bpf_loop(EMBER_UNWIND_MAPPING_STEPS, mapping_search_step, &ms, 0);
	lo = ms.lo;
	if (lo >= EMBER_UNWIND_MAX_MAPPINGS)
		return NULL;
	m = &p->mappings[lo];
	return pc >= m->start && pc < m->end ? m : NULL;
}

/* The last block whose first row is at or below addr. */
struct block_search {
	__u32 table, addr, lo, hi;
	int failed;
};

static long block_search_step(__u64 i, void *ctx)
{
	struct block_search *bs = ctx;
	struct ember_unwind_block_key key = {.table = bs->table};
	const struct ember_unwind_block *blk;

	if (bs->hi - bs->lo <= 1)
		return 1;
	key.block = bs->lo + (bs->hi - bs->lo) / 2;
	blk = bpf_map_lookup_elem(&unwind_blocks, &key);
	if (!blk) {
		bs->failed = 1;
		return 1;
	}
	if (blk->rows[0].pc <= bs->addr)
		bs->lo = key.block;
	else
		bs->hi = key.block;
	return 0;
}

/* The last row of a block at or below addr. */
struct row_search {
	const struct ember_unwind_block *blk;
	__u32 addr, lo, hi;
};

static long row_search_step(__u64 i, void *ctx)
{
	struct row_search *rs = ctx;
	__u32 mid;

	if (rs->hi - rs->lo <= 1)
		return 1;
	mid = rs->lo + (rs->hi - rs->lo) / 2;
	if (mid >= EMBER_UNWIND_BLOCK_ROWS)
		return 1;
	if (rs->blk->rows[mid].pc <= rs->addr)
		rs->lo = mid;
	else
		rs->hi = mid;
	return 0;
}

/*
 * The block the binary search would find, if the hint names it: blocks are
 * sorted and do not overlap, so a block whose rows start at or below addr and
 * end above it (or the last block, once addr is past its first row) is the
 * last block starting at or below addr.
 */
static __always_inline const struct ember_unwind_block *
hinted_block(const struct ember_unwind_hint *hint, __u32 table, __u32 nblocks, __u32 addr)
{
	struct ember_unwind_block_key key = {.table = table};
	const struct ember_unwind_block *blk;

	if (!hint || hint->table != table || hint->block >= nblocks)
		return NULL;
	key.block = hint->block;
	blk = bpf_map_lookup_elem(&unwind_blocks, &key);
	if (!blk || blk->rows[0].pc > addr)
		return NULL;
	if (addr >= blk->rows[EMBER_UNWIND_BLOCK_ROWS - 1].pc && key.block != nblocks - 1)
		return NULL;
	return blk;
}

/*
 * The row of table slot `table` covering addr (through the row cache of scratch slot `slot`);
 * GAP before its first row. -1: not loaded.
 * Global: inlined, the verifier checked the two searches again in every state the
 * unwinder's step reached it with (about 10,000 instructions processed).
 */
__attribute__((noinline)) int ember_find_row(__u32 table, __u32 addr, struct ember_unwind_row *out,
                                             __u32 slot)
{
	struct block_search bs = {.table = table, .addr = addr};
	struct ember_unwind_block_key key = {.table = table};
	const struct ember_unwind_block *blk;
	struct row_search rs = {.addr = addr, .hi = EMBER_UNWIND_BLOCK_ROWS};
	__u64 *entry = bpf_map_lookup_elem(&unwind_tables, &table);
	__u32 hint_slot = (addr ^ (table * 0x9e3779b1u)) & (EMBER_UNWIND_HINTS - 1);
	__u32 lo = EMBER_UNWIND_BLOCK_ROWS, nblocks, generation;
	struct ember_row_cache *cache = bpf_map_lookup_elem(&unwind_row_cache, &slot);
	struct ember_row_cache_entry *cached = NULL;
	struct ember_unwind_hint *hint;

	if (!out || !entry || !(__u32)*entry)
		return -1;
	nblocks = (__u32)*entry;
	generation = *entry >> 32;
	if (cache) {
		cached = &cache->e[((addr ^ generation) * 0x9e3779b1u) >> 24 &
		                   (EMBER_UNWIND_ROW_CACHE - 1)];
		if (generation && cached->generation == generation && cached->addr == addr) {
			*out = cached->row;
			return 0;
		}
	}
	hint = bpf_map_lookup_elem(&unwind_hints, &hint_slot);
	blk = hinted_block(hint, table, nblocks, addr);
	if (blk && hint)
		lo = hint->row;
	if (!blk) {
		bs.hi = nblocks;
		bpf_loop(EMBER_UNWIND_BLOCK_STEPS, block_search_step, &bs, 0);
		key.block = bs.lo;
		blk = bpf_map_lookup_elem(&unwind_blocks, &key);
		if (bs.failed || !blk)
			return -1;
		if (hint) {
			hint->table = table;
			hint->block = key.block;
		}
	}
	/* The hinted row, if it still covers addr (rows are sorted: the next one starts above
	 * it); else the search. */
	if (lo >= EMBER_UNWIND_BLOCK_ROWS - 1 || blk->rows[lo].pc > addr ||
	    addr >= blk->rows[lo + 1].pc) {
		rs.blk = blk;
		bpf_loop(EMBER_UNWIND_ROW_STEPS, row_search_step, &rs, 0);
		lo = rs.lo;
		if (hint)
			hint->row = lo;
	}
	if (lo >= EMBER_UNWIND_BLOCK_ROWS)
		return -1;
	*out = blk->rows[lo];
	if (out->pc > addr)
		out->kind = EMBER_ROW_GAP;
	if (cached) {
		cached->generation = generation;
		cached->addr = addr;
		cached->row = *out;
	}
	return 0;
}

/* Returns 1 to end the walk (st->stop says why), 0 to go on. */
static __always_inline long step_frame_pointer(struct ember_uw_state *st)
{
	__u64 next_fp, ra;

	if (!st->fp) /* the outermost frame clears it (_start, thread start) */
		return 1;
	if (st->fp < st->sp) {
		st->stop = EMBER_UNWIND_STOP_BAD_FRAME;
		return 1;
	}
	if (read_stack_u64(st, &next_fp, st->fp) || read_stack_u64(st, &ra, st->fp + 8)) {
		st->stop = EMBER_UNWIND_STOP_READ;
		return 1;
	}
	st->flags |= EMBER_STACK_USER_FP;
	st->bx_known = 0; /* code without CFI may have saved and changed it anywhere */
	st->sp = st->fp + 16;
	st->fp = next_fp;
	st->pc = ra;
	return ra == 0;
}

static __always_inline long step_signal(struct ember_uw_state *st)
{
	__u64 fp, sp, pc, bx;

	if (read_user_u64(&fp, st->sp + UC_RBP) || read_user_u64(&sp, st->sp + UC_RSP) ||
	    read_user_u64(&pc, st->sp + UC_RIP)) {
		st->stop = EMBER_UNWIND_STOP_READ;
		return 1;
	}
	st->bx_known = !read_user_u64(&bx, st->sp + UC_RBX);
	st->bx = bx;
	/* The interrupted pc is exact, and the handler may have run on another stack. */
	st->fp = fp;
	st->sp = sp;
	st->pc = pc;
	st->exact = 1;
	return pc == 0;
}

/* leaf: the row is the sampled frame's (its registers are the sample's, rdi among them). */
static __always_inline long step_row(struct ember_uw_state *st, const struct ember_unwind_row *row,
                                     bool leaf)
{
	__u64 cfa, ra, fp, bx;

	switch (row->kind) {
	case EMBER_ROW_RA_DI:
		if (!leaf) {
			st->stop = EMBER_UNWIND_STOP_BAD_CFI;
			return 1;
		}
		/* The stack pointer stays: this frame has nothing on the stack. */
		st->pc = st->di;
		return st->pc == 0;
	case EMBER_ROW_CFA_SP:
		cfa = st->sp + 8 * (__s64)row->cfa_slots;
		break;
	case EMBER_ROW_CFA_FP:
		cfa = st->fp + 8 * (__s64)row->cfa_slots;
		break;
	case EMBER_ROW_CFA_BX:
		if (!st->bx_known) {
			st->stop = EMBER_UNWIND_STOP_BAD_CFI;
			return 1;
		}
		cfa = st->bx + 8 * (__s64)row->cfa_slots;
		break;
	case EMBER_ROW_PLT:
		cfa = st->sp + 8 + ((st->pc & 15) >= (__u64)row->cfa_slots ? 8 : 0);
		break;
	case EMBER_ROW_SIGNAL:
		return step_signal(st);
	case EMBER_ROW_END:
		return 1;
	case EMBER_ROW_GAP:
		return step_frame_pointer(st);
	default:
		st->stop = EMBER_UNWIND_STOP_BAD_CFI;
		return 1;
	}
	if (cfa <= st->sp) {
		st->stop = EMBER_UNWIND_STOP_BAD_FRAME;
		return 1;
	}
	if (read_stack_u64(st, &ra, cfa - 8)) {
		st->stop = EMBER_UNWIND_STOP_READ;
		return 1;
	}
	if (row->fp_slot) {
		if (read_stack_u64(st, &fp, cfa + 8 * (__s64)row->fp_slot)) {
			st->stop = EMBER_UNWIND_STOP_READ;
			return 1;
		}
		st->fp = fp;
	}
	/* The caller's rbx: where this frame saved it, else this frame's. */
	if (row->bx_slot == EMBER_ROW_BX_LOST)
		st->bx_known = 0;
	else if (row->bx_slot) {
		st->bx_known = !read_stack_u64(st, &bx, cfa - 8 * (__u64)row->bx_slot);
		st->bx = bx;
	}
	st->sp = cfa;
	st->pc = ra;
	return ra == 0;
}

/*
 * No table for the frame at st->pc (flag says why, 0: a table not loaded):
 * the rest of the stack goes with the sample, copied from this frame on,
 * for the symbolizer; without a copy, frame pointers take over. Returns 1
 * to end the walk. A global function, checked once by the verifier rather
 * than at each of the walk's misses.
 */
__attribute__((noinline)) long ember_missing_table(struct ember_uw_state *st, __u32 exact,
                                                   __u32 flag)
{
	struct sample_scratch *s;
	long copied;

	if (!st)
		return 1;
	st->flags |= flag;
	if (st->copy) {
		s = bpf_map_lookup_elem(&scratch, &st->slot);
		st->copy = 0;
		if (s) { /* the sampled frame's rdi, for a leaf whose return address is there */
			s->copy_di_ok = exact && s->uw_native == 1;
			s->copy_di = st->di;
			s->copy_bx_ok = st->bx_known; /* this frame's rbx (EMBER_ROW_CFA_BX) */
			s->copy_bx = st->bx;
		}
		copied =
		    s ? ember_copy_user_stack(st->base + s->uw_words, st->pc, st->sp, st->fp, exact)
		      : COPY_ERR_READ;
		if (copied > 0) {
			st->copied = copied;
			st->flags |= EMBER_STACK_COPY;
			return 1;
		}
		if (copied == COPY_ERR_BUDGET)
			st->budget_spent = 1;
		else
			st->flags |= EMBER_STACK_COPY_FAILED;
	}
	if (flag)
		return step_frame_pointer(st);
	st->stop = EMBER_UNWIND_STOP_NO_TABLE;
	return 1;
}

/*
 * The modification time of an inode: its field moved in 6.7 and again in 6.11,
 * each layout under its own name here (CO-RE picks the one the kernel has).
 */
struct timespec64___ember {
	__s64 tv_sec;
	long tv_nsec;
};

struct inode___ember_v611 {
	__s64 i_mtime_sec;
	__u32 i_mtime_nsec;
} __attribute__((preserve_access_index));

struct inode___ember_v67 {
	struct timespec64___ember __i_mtime;
} __attribute__((preserve_access_index));

struct inode___ember_v50 {
	struct timespec64___ember i_mtime;
} __attribute__((preserve_access_index));

/* An inode's entry, if the symbolizer named it; what the kernel says of the file in *seen. */
static __always_inline const struct ember_file_entry *inode_entry(struct inode *inode,
                                                                  struct ember_file_seen *seen)
{
	struct inode___ember_v611 *v611 = (void *)inode;
	struct inode___ember_v67 *v67 = (void *)inode;
	struct inode___ember_v50 *v50 = (void *)inode;
	struct ember_file_key key = {};
	const struct ember_file_entry *f;

	if (!inode)
		return NULL;
	key.ino = BPF_CORE_READ(inode, i_ino);
	key.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	f = bpf_map_lookup_elem(&unwind_files, &key);
	if (!f)
		return NULL;
	seen->size = BPF_CORE_READ(inode, i_size);
	if (bpf_core_field_exists(v611->i_mtime_sec)) {
		seen->mtime_sec = BPF_CORE_READ(v611, i_mtime_sec);
		seen->mtime_nsec = BPF_CORE_READ(v611, i_mtime_nsec);
	} else if (bpf_core_field_exists(v67->__i_mtime)) {
		seen->mtime_sec = BPF_CORE_READ(v67, __i_mtime.tv_sec);
		seen->mtime_nsec = BPF_CORE_READ(v67, __i_mtime.tv_nsec);
	} else {
		seen->mtime_sec = BPF_CORE_READ(v50, i_mtime.tv_sec);
		seen->mtime_nsec = BPF_CORE_READ(v50, i_mtime.tv_nsec);
	}
	return f;
}

/* The entry of a mapped file, by the inode /proc/PID/maps names (mapped_file.bpf.h). */
static __always_inline const struct ember_file_entry *file_entry(struct file *file,
                                                                 struct ember_file_seen *seen)
{
	return file ? inode_entry(BPF_CORE_READ(maps_dentry(file), d_inode), seen) : NULL;
}

/* The mapping bpf_find_vma found, kept if executable (found->end 0: not). */
static long exec_vma_found(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	struct ember_proc_vma *found = ctx;

	if (!(BPF_CORE_READ(vma, vm_flags) & VM_EXEC_FLAG))
		return 0;
	found->start = BPF_CORE_READ(vma, vm_start);
	found->end = BPF_CORE_READ(vma, vm_end);
	found->offset = BPF_CORE_READ(vma, vm_pgoff) << 12;
	found->file = (__u64)BPF_CORE_READ(vma, vm_file);
	return 0;
}

/* Learns the executable mapping at pc into pv. Returns -1 for a pc in no mapping. */
static __always_inline int learn_vma(struct ember_proc_vmas *pv, struct task_struct *task, __u64 pc)
{
	struct ember_proc_vma found = {};
	__u32 n = pv->n;

	/* -2 (-ENOENT): no mapping there; another error: the lock was not to be had. */
	if (bpf_find_vma(task, pc, exec_vma_found, &found, 0) == -2)
		return -1;
	if (found.end && n < EMBER_PROC_VMAS) {
		pv->v[n] = found;
		pv->n = n + 1;
	}
	return 0;
}

/*
 * Copies the learnt mapping holding pc to *out; -1 if none. A copy, not a pointer into
 * pv: with a pointer, the verifier would check what follows once for each entry it may
 * point at (15,000 of ember_sample's 54,000 instructions processed).
 */
static __always_inline int find_vma_of(const struct ember_proc_vmas *pv, __u64 pc,
                                       struct ember_proc_vma *out)
{
	for (int i = 0; i < EMBER_PROC_VMAS; i++) {
		if (i >= (int)pv->n)
			break;
		if (pc >= pv->v[i].start && pc < pv->v[i].end) {
			*out = pv->v[i];
			return 0;
		}
	}
	return -1;
}

/* The current process's learnt mappings, of its memory map now (a fresh entry if none: the
 * process exits reporting its mappings, proc.bpf.h). */
static __always_inline struct ember_proc_vmas *proc_vmas(__u32 tgid, struct task_struct *task)
{
	static const struct ember_proc_vmas none;
	struct ember_proc_vmas *pv = bpf_map_lookup_elem(&unwind_vmas, &tgid);
	__u64 mm = (__u64)BPF_CORE_READ(task, mm);

	if (!pv) {
		bpf_map_update_elem(&unwind_vmas, &tgid, &none, BPF_ANY);
		pv = bpf_map_lookup_elem(&unwind_vmas, &tgid);
	}
	if (pv && pv->mm != mm) {
		pv->mm = mm;
		pv->n = 0;
	}
	return pv;
}

/* A table found by file: its mapping, or the flag that says why there is none. */
static __always_inline long file_fit(const struct ember_file_entry *f, int fit, __u64 bias,
                                     struct ember_unwind_mapping *m)
{
	if (!f)
		return EMBER_STACK_FILE_UNSEEN;
	if (fit == EMBER_FILE_CHANGED)
		return EMBER_STACK_FILE_CHANGED;
	/* No executable segment there: as the process's list would say, no table. */
	m->table = fit == EMBER_FILE_FITS ? f->table : EMBER_UNWIND_NO_TABLE;
	m->bias = bias;
	return 0;
}

/* The executable's code, once a sample: st->exe_* (a miss leaves it to bpf_find_vma). */
static __always_inline void resolve_exe(struct ember_uw_state *st, struct task_struct *task)
{
	struct ember_unwind_mapping m = {};
	struct ember_file_seen seen = {};
	const struct ember_file_entry *f;
	__u64 bias = 0;
	int fit = EMBER_FILE_NO_SEGMENT;

	st->exe_start = BPF_CORE_READ(task, mm, start_code);
	st->exe_end = BPF_CORE_READ(task, mm, end_code);
	f = file_entry(BPF_CORE_READ(task, mm, exe_file), &seen);
	if (f)
		fit = ember_file_base_bias(f, &seen, st->exe_start, &bias);
	st->exe_why = file_fit(f, fit, bias, &m);
	st->exe_table = m.table;
	st->exe_bias = m.bias;
	st->exe_known = 1;
}

/*
 * Whether the executable was rewritten in place since its table was built: its
 * processes' mapping lists and the symbolizer's rows are then the old file's.
 * Global: the verifier checks it once.
 */
__attribute__((noinline)) int ember_exe_changed(struct ember_uw_state *st)
{
	if (!st)
		return 0;
	resolve_exe(st, bpf_get_current_task_btf());
	return st->exe_why == EMBER_STACK_FILE_CHANGED;
}

/* The vDSO, which is no file: one image for every 64-bit process, its size its check. */
static __always_inline long vdso_mapping(struct task_struct *task, __u64 pc,
                                         struct ember_unwind_mapping *m)
{
	struct ember_file_key key = {};
	struct ember_file_seen seen = {};
	const struct ember_file_entry *f;
	__u64 vdso = (__u64)BPF_CORE_READ(task, mm, context.vdso), bias = 0;
	int fit = EMBER_FILE_NO_SEGMENT;

	seen.size = BPF_CORE_READ(task, mm, context.vdso_image, size);
	if (!vdso || pc < vdso || pc >= vdso + seen.size)
		return -1;
	f = bpf_map_lookup_elem(&unwind_files, &key);
	if (f)
		fit = ember_file_base_bias(f, &seen, vdso, &bias);
	return file_fit(f, fit, bias, m);
}

/*
 * Fills *m with the mapping of pc from its file's table: the executable's and
 * the vDSO's by the memory map's fields, another file's from the mappings the
 * unwinder learnt of the process (unwind_vmas, shared.bpf.h). Where pc is in
 * none, one is learnt with bpf_find_vma: in a perf-event program one succeeds
 * per sample (the memory map's lock is let go after the program, and a second
 * lookup finds that pending), so a stack through several libraries is whole
 * from a few samples on. Returns 0; an EMBER_STACK_FILE_* flag that says why
 * there is no table (a stack copy may help); or -1 for a pc in no mapping.
 * Global: the verifier checks it once.
 */
__attribute__((noinline)) long ember_file_mapping(struct ember_uw_state *st, __u64 pc,
                                                  struct ember_unwind_mapping *m)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct ember_proc_vma v;
	struct ember_file_seen seen = {};
	const struct ember_file_entry *f;
	struct ember_proc_vmas *pv;
	__u64 bias = 0;
	long why;
	int fit = EMBER_FILE_NO_SEGMENT, miss;

	if (!st || !m)
		return -1;
	if (!st->exe_known)
		resolve_exe(st, task);
	if (pc >= st->exe_start && pc < st->exe_end && !st->exe_why) {
		m->table = st->exe_table;
		m->bias = st->exe_bias;
		return 0;
	}
	if (pc >= st->vma_start && pc < st->vma_end) {
		m->table = st->vma_table;
		m->bias = st->vma_bias;
		return st->vma_why;
	}
	why = vdso_mapping(task, pc, m);
	if (why >= 0)
		return why;
	pv = proc_vmas(st->tgid, task);
	if (!pv)
		return EMBER_STACK_FILE_NO_VMA;
	miss = find_vma_of(pv, pc, &v);
	if (miss && !st->vma_tried) {
		st->vma_tried = 1;
		if (learn_vma(pv, task, pc))
			return -1;
		miss = find_vma_of(pv, pc, &v);
	}
	if (miss)
		return EMBER_STACK_FILE_NO_VMA;
	/* Anonymous executable memory (JIT code): frame pointers, as the process's list says. */
	if (!v.file) {
		why = 0;
		m->table = EMBER_UNWIND_NO_TABLE;
		m->bias = 0;
	} else {
		f = file_entry((struct file *)v.file, &seen);
		if (f)
			fit = ember_file_mapping_bias(f, &seen, v.start, v.offset, pc, &bias);
		why = file_fit(f, fit, bias, m);
	}
	st->vma_start = v.start;
	st->vma_end = v.end;
	st->vma_table = m->table;
	st->vma_bias = m->bias;
	st->vma_why = why;
	return why;
}

/*
 * One native frame's step with the table of its file (addr: the frame's address in
 * it). A global function: the verifier checks it once, not once for each way the
 * step found the mapping (the last one, the list, the file), which took the
 * sampler through 35,000 instructions at each start (24,000 this way).
 */
__attribute__((noinline)) long ember_step_native(struct ember_uw_state *st, __u32 table, __u64 addr,
                                                 __u32 exact, __u32 flag)
{
	struct sample_scratch *s;
	struct ember_unwind_row row;

	if (!st)
		return 1;
	/* For the leaf test below: a sixth argument is more than a BPF call takes. */
	s = bpf_map_lookup_elem(&scratch, &st->slot);
	if (!s)
		return 1;
	if (table == EMBER_UNWIND_NO_TABLE)
		return step_frame_pointer(st);
	if (addr > 0xffffffffull || ember_find_row(table, (__u32)addr, &row, st->slot))
		return ember_missing_table(st, exact, flag);
	return step_row(st, &row, exact && s->uw_native == 1);
}

static long unwind_step(__u64 i, void *ctx)
{
	struct ember_uw_state *st = ctx;
	const struct ember_unwind_mapping *m;
	struct ember_unwind_mapping by_file;
	struct ember_unwind_proc *proc = NULL;
	long why;
	struct sample_scratch *s;
	__u32 idx, flag = 0;
	__u64 pc;
	__u8 exact;

	s = bpf_map_lookup_elem(&scratch, &st->slot);
	if (!s) {
		st->stop = EMBER_UNWIND_STOP_DEPTH;
		return 1;
	}
	/* A callback returns 0 or 1: the walkers' results are unknown to the verifier. */
	if (s->interp_walk.pending)
		return interp_step(st, s) != 0;
	/* No user pc has the top bit set: one that does is garbage (and would pass for an
	 * interpreted frame's tag). */
	if (st->pc >> 63) {
		st->stop = EMBER_UNWIND_STOP_BAD_FRAME;
		return 1;
	}
	/* JIT code without tables: the runtime's walker steps through its frames. */
	why = interp_unwind(st, s);
	if (why >= 0)
		return why != 0;
	/* A return address points after its call: look up the call itself. */
	exact = st->exact;
	pc = exact ? st->pc : st->pc - 1;
	if (interp_before_native(st, s, pc))
		return 0;
	s->interp_walk.at_pc = 0;
	idx = st->base + s->uw_words;
	if (s->uw_native >= EMBER_MAX_USTACK || idx >= EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS) {
		st->stop = EMBER_UNWIND_STOP_DEPTH;
		return 1;
	}
	s->frames[idx] = st->pc;
	s->uw_words++;
	s->uw_native++;
	st->exact = 0;
	if (pc >= st->last_map.start && pc < st->last_map.end) {
		m = &st->last_map;
	} else {
		proc = st->list_stale ? NULL : bpf_map_lookup_elem(&unwind_procs, &st->tgid);
		m = proc ? find_mapping(proc, pc) : NULL;
		if (m)
			st->last_map = *m;
	}
	/* The list's table of an executable rewritten since is the old file's: the file is
	 * asked instead, which refuses it too, and learns the process's mappings for its exit
	 * (proc.bpf.h), where the symbolizer may find the maps of a process gone. */
	if (m && st->exe_why == EMBER_STACK_FILE_CHANGED && pc >= st->exe_start && pc < st->exe_end)
		m = NULL;
	/* No list (yet), or a mapping made after it was read (the symbolizer reloads): the
	 * table of the file behind pc, else a copy. */
	if (!m) {
		flag = proc ? EMBER_STACK_UNWIND_MAP_MISS : EMBER_STACK_UNWIND_NO_PROC;
		why = ember_file_mapping(st, pc, &by_file);
		if (why < 0) {
			st->stop = EMBER_UNWIND_STOP_NO_MAPPING;
			return 1;
		}
		if (why)
			return ember_missing_table(st, exact, flag | (__u32)why) != 0;
		st->flags |= EMBER_STACK_UNWIND_BY_FILE;
		m = &by_file;
	}
	return ember_step_native(st, m->table, pc - m->bias, exact, m == &by_file ? flag : 0) != 0;
}

static long vma_found(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	return 0;
}

/*
 * In the middle of an exec, once the old program's memory is gone and
 * before the new one starts, the saved registers still point into the old
 * program: there is no user stack to unwind then (and nothing to copy).
 * While the new program is being mapped its memory map is locked and the
 * lookup fails (-EBUSY): that is the same case.
 */
static __always_inline bool regs_of_a_gone_program(struct task_struct *task, __u64 pc)
{
	if (!bpf_core_field_exists(task->in_execve) ||
	    !BPF_CORE_READ_BITFIELD_PROBED(task, in_execve))
		return false;
	return bpf_find_vma(task, pc, vma_found, NULL, 0) != 0;
}

/*
 * The user registers the current task saved when it entered the kernel.
 * Returns false when the task has no user part (kernel thread, or a program
 * being replaced by exec).
 */
static __always_inline bool saved_user_regs(struct ember_uw_state *st)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs;

	if ((BPF_CORE_READ(task, flags) & PF_KTHREAD_FLAG) || !BPF_CORE_READ(task, mm))
		return false;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs || bpf_probe_read_kernel(&st->pc, sizeof(st->pc), &regs->ip) ||
	    bpf_probe_read_kernel(&st->sp, sizeof(st->sp), &regs->sp) ||
	    bpf_probe_read_kernel(&st->fp, sizeof(st->fp), &regs->bp) ||
	    bpf_probe_read_kernel(&st->di, sizeof(st->di), &regs->di) ||
	    bpf_probe_read_kernel(&st->bx, sizeof(st->bx), &regs->bx) ||
	    bpf_probe_read_kernel(&st->r13, sizeof(st->r13), &regs->r13) ||
	    bpf_probe_read_kernel(&st->r9, sizeof(st->r9), &regs->r9)) {
		st->stop = EMBER_UNWIND_STOP_NO_REGS;
		return false;
	}
	st->bx_known = 1;
	return st->pc != 0 && !regs_of_a_gone_program(task, st->pc);
}

/*
 * The user registers at the sample: the interrupted ones when the CPU was in
 * user mode, else those saved at kernel entry.
 */
static __always_inline bool user_regs(struct bpf_perf_event_data *ctx, struct ember_uw_state *st)
{
	/* Context fields are read as whole words; cs is a u16 in a union here. */
	__u64 cs = *(__u64 *)((void *)&ctx->regs + __builtin_offsetof(struct pt_regs, cs));

	if ((cs & 3) == 3) {
		st->pc = ctx->regs.ip;
		st->sp = ctx->regs.sp;
		st->fp = ctx->regs.bp;
		st->di = ctx->regs.di;
		st->bx = ctx->regs.bx;
		st->r13 = ctx->regs.r13;
		st->r9 = ctx->regs.r9;
		st->bx_known = 1;
		return true;
	}
	return saved_user_regs(st);
}

/*
 * Walks from the registers in st (if have_regs); returns the words written
 * and sets *copy_bytes to the size of the stack copy written after them.
 */
static __always_inline __u32 unwind_walk(struct ember_uw_state *st, bool have_regs,
                                         __u32 *stack_flags, __u32 *copy_bytes)
{
	struct sample_scratch *s = bpf_map_lookup_elem(&scratch, &st->slot);
	struct ember_unwind_proc *proc = bpf_map_lookup_elem(&unwind_procs, &st->tgid);
	__u64 *exec_ns = proc ? bpf_map_lookup_elem(&unwind_execs, &st->tgid) : NULL;

	/* A list read before the process's last exec is the old program's: its addresses name
	 * other files, maybe at the same places (without address space randomization). */
	if (proc && exec_ns && proc->read_ns < *exec_ns) {
		st->list_stale = 1;
		st->flags |= EMBER_STACK_UNWIND_STALE_LIST;
	}
	*copy_bytes = 0;
	if (!have_regs || !s) {
		*stack_flags |= (__u32)st->stop << EMBER_STACK_UNWIND_STOP_SHIFT;
		return 0;
	}
	s->uw_words = s->uw_native = 0;
	s->win_hi = 0;
	/* Said by every sample of a rewritten executable, not only one whose walk reaches it:
	 * the symbolizer builds the new file's table before it unwinds a copy with it. */
	if (ember_exe_changed(st))
		st->flags |= EMBER_STACK_FILE_CHANGED;
	interp_walk_init(st, s);
	/* Each step records a native frame, an interpreted frame, or passes a frame the
	 * runtime does not show (at most one per native frame). */
	bpf_loop(2 * EMBER_MAX_USTACK + EMBER_INTERP_MAX_FRAMES + 2, unwind_step, st, 0);
	/* For a reader that ignores the copy, the stack ends where it starts. */
	if (st->copied) {
		*copy_bytes = st->copied;
		st->stop = EMBER_UNWIND_STOP_UNCHECKED;
	}
	if (st->stop == EMBER_UNWIND_STOP_DEPTH)
		st->flags |= EMBER_STACK_USER_TRUNC;
	/* Without tables, whatever ended the walk, the cause is the missing tables. */
	if (st->stop != EMBER_UNWIND_STOP_DEPTH &&
	    (st->flags & (EMBER_STACK_UNWIND_NO_PROC | EMBER_STACK_UNWIND_MAP_MISS)))
		st->stop = EMBER_UNWIND_STOP_UNCHECKED;
	if (st->budget_spent && st->stop != EMBER_UNWIND_STOP_DEPTH)
		st->stop = EMBER_UNWIND_STOP_COPY_BUDGET;
	*stack_flags |= st->flags | (__u32)st->stop << EMBER_STACK_UNWIND_STOP_SHIFT;
	return s->uw_words;
}

/*
 * Unwinds the user stack into scratch[0].frames[base...], with a stack copy
 * after them where tables are missing (*copy_bytes); returns the frames
 * written.
 */
static __always_inline __u32 unwind_user(struct bpf_perf_event_data *ctx, __u32 tgid, __u32 base,
                                         __u32 *stack_flags, __u32 *copy_bytes)
{
	struct ember_uw_state st = {.tgid = tgid, .base = base, .exact = 1, .copy = 1};

	return unwind_walk(&st, user_regs(ctx, &st), stack_flags, copy_bytes);
}

/*
 * The user stack of the current task while it is in the kernel (e.g. about
 * to return from a wait), from the registers it saved when it entered, into
 * scratch[slot].frames[base...]. ctx is unused here.
 */
static __always_inline __u32 unwind_user_in_kernel(void *ctx, __u32 tgid, __u32 slot, __u32 base,
                                                   __u32 *stack_flags)
{
	struct ember_uw_state st = {.tgid = tgid, .slot = slot, .base = base, .exact = 1};
	__u32 no_copy;

	return unwind_walk(&st, saved_user_regs(&st), stack_flags, &no_copy);
}
#else
/* Other architectures: frame pointers only, until their CFI rows are written. */
static __always_inline void copy_budget_earn(__u64 bytes)
{
}

static __always_inline __u32 unwind_user_in_kernel(void *ctx, __u32 tgid, __u32 slot, __u32 base,
                                                   __u32 *stack_flags)
{
	struct sample_scratch *s;
	long ubytes;

	s = bpf_map_lookup_elem(&scratch, &slot);
	if (!s || base > EMBER_MAX_KSTACK)
		return 0;
	ubytes = bpf_get_stack(ctx, &s->frames[base], EMBER_MAX_USTACK * 8, BPF_F_USER_STACK);
	if (ubytes < 0) {
		*stack_flags |= EMBER_STACK_USER_ERR;
		return 0;
	}
	return (__u32)ubytes / 8;
}

static __always_inline __u32 unwind_user(struct bpf_perf_event_data *ctx, __u32 tgid, __u32 base,
                                         __u32 *stack_flags, __u32 *copy_bytes)
{
	*copy_bytes = 0;
	return unwind_user_in_kernel(ctx, tgid, 0, base, stack_flags);
}
#endif

#endif
