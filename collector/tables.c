// SPDX-License-Identifier: Apache-2.0
#include "tables.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "shared/err.h"
#include "shared/log.h"

int ember_tables_init(struct ember_tables *t, int tables_fd, int procs_fd, uint64_t max_rows)
{
	memset(t, 0, sizeof(*t));
	t->tables_fd = tables_fd;
	t->procs_fd = procs_fd;
	t->build_fd = -1;
	t->max_rows = max_rows ? max_rows : EMBER_TABLES_MAX_ROWS;
	t->slot_rows = calloc(EMBER_UNWIND_MAX_TABLES, sizeof(*t->slot_rows));
	return t->slot_rows ? 0 : -ENOMEM;
}

static void end_build(struct ember_tables *t)
{
	if (t->build_fd >= 0)
		close(t->build_fd);
	t->build_fd = -1;
	t->building = false;
}

static void failed(struct ember_tables *t, const char *what, int err)
{
	/* Counted, not fatal: the unwinder stops cleanly where a table is missing. */
	if (!t->failures++)
		log_warn("cannot load an unwind %s: %s (stacks through it end in a marker)", what,
			 strerror(-err));
}

static bool row_ok(const struct ember_unwind_row *r)
{
	switch (r->kind) {
	case EMBER_ROW_CFA_SP:
	case EMBER_ROW_CFA_FP:
		return r->cfa_slots > 0 && r->fp_slot >= EMBER_ROW_FP_SLOT_MIN && r->fp_slot <= 0;
	case EMBER_ROW_PLT:
		return r->cfa_slots >= 0 && r->cfa_slots < 16 && !r->fp_slot;
	case EMBER_ROW_INVALID:
	case EMBER_ROW_GAP:
	case EMBER_ROW_SIGNAL:
	case EMBER_ROW_END:
		return !r->cfa_slots && !r->fp_slot;
	default:
		return false;
	}
}

static int on_table(struct ember_tables *t, const struct ember_msg_unwind_table *m)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_INNER_MAP);
	int err;

	if (m->table >= EMBER_UNWIND_MAX_TABLES || m->reserved)
		return -EPROTO;
	switch (m->op) {
	case EMBER_UNWIND_TABLE_CREATE:
		if (t->building || !m->nrows || m->nrows > EMBER_UNWIND_MAX_TABLE_ROWS)
			return -EPROTO;
		t->building = true;
		t->build_slot = m->table;
		t->build_rows = m->nrows;
		t->build_next = t->build_last_pc = 0;
		t->build_failed = t->rows_loaded + m->nrows > t->max_rows;
		if (t->build_failed) {
			failed(t, "table (the row budget is spent)", -E2BIG);
			return 0;
		}
		t->build_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ember_rows", sizeof(uint32_t),
					     sizeof(struct ember_unwind_row), m->nrows, &opts);
		if (t->build_fd < 0) {
			t->build_failed = true;
			failed(t, "table", t->build_fd);
		}
		return 0;
	case EMBER_UNWIND_TABLE_COMMIT:
		if (!t->building || m->table != t->build_slot || t->build_next != t->build_rows)
			return -EPROTO;
		if (!t->build_failed) {
			err = bpf_map_update_elem(t->tables_fd, &m->table, &t->build_fd, BPF_ANY);
			if (err) {
				failed(t, "table", neg_errno());
			} else {
				t->rows_loaded += t->build_rows - t->slot_rows[m->table];
				t->slot_rows[m->table] = t->build_rows;
				t->tables_loaded++;
			}
		}
		end_build(t);
		return 0;
	case EMBER_UNWIND_TABLE_DROP:
		if (t->building && m->table == t->build_slot)
			return -EPROTO;
		bpf_map_delete_elem(t->tables_fd, &m->table);
		t->rows_loaded -= t->slot_rows[m->table];
		t->slot_rows[m->table] = 0;
		return 0;
	default:
		return -EPROTO;
	}
}

static int on_rows(struct ember_tables *t, const struct ember_msg_unwind_rows *m)
{
	uint32_t keys[EMBER_UNWIND_ROWS_PER_MSG], count = m->count;

	if (!t->building || m->table != t->build_slot || m->first != t->build_next || !count ||
	    count > EMBER_UNWIND_ROWS_PER_MSG || count > t->build_rows - m->first || m->reserved)
		return -EPROTO;
	for (uint32_t i = 0; i < count; i++) {
		/* Sorted rows: the unwinder's binary search depends on it. */
		if (!row_ok(&m->rows[i]) || m->rows[i].pc < t->build_last_pc)
			return -EPROTO;
		t->build_last_pc = m->rows[i].pc;
		keys[i] = m->first + i;
	}
	t->build_next += count;
	if (!t->build_failed &&
	    bpf_map_update_batch(t->build_fd, keys, m->rows, &count, NULL)) {
		t->build_failed = true;
		failed(t, "table", neg_errno());
	}
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
		bpf_map_delete_elem(t->procs_fd, &m->pid);
		return 0;
	}
	if (!m->first) {
		memset(s, 0, sizeof(*s));
		t->staging_pid = m->pid;
		s->count = m->total;
		t->staged = 0;
	} else if (m->pid != t->staging_pid || m->total != s->count || m->first != t->staged) {
		return -EPROTO;
	}
	for (uint32_t i = 0; i < m->count; i++) {
		const struct ember_unwind_mapping *e = &m->mappings[i];
		uint32_t at = m->first + i;

		if (e->start >= e->end || (at && e->start < s->mappings[at - 1].end) ||
		    (e->table != EMBER_UNWIND_NO_TABLE && e->table >= EMBER_UNWIND_MAX_TABLES) ||
		    e->nrows > EMBER_UNWIND_MAX_TABLE_ROWS)
			return -EPROTO;
		s->mappings[at] = *e;
	}
	t->staged += m->count;
	if (t->staged == s->count) {
		if (bpf_map_update_elem(t->procs_fd, &t->staging_pid, s, BPF_ANY))
			failed(t, "process", neg_errno());
		else
			t->procs_loaded++;
		t->staging_pid = 0;
	}
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
	default:
		return -EPROTO;
	}
}

void ember_tables_reset(struct ember_tables *t)
{
	uint32_t pid, next;

	end_build(t);
	t->staging_pid = 0;
	for (uint32_t slot = 0; slot < EMBER_UNWIND_MAX_TABLES && t->slot_rows; slot++)
		if (t->slot_rows[slot]) {
			bpf_map_delete_elem(t->tables_fd, &slot);
			t->slot_rows[slot] = 0;
		}
	t->rows_loaded = 0;
	/* Deleting the first key each time walks the whole map without a cursor. */
	while (t->procs_fd >= 0 && !bpf_map_get_next_key(t->procs_fd, NULL, &next)) {
		pid = next;
		if (bpf_map_delete_elem(t->procs_fd, &pid))
			break;
	}
}

void ember_tables_free(struct ember_tables *t)
{
	if (t->slot_rows)
		ember_tables_reset(t);
	free(t->slot_rows);
	t->slot_rows = NULL;
}
