/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loads the unwind tables and process mappings the symbolizer sends into
 * the unwinder's BPF maps, and the rows of Python processes into the Python
 * walker's map. Nothing here parses a binary: it checks that every field
 * and row is within the bounds bpf/unwind_table.h and bpf/python.h give
 * and that tables arrive in order, then copies them. A wrong but well-formed
 * table can only make wrong stacks; a malformed message ends the connection.
 *
 * bpf() commands used after start-up, on maps created at load: only
 * MAP_UPDATE_ELEM and MAP_DELETE_ELEM (blocks of rows, table slots,
 * processes, Python rows) and MAP_GET_NEXT_KEY (forgetting every process). No map is
 * created at run time, so no capability is needed.
 */
#ifndef EMBER_COLLECTOR_TABLE_LOADER_H
#define EMBER_COLLECTOR_TABLE_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include "ipc/proto.h"

#define EMBER_TABLES_MAX_ROWS (32u << 20) /* rows loaded at once: 256 MiB of kernel memory */

struct ember_tables {
	int tables_fd, blocks_fd, procs_fd;
	int py_procs_fd; /* -1 (set after init) until the Python walker's map is known */
	/* The table being created: in use only once COMMIT sets its slot's block count. */
	bool building, build_failed;
	uint32_t build_slot, build_rows, build_next, build_last_pc;
	uint32_t *slot_rows; /* rows of the table in each slot; 0: empty */
	uint64_t rows_loaded, max_rows;
	struct ember_unwind_proc staging;
	uint32_t staging_pid, staged;
	uint64_t tables_loaded, failures;
};

int ember_tables_init(struct ember_tables *t, int tables_fd, int blocks_fd, int procs_fd,
                      uint64_t max_rows);
void ember_tables_free(struct ember_tables *t);

/*
 * Handles one UNWIND_* or PY_PROC message (already size-checked). Returns 0 (also when
 * the kernel refused memory: counted and logged), or -EPROTO for a message
 * out of bounds or out of order.
 */
int ember_tables_handle(struct ember_tables *t, const union ember_msg *m);

/* The symbolizer went away: forgets every table and process it sent. */
void ember_tables_reset(struct ember_tables *t);

#endif
