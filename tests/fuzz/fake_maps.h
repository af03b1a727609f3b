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

#include "collector/table_loader.h"

#define FD_TABLES 1001
#define FD_BLOCKS 1002
#define FD_PROCS  1003
/* The maps keyed by process: the unwinder's mapping lists stood in for, the interpreters'
 * index and rows absent (-1). */
static const int fake_proc_fds[EMBER_PROC_MAPS] = {[0] = FD_PROCS, [1 ... EMBER_PROC_MAPS - 1] = -1};
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
	return fail(fd == FD_TABLES ? -EINVAL : -EBADF);
}

int bpf_map_get_next_key(int fd, const void *key, void *next)
{
	(void)key; /* the loader asks for the first key each time */
	if (fd != FD_PROCS)
		return fail(-EBADF);
	for (size_t i = 0; i < 64; i++)
		if (procs[i].used) {
			memcpy(next, &procs[i].pid, sizeof(uint32_t));
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
					maps_finding("a row the unwinder cannot read", slot, r->kind);
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
	for (size_t i = 0; i < 64; i++) {
		const struct ember_unwind_proc *p = &procs[i].proc;

		if (!procs[i].used)
			continue;
		if (!procs[i].pid || p->count > EMBER_UNWIND_MAX_MAPPINGS || p->reserved)
			maps_finding("a process entry out of bounds", procs[i].pid, p->count);
		for (uint32_t m = 0; m < p->count; m++) {
			const struct ember_unwind_mapping *e = &p->mappings[m];

			if (e->start >= e->end || (m && e->start < p->mappings[m - 1].end) ||
			    (e->table != EMBER_UNWIND_NO_TABLE && e->table >= EMBER_UNWIND_MAX_TABLES) ||
			    e->reserved)
				maps_finding("a mapping the unwinder cannot search", procs[i].pid, m);
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
			maps_finding("a block left after the reset", blocks[i].key.table, blocks[i].key.block);
	for (size_t i = 0; i < 64; i++)
		if (procs[i].used)
			maps_finding("a process left after the reset", procs[i].pid, 0);
}


static void maps_clear(void)
{
	memset(tables, 0, sizeof(tables));
	ntouched = 0;
	touched_all = false;
	memset(blocks, 0, sizeof(blocks));
	memset(procs, 0, sizeof(procs));
	refuse_memory = false;
}

#endif
