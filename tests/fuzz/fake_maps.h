/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The unwinder's BPF maps, stood in for in memory (the collector's bpf_map_* calls land
 * here), and what the in-kernel unwinder (bpf/unwind.bpf.h) assumes of them, checked:
 *   - a table slot says a block count only once all its rows are in, at most
 *     EMBER_UNWIND_MAX_TABLE_ROWS rows, and every block below that count is there;
 *   - its rows are sorted by pc across its blocks (the binary searches);
 *   - every row's kind is one of the kinds, its slots what that kind reads: CFA_SP, CFA_FP and
 *     CFA_BX a CFA above the register (cfa_slots > 0: the stack pointer moves up) and a saved
 *     FP at or below the CFA, no further than EMBER_ROW_FP_SLOT_MIN; PLT a threshold below 16
 *     and no saved FP; the other kinds no slots;
 *   - no block outlives its table (blocks the unwinder cannot reach are memory lost);
 *   - a process's mappings: at most EMBER_UNWIND_MAX_MAPPINGS, each start below its end,
 *     sorted and not overlapping, a table slot below EMBER_UNWIND_MAX_TABLES or none;
 *   - a file's entry: a table slot below EMBER_UNWIND_MAX_TABLES or none, at most
 *     EMBER_UNWIND_FILE_SEGS executable segments, each start below its end, sorted and not
 *     overlapping (bpf/unwind_file.h stops at the first that holds a pc's offset);
 *   - no more rows loaded than the budget.
 * For fuzz_table_loader.c and fuzz_peer.c; a failed check aborts (a finding).
 */
#ifndef EMBER_TESTS_FUZZ_FAKE_MAPS_H
#define EMBER_TESTS_FUZZ_FAKE_MAPS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/python.h"
#include "collector/table_loader.h"

#define FD_TABLES 1001
#define FD_BLOCKS 1002
#define FD_PROCS  1003
#define FD_INDEX  1004 /* interp_procs: tgid -> runtime */
#define FD_PY     1005 /* py_procs: tgid -> Python's row */
#define FD_FILES  1006 /* unwind_files: device and inode -> a file's entry */
/* The maps keyed by process: the unwinder's mapping lists, the interpreters' index, Python's
 * rows; another runtime's none (-1). */
static const int *fake_proc_fds_get(void)
{
	static int fds[EMBER_PROC_MAPS];

	for (size_t i = 0; i < EMBER_PROC_MAPS; i++)
		fds[i] = i == 0                          ? FD_PROCS
		         : i == 1                        ? FD_INDEX
		         : i == 1 + EMBER_RUNTIME_PYTHON ? FD_PY
		                                         : -1;
	return fds;
}
#define fake_proc_fds   fake_proc_fds_get()
#define MAX_BLOCKS_HERE 256 /* the stand-in blocks map's capacity (the budget is 64) */
#define ROW_BUDGET      (64u * EMBER_UNWIND_BLOCK_ROWS)

static uint32_t tables[EMBER_UNWIND_MAX_TABLES];
/* The slots ever written (the checks look at these only: a slot no update reached is 0). */
static uint32_t touched[4096], ntouched;
static bool touched_all; /* more slots than that: the checks look at every slot */
static struct block_entry {
	struct ember_unwind_block_key key;
	struct ember_unwind_block block;
	bool used;
} blocks[MAX_BLOCKS_HERE];
static struct proc_entry {
	uint32_t pid;
	struct ember_unwind_proc proc;
	bool used;
} procs[64];
/* The interpreters' maps: the index and Python's rows, by process. */
static struct interp_entry {
	uint32_t pid;
	uint32_t runtime;
	struct ember_py_proc row;
	bool used;
} interp_index[64], py_rows[64];
/* The files' entries, by device and inode. */
static struct file_entry {
	struct ember_file_key key;
	struct ember_file_entry file;
	bool used;
} files[64];
static bool refuse_memory; /* the maps say E2BIG/ENOMEM to updates */

static void maps_finding(const char *what, long a, long b)
{
	fprintf(stderr, "fake_maps: %s (%ld, %ld)\n", what, a, b);
	abort();
}

static struct block_entry *find_block(const struct ember_unwind_block_key *k)
{
	for (size_t i = 0; i < MAX_BLOCKS_HERE; i++)
		if (blocks[i].used && blocks[i].key.table == k->table &&
		    blocks[i].key.block == k->block)
			return &blocks[i];
	return NULL;
}

static struct proc_entry *find_proc(uint32_t pid)
{
	for (size_t i = 0; i < 64; i++)
		if (procs[i].used && procs[i].pid == pid)
			return &procs[i];
	return NULL;
}

static struct interp_entry *interp_entry(struct interp_entry *in, uint32_t pid, bool add)
{
	for (size_t i = 0; i < 64; i++)
		if (in[i].used && in[i].pid == pid)
			return &in[i];
	for (size_t i = 0; add && i < 64; i++)
		if (!in[i].used)
			return &in[i];
	return NULL;
}

static struct file_entry *file_entry(const void *key, bool add)
{
	struct ember_file_key k;

	memcpy(&k, key, sizeof(k));
	for (size_t i = 0; i < 64; i++)
		if (files[i].used && !memcmp(&files[i].key, &k, sizeof(k)))
			return &files[i];
	for (size_t i = 0; add && i < 64; i++)
		if (!files[i].used) {
			files[i].key = k;
			return &files[i];
		}
	return NULL;
}

/* ---- the BPF maps, stood in for ---------------------------------------------------------- */

/* As libbpf does: a negative errno, and errno set. */
static int fail(int err)
{
	errno = -err;
	return err;
}

int bpf_map_update_elem(int fd, const void *key, const void *value, unsigned long long flags)
{
	(void)flags;
	if (fd == FD_TABLES) {
		uint32_t slot;

		memcpy(&slot, key, sizeof(slot));
		if (slot >= EMBER_UNWIND_MAX_TABLES)
			return fail(-E2BIG); /* an array map refuses an index past its end */
		if (refuse_memory)
			return fail(-ENOMEM);
		memcpy(&tables[slot], value, sizeof(uint32_t));
		if (ntouched < 4096)
			touched[ntouched++] = slot;
		else
			touched_all = true;
		return 0;
	}
	if (fd == FD_BLOCKS) {
		struct ember_unwind_block_key k;
		struct block_entry *e;

		memcpy(&k, key, sizeof(k));
		e = find_block(&k);
		for (size_t i = 0; !e && i < MAX_BLOCKS_HERE && !refuse_memory; i++)
			if (!blocks[i].used)
				e = &blocks[i];
		if (!e || refuse_memory)
			return fail(-E2BIG);
		e->used = true;
		e->key = k;
		memcpy(&e->block, value, sizeof(e->block));
		return 0;
	}
	if (fd == FD_PROCS) {
		uint32_t pid;
		struct proc_entry *e;

		memcpy(&pid, key, sizeof(pid));
		e = find_proc(pid);
		for (size_t i = 0; !e && i < 64 && !refuse_memory; i++)
			if (!procs[i].used)
				e = &procs[i];
		if (!e || refuse_memory)
			return fail(-E2BIG);
		e->used = true;
		e->pid = pid;
		memcpy(&e->proc, value, sizeof(e->proc));
		return 0;
	}
	if (fd == FD_INDEX || fd == FD_PY) {
		uint32_t pid;
		struct interp_entry *e;

		memcpy(&pid, key, sizeof(pid));
		e = interp_entry(fd == FD_INDEX ? interp_index : py_rows, pid, true);
		if (!e || refuse_memory)
			return fail(-E2BIG);
		e->used = true;
		e->pid = pid;
		if (fd == FD_INDEX)
			memcpy(&e->runtime, value, sizeof(e->runtime));
		else
			memcpy(&e->row, value, sizeof(e->row));
		return 0;
	}
	if (fd == FD_FILES) {
		struct file_entry *e = file_entry(key, !refuse_memory);

		if (!e || refuse_memory)
			return fail(-E2BIG);
		e->used = true;
		memcpy(&e->file, value, sizeof(e->file));
		return 0;
	}
	return fail(-EBADF);
}

int bpf_map_delete_elem(int fd, const void *key)
{
	if (fd == FD_BLOCKS) {
		struct ember_unwind_block_key k;
		struct block_entry *e;

		memcpy(&k, key, sizeof(k));
		e = find_block(&k);
		if (!e)
			return fail(-ENOENT);
		e->used = false;
		return 0;
	}
	if (fd == FD_PROCS) {
		uint32_t pid;
		struct proc_entry *e;

		memcpy(&pid, key, sizeof(pid));
		e = find_proc(pid);
		if (!e)
			return fail(-ENOENT);
		e->used = false;
		return 0;
	}
	if (fd == FD_INDEX || fd == FD_PY) {
		uint32_t pid;
		struct interp_entry *e;

		memcpy(&pid, key, sizeof(pid));
		e = interp_entry(fd == FD_INDEX ? interp_index : py_rows, pid, false);
		if (!e)
			return fail(-ENOENT);
		e->used = false;
		return 0;
	}
	if (fd == FD_FILES) {
		struct file_entry *e = file_entry(key, false);

		if (!e)
			return fail(-ENOENT);
		e->used = false;
		return 0;
	}
	return fail(fd == FD_TABLES ? -EINVAL : -EBADF);
}

int bpf_map_get_next_key(int fd, const void *key, void *next)
{
	const struct interp_entry *in = fd == FD_INDEX ? interp_index : py_rows;

	(void)key; /* the loader asks for the first key each time */
	for (size_t i = 0; fd == FD_FILES && i < 64; i++)
		if (files[i].used) {
			memcpy(next, &files[i].key, sizeof(files[i].key));
			return 0;
		}
	if (fd != FD_PROCS && fd != FD_INDEX && fd != FD_PY)
		return fail(fd == FD_FILES ? -ENOENT : -EBADF);
	for (size_t i = 0; i < 64; i++)
		if (fd == FD_PROCS ? procs[i].used : in[i].used) {
			memcpy(next, fd == FD_PROCS ? &procs[i].pid : &in[i].pid, sizeof(uint32_t));
			return 0;
		}
	return fail(-ENOENT);
}

/* ---- what the unwinder assumes ------------------------------------------------------------- */

static bool row_as_the_unwinder_reads_it(const struct ember_unwind_row *r)
{
	switch (r->kind) {
	case EMBER_ROW_CFA_SP:
	case EMBER_ROW_CFA_FP:
	case EMBER_ROW_CFA_BX:
		return r->cfa_slots > 0 && r->fp_slot <= 0 && r->fp_slot >= EMBER_ROW_FP_SLOT_MIN;
	case EMBER_ROW_PLT:
		return r->cfa_slots >= 0 && r->cfa_slots < 16 && r->fp_slot == 0;
	case EMBER_ROW_INVALID:
	case EMBER_ROW_GAP:
	case EMBER_ROW_SIGNAL:
	case EMBER_ROW_END:
	case EMBER_ROW_RA_DI:
		return r->cfa_slots == 0 && r->fp_slot == 0;
	default:
		return false;
	}
}

/*
 * What python.bpf.h assumes of a row it walks with (python.h), said on its own terms: every
 * field it takes from a window lies whole inside the bytes read there; the pointers it follows
 * start from a user address; the loop's parts are non-empty user ranges, the first present;
 * each enum is one the walker knows. A window larger than EMBER_PY_WINDOW may pass: the
 * walker itself refuses to read one (py_step), so the collector no longer checks it.
 */
static bool python_row_as_the_walker_reads_it(const struct ember_py_proc *r)
{
	unsigned instr_bytes = r->instr == EMBER_PY_INSTR_LASTI ? 4 : 8;
	bool frame = r->frame_code + 8u <= r->frame_read && r->frame_back + 8u <= r->frame_read &&
	             r->frame_entry < r->frame_read &&
	             r->frame_instr + instr_bytes <= r->frame_read;
	bool code = r->code_argcount + 4u <= r->code_read &&
	            r->code_firstlineno + 4u <= r->code_read && r->code_name + 8u <= r->code_read &&
	            r->code_filename + 8u <= r->code_read;
	bool loop = r->eval_end[0] > r->eval_start[0] && r->eval_end[0] <= EMBER_PY_USER_LIMIT &&
	            (!r->eval_end[1] ? !r->eval_start[1]
	                             : r->eval_end[1] > r->eval_start[1] &&
	                                   r->eval_end[1] <= EMBER_PY_USER_LIMIT);

	for (size_t i = 0; i < sizeof(r->reserved); i++)
		if (r->reserved[i])
			return false;
	return frame && code && loop && r->tss_key && r->tss_key + 4 <= EMBER_PY_USER_LIMIT &&
	       r->tsd_offset <= EMBER_PY_MAX_TSD && r->tstate_frame <= EMBER_PY_MAX_TSTATE &&
	       r->cframe_frame <= EMBER_PY_MAX_TSTATE && r->code_units <= EMBER_PY_MAX_CODE &&
	       r->chain >= 1 && r->chain < EMBER_PY_CHAIN_MAX && r->entry >= 1 &&
	       r->entry < EMBER_PY_ENTRY_MAX && r->instr >= 1 && r->instr < EMBER_PY_INSTR_MAX;
}

static void interp_check(void)
{
	for (size_t i = 0; i < 64; i++) {
		if (interp_index[i].used &&
		    (interp_index[i].runtime < 1 || interp_index[i].runtime >= EMBER_RUNTIME_MAX))
			maps_finding("an index entry of no runtime", interp_index[i].pid,
			             interp_index[i].runtime);
		if (py_rows[i].used && !python_row_as_the_walker_reads_it(&py_rows[i].row))
			maps_finding("a Python row the walker cannot read", py_rows[i].pid, 0);
	}
}

static void files_check(void)
{
	for (size_t i = 0; i < 64; i++) {
		const struct ember_file_entry *f = &files[i].file;
		bool ok = f->nsegs <= EMBER_UNWIND_FILE_SEGS && !f->reserved &&
		          !files[i].key.reserved &&
		          (f->table == EMBER_UNWIND_NO_TABLE || f->table < EMBER_UNWIND_MAX_TABLES);

		for (uint32_t s = 0; ok && s < f->nsegs && s < EMBER_UNWIND_FILE_SEGS; s++)
			ok = f->segs[s].start < f->segs[s].end &&
			     (!s || f->segs[s].start >= f->segs[s - 1].end);
		if (files[i].used && !ok)
			maps_finding("a file entry the unwinder cannot search",
			             (long)files[i].key.ino, f->nsegs);
	}
}

static void maps_check(const struct ember_tables *t)
{
	uint64_t rows = 0;
	static bool seen[EMBER_UNWIND_MAX_TABLES];

	memset(seen, 0, sizeof(seen));
	for (uint32_t i = 0; i < (touched_all ? EMBER_UNWIND_MAX_TABLES : ntouched); i++) {
		uint32_t slot = touched_all ? i : touched[i], n = tables[slot], last_pc = 0;

		if (!n || seen[slot])
			continue;
		seen[slot] = true;
		if (n > EMBER_UNWIND_MAX_TABLE_ROWS / EMBER_UNWIND_BLOCK_ROWS)
			maps_finding("a table of too many blocks", slot, n);
		if (t->building && t->build_slot == slot)
			maps_finding("a table in use while it is being built", slot, n);
		rows += (uint64_t)n * EMBER_UNWIND_BLOCK_ROWS;
		for (uint32_t b = 0; b < n; b++) {
			struct ember_unwind_block_key k = {slot, b};
			struct block_entry *e = find_block(&k);

			if (!e)
				maps_finding("a block of a table in use is missing", slot, b);
			for (int i = 0; i < EMBER_UNWIND_BLOCK_ROWS; i++) {
				const struct ember_unwind_row *r = &e->block.rows[i];

				if (!row_as_the_unwinder_reads_it(r))
					maps_finding("a row the unwinder cannot read", slot,
					             r->kind);
				if (r->pc < last_pc)
					maps_finding("rows out of order", slot, r->pc);
				last_pc = r->pc;
			}
		}
	}
	if (rows > ROW_BUDGET)
		maps_finding("more rows than the budget", (long)rows, ROW_BUDGET);
	for (size_t i = 0; i < MAX_BLOCKS_HERE; i++) {
		const struct block_entry *e = &blocks[i];

		if (e->used && e->key.block >= tables[e->key.table] &&
		    !(t->building && t->build_slot == e->key.table))
			maps_finding("a block outside its table", e->key.table, e->key.block);
	}
	interp_check();
	files_check();
	for (size_t i = 0; i < 64; i++) {
		const struct ember_unwind_proc *p = &procs[i].proc;

		if (!procs[i].used)
			continue;
		if (!procs[i].pid || p->count > EMBER_UNWIND_MAX_MAPPINGS || p->reserved)
			maps_finding("a process entry out of bounds", procs[i].pid, p->count);
		for (uint32_t m = 0; m < p->count; m++) {
			const struct ember_unwind_mapping *e = &p->mappings[m];

			if (e->start >= e->end || (m && e->start < p->mappings[m - 1].end) ||
			    (e->table != EMBER_UNWIND_NO_TABLE &&
			     e->table >= EMBER_UNWIND_MAX_TABLES) ||
			    e->reserved)
				maps_finding("a mapping the unwinder cannot search", procs[i].pid,
				             m);
		}
	}
}

static void maps_check_empty(void)
{
	for (uint32_t i = 0; i < (touched_all ? EMBER_UNWIND_MAX_TABLES : ntouched); i++) {
		uint32_t slot = touched_all ? i : touched[i];

		if (tables[slot])
			maps_finding("a table left after the reset", slot, tables[slot]);
	}
	for (size_t i = 0; i < MAX_BLOCKS_HERE; i++)
		if (blocks[i].used)
			maps_finding("a block left after the reset", blocks[i].key.table,
			             blocks[i].key.block);
	for (size_t i = 0; i < 64; i++)
		if (procs[i].used || interp_index[i].used || py_rows[i].used || files[i].used)
			maps_finding("a process left after the reset", procs[i].pid, 0);
}

static void maps_clear(void)
{
	memset(tables, 0, sizeof(tables));
	ntouched = 0;
	touched_all = false;
	memset(blocks, 0, sizeof(blocks));
	memset(procs, 0, sizeof(procs));
	memset(interp_index, 0, sizeof(interp_index));
	memset(py_rows, 0, sizeof(py_rows));
	memset(files, 0, sizeof(files));
	refuse_memory = false;
}

#endif
