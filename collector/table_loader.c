// SPDX-License-Identifier: Apache-2.0
#include "collector/table_loader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "bpf/interp_rows.h"
#include "shared/err.h"
#include "shared/log.h"

/* The runtimes whose rows the collector loads (bpf/interp.h), one line each. */
const struct ember_interp_row_kind ember_interp_rows[EMBER_ROW_KINDS] = {
    [EMBER_RUNTIME_PYTHON] =
	EMBER_INTERP_ROW_KIND(struct ember_py_proc, "py_procs", eval_start, eval_end, 2, 1,
                              EMBER_PY_MAX_EVAL, ember_row_python_ok),
    [EMBER_RUNTIME_RUBY] = EMBER_INTERP_ROW_KIND(struct ember_rb_proc, "rb_procs", loop_start,
                                                 loop_end, 2, 2, EMBER_RB_MAX_LOOP, NULL),
    [EMBER_RUNTIME_PHP] = EMBER_INTERP_ROW_KIND(struct ember_php_proc, "php_procs", loop_start,
                                                loop_end, 1, 1, EMBER_PHP_MAX_LOOP, NULL),
    [EMBER_RUNTIME_PERL] = EMBER_INTERP_ROW_KIND(struct ember_perl_proc, "perl_procs", loop_start,
                                                 loop_end, 1, 1, EMBER_PERL_MAX_LOOP, NULL),
    [EMBER_RUNTIME_JVM] = EMBER_INTERP_ROW_KIND(struct ember_jvm_proc, "jvm_procs", heap_start,
                                                heap_end, 3, 1, EMBER_JVM_MAX_HEAP, NULL),
    [EMBER_RUNTIME_V8] = EMBER_INTERP_ROW_KIND(struct ember_v8_proc, "v8_procs", code_start,
                                               code_end, 3, 1, EMBER_V8_MAX_RANGE, NULL),
    [EMBER_ROW_THREAD_CTX] =
	EMBER_INTERP_ROW_KIND(struct ember_tctx_proc, "tctx_procs", slot, slot, 0, 0, 0, NULL),
};

bool ember_row_fields_ok(const uint64_t (*f)[3], size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (f[i][1] > f[i][2] || f[i][0] > f[i][2] - f[i][1])
			return false;
	return true;
}

bool ember_row_ranges_ok(const __u64 *start, const __u64 *end, size_t n, size_t required,
                         uint64_t limit, uint64_t max)
{
	for (size_t i = 0; i < n; i++)
		if (end[i] ? start[i] >= end[i] || end[i] > limit || end[i] - start[i] > max
		           : start[i] || i < required)
			return false;
	return true;
}

int ember_tables_init(struct ember_tables *t, int tables_fd, int blocks_fd, int files_fd,
                      const int proc_fds[EMBER_PROC_MAPS], uint64_t max_rows)
{
	memset(t, 0, sizeof(*t));
	t->tables_fd = tables_fd;
	t->blocks_fd = blocks_fd;
	t->files_fd = files_fd;
	memcpy(t->proc_fds, proc_fds, sizeof(t->proc_fds));
	t->max_rows = max_rows ? max_rows : EMBER_TABLES_MAX_ROWS;
	t->slot_rows = calloc(EMBER_UNWIND_MAX_TABLES, sizeof(*t->slot_rows));
	return t->slot_rows ? 0 : -ENOMEM;
}

/* Empties a slot: the unwinder stops using it before its blocks go. */
static void drop_slot(struct ember_tables *t, uint32_t slot, uint32_t rows)
{
	struct ember_unwind_block_key key = {slot, 0};
	uint64_t none = 0;

	bpf_map_update_elem(t->tables_fd, &slot, &none, BPF_ANY);
	for (; key.block < rows / EMBER_UNWIND_BLOCK_ROWS; key.block++)
		bpf_map_delete_elem(t->blocks_fd, &key);
	t->rows_loaded -= t->slot_rows[slot];
	t->slot_rows[slot] = 0;
}

/* Returns true, for a table being built: it failed. */
static bool failed(struct ember_tables *t, const char *what, int err)
{
	/* Counted, not fatal: the unwinder stops cleanly where a table is missing. */
	if (!t->failures++)
		log_warn_errno(
		    err, "cannot load an unwind %s: %m (stacks through it end in a marker)", what);
	return true;
}

/* Any bx_slot is safe (4 bits: a wrong one gives a wrong stack at worst). */
static bool row_ok(const struct ember_unwind_row *r)
{
	if (r->kind == EMBER_ROW_PLT)
		return r->cfa_slots >= 0 && r->cfa_slots < 16 && !r->fp_slot;
	if (r->kind == EMBER_ROW_CFA_SP || r->kind == EMBER_ROW_CFA_FP ||
	    r->kind == EMBER_ROW_CFA_BX)
		return r->cfa_slots > 0 && r->fp_slot >= EMBER_ROW_FP_SLOT_MIN && r->fp_slot <= 0;
	/* The kinds whose registers are fixed: no slots. */
	return r->kind < EMBER_ROW_KIND_MAX && !r->cfa_slots && !r->fp_slot;
}

static int on_table(struct ember_tables *t, const struct ember_msg_unwind_table *m)
{
	uint64_t entry;

	if (m->table >= EMBER_UNWIND_MAX_TABLES || m->reserved)
		return -EPROTO;
	switch (m->op) {
	case EMBER_UNWIND_TABLE_CREATE:
		if (t->building || !m->nrows || m->nrows > EMBER_UNWIND_MAX_TABLE_ROWS ||
		    m->nrows % EMBER_UNWIND_BLOCK_ROWS)
			return -EPROTO;
		if (t->slot_rows[m->table])
			drop_slot(t, m->table, t->slot_rows[m->table]);
		t->building = true;
		t->build_slot = m->table;
		t->build_rows = m->nrows;
		t->build_next = t->build_last_pc = 0;
		t->build_failed = t->rows_loaded + m->nrows > t->max_rows;
		if (t->build_failed)
			failed(t, "table (the row budget is spent)", -E2BIG);
		return 0;
	case EMBER_UNWIND_TABLE_COMMIT:
		if (!t->building || m->table != t->build_slot || t->build_next != t->build_rows)
			return -EPROTO;
		t->building = false;
		/* Its blocks, and above them its generation: its rows are new to the unwinder's
		 * row cache (bpf/unwind.bpf.h), whatever the slot held before. */
		entry = t->build_rows / EMBER_UNWIND_BLOCK_ROWS | (t->tables_loaded + 1) << 32;
		if (!t->build_failed &&
		    bpf_map_update_elem(t->tables_fd, &m->table, &entry, BPF_ANY))
			t->build_failed = failed(t, "table", neg_errno());
		t->slot_rows[m->table] = t->build_rows;
		t->rows_loaded += t->build_rows;
		if (t->build_failed)
			drop_slot(t, m->table, t->build_rows);
		else
			t->tables_loaded++;
		return 0;
	case EMBER_UNWIND_TABLE_DROP:
		if (t->building && m->table == t->build_slot)
			return -EPROTO;
		drop_slot(t, m->table, t->slot_rows[m->table]);
		return 0;
	default:
		return -EPROTO;
	}
}

static int on_rows(struct ember_tables *t, const struct ember_msg_unwind_rows *m)
{
	struct ember_unwind_block_key key = {m->table, m->first / EMBER_UNWIND_BLOCK_ROWS};
	uint32_t count = m->count, last_pc = t->build_last_pc;

	if (!t->building || m->table != t->build_slot || m->first != t->build_next || !count ||
	    count > EMBER_UNWIND_ROWS_PER_MSG || count % EMBER_UNWIND_BLOCK_ROWS ||
	    count > t->build_rows - m->first || m->reserved)
		return -EPROTO;
	for (uint32_t i = 0; i < count; i++) {
		/* Sorted rows: the unwinder's binary search depends on it. */
		if (!row_ok(&m->rows[i]) || m->rows[i].pc < last_pc)
			return -EPROTO;
		last_pc = m->rows[i].pc;
	}
	t->build_last_pc = last_pc;
	t->build_next += count;
	for (uint32_t i = 0; i < count && !t->build_failed;
	     i += EMBER_UNWIND_BLOCK_ROWS, key.block++)
		if (bpf_map_update_elem(t->blocks_fd, &key, &m->rows[i], BPF_ANY))
			t->build_failed = failed(t, "table", neg_errno());
	return 0;
}

/*
 * A file's entry: a loaded table's slot (or none), executable segments in order. Which
 * file a table is for is the symbolizer's word, as a process's list is: a wrong entry in
 * bounds (another file's table, a slot emptied since) can only make wrong stacks.
 */
static int on_file(struct ember_tables *t, const struct ember_msg_unwind_file *m)
{
	const struct ember_file_entry *f = &m->file;
	uint32_t slot = f->table;

	if (m->reserved || m->key.reserved || f->reserved || f->nsegs > EMBER_UNWIND_FILE_SEGS)
		return -EPROTO;
	if (m->op == EMBER_UNWIND_FILE_DROP) {
		bpf_map_delete_elem(t->files_fd, &m->key);
		return 0;
	}
	if (m->op != EMBER_UNWIND_FILE_SET ||
	    (slot != EMBER_UNWIND_NO_TABLE &&
	     (slot >= EMBER_UNWIND_MAX_TABLES || !t->slot_rows[slot])))
		return -EPROTO;
	for (uint32_t i = 0; i < EMBER_UNWIND_FILE_SEGS; i++) {
		const struct ember_file_seg *g = &f->segs[i];

		if (i >= f->nsegs ? g->start || g->end || g->delta
		                  : g->start >= g->end || (i && g->start < g[-1].end))
			return -EPROTO;
	}
	if (bpf_map_update_elem(t->files_fd, &m->key, f, BPF_ANY))
		failed(t, "file entry", neg_errno());
	return 0;
}

static int on_proc(struct ember_tables *t, const struct ember_msg_unwind_proc *m)
{
	struct ember_unwind_proc *s = &t->staging;

	if (!m->pid || m->pid > (1u << 22) || m->total > EMBER_UNWIND_MAX_MAPPINGS ||
	    m->count > EMBER_UNWIND_MAPPINGS_PER_MSG || m->first > m->total ||
	    m->count > m->total - m->first)
		return -EPROTO;
	if (!m->total) {
		bpf_map_delete_elem(t->proc_fds[0], &m->pid);
		return 0;
	}
	if (!m->first) {
		memset(s, 0, sizeof(*s));
		t->staging_pid = m->pid;
		s->count = m->total;
		s->read_ns = m->read_ns;
		t->staged = 0;
	} else if (m->pid != t->staging_pid || m->total != s->count || m->first != t->staged ||
	           m->read_ns != s->read_ns) {
		return -EPROTO;
	}
	for (uint32_t i = 0; i < m->count; i++) {
		const struct ember_unwind_mapping *e = &m->mappings[i];
		uint32_t at = m->first + i;

		if (e->start >= e->end || (at && e->start < s->mappings[at - 1].end) ||
		    (e->table != EMBER_UNWIND_NO_TABLE && e->table >= EMBER_UNWIND_MAX_TABLES) ||
		    e->reserved)
			return -EPROTO;
		s->mappings[at] = *e;
	}
	t->staged += m->count;
	if (t->staged == s->count) {
		if (bpf_map_update_elem(t->proc_fds[0], &t->staging_pid, s, BPF_ANY))
			failed(t, "process", neg_errno());
		t->proc_maps_set |= 1;
		t->staging_pid = 0;
	}
	return 0;
}

/*
 * A known runtime, exactly its row size, a row its own check takes: indexed, then loaded.
 * REMOVE leaves the index naming the runtime: a process whose runtime has no row for it is
 * not walked, and its exit deletes it from every map (ring_drain.c).
 */
/* What every row holds, where its kind says: its loop's ranges, reserved bytes of 0. */
static bool row_common_ok(const struct ember_interp_row_kind *k, const uint8_t *row)
{
	static const uint8_t zero[16];
	__u64 start[4], end[4];

	if (k->ranges > 4 || k->reserved_len > sizeof(zero))
		return false;
	memcpy(start, row + k->start, 8u * k->ranges);
	memcpy(end, row + k->end, 8u * k->ranges);
	return ember_row_ranges_ok(start, end, k->ranges, k->required, EMBER_INTERP_USER_LIMIT,
	                           k->max_range) &&
	       !memcmp(row + k->reserved, zero, k->reserved_len) && (!k->ok || k->ok(row));
}

static int on_interp_row(struct ember_tables *t, const struct ember_msg_interp_row *m)
{
	const struct ember_interp_row_kind *k =
	    m->runtime < EMBER_ROW_KINDS && ember_interp_rows[m->runtime].size
		? &ember_interp_rows[m->runtime]
		: NULL;
	bool set = m->op == EMBER_INTERP_ROW_SET;
	int rows = k ? t->proc_fds[1 + m->runtime] : -1;

	if (!k || !m->pid || m->pid > (1u << 22) || m->reserved ||
	    (!set && m->op != EMBER_INTERP_ROW_REMOVE) ||
	    m->hdr.length != EMBER_MSG_INTERP_ROW_HEADER + (set ? k->size : 0) ||
	    (set && !row_common_ok(k, m->row)))
		return -EPROTO;
	if (!set) {
		bpf_map_delete_elem(rows, &m->pid);
		return 0;
	}
	t->proc_maps_set |= 1u << 1 | 1u << (1 + m->runtime);
	if ((m->runtime < EMBER_RUNTIME_MAX && /* the other kinds are not indexed */
	     bpf_map_update_elem(t->proc_fds[1], &m->pid, &m->runtime, BPF_ANY)) ||
	    bpf_map_update_elem(rows, &m->pid, m->row, BPF_ANY))
		failed(t, "interpreter row", neg_errno());
	return 0;
}

int ember_tables_handle(struct ember_tables *t, const union ember_msg *m)
{
	switch (m->hdr.type) {
	case EMBER_MSG_UNWIND_TABLE:
		return on_table(t, &m->unwind_table);
	case EMBER_MSG_UNWIND_ROWS:
		return on_rows(t, &m->unwind_rows);
	case EMBER_MSG_UNWIND_PROC:
		return on_proc(t, &m->unwind_proc);
	case EMBER_MSG_UNWIND_FILE:
		return on_file(t, &m->unwind_file);
	case EMBER_MSG_INTERP_ROW:
		return on_interp_row(t, &m->interp_row);
	default:
		return -EPROTO;
	}
}

void ember_tables_reset(struct ember_tables *t)
{
	struct ember_file_key next; /* the largest key of the maps emptied */

	/* A table cut off before its COMMIT: its blocks would otherwise stay in the map. */
	if (t->building)
		drop_slot(t, t->build_slot, t->build_next);
	t->building = false;
	t->staging_pid = 0;
	for (uint32_t slot = 0; slot < EMBER_UNWIND_MAX_TABLES && t->slot_rows; slot++)
		if (t->slot_rows[slot])
			drop_slot(t, slot, t->slot_rows[slot]);
	/* Deleting the first key each time walks the whole map without a cursor. */
	for (int i = 0, fd; i <= EMBER_PROC_MAPS; i++)
		while ((fd = i < EMBER_PROC_MAPS ? t->proc_fds[i] : t->files_fd) >= 0 &&
		       !bpf_map_get_next_key(fd, NULL, &next) && !bpf_map_delete_elem(fd, &next))
			;
}

void ember_tables_free(struct ember_tables *t)
{
	free(t->slot_rows);
	t->slot_rows = NULL;
}
