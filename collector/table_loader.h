/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loads the unwind tables and process mappings the symbolizer sends into
 * the unwinder's BPF maps, and the rows of interpreted processes into their
 * runtime's walker's map. Nothing here parses a binary: it checks that every
 * field and row is within the bounds bpf/unwind_table.h and the runtime's
 * row check (ember_interp_rows) give and that tables arrive in order, then
 * copies them. A wrong but well-formed table can only make wrong stacks; a
 * malformed message ends the connection.
 *
 * bpf() commands used after start-up, on maps created at load: only
 * MAP_UPDATE_ELEM and MAP_DELETE_ELEM (blocks of rows, table slots, file
 * entries, processes, interpreter rows), MAP_LOOKUP_ELEM (a process's
 * runtime) and MAP_GET_NEXT_KEY (forgetting
 * every process and file). No map is created at run
 * time, so no capability is needed.
 */
#ifndef EMBER_COLLECTOR_TABLE_LOADER_H
#define EMBER_COLLECTOR_TABLE_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/proto.h"

#define EMBER_TABLES_MAX_ROWS (32u << 20) /* rows loaded at once: 256 MiB of kernel memory */

/*
 * The maps keyed by process (tgid), as bpf_loader finds them: [0] the unwinder's mapping
 * lists, [1] the interpreter walkers' index (tgid -> runtime), [1 + kind] the rows of that
 * runtime or other kind (bpf/interp.h; tgid -> row). An exit deletes the process from each.
 */
#define EMBER_PROC_MAPS (1 + EMBER_ROW_KINDS)

/*
 * What the collector knows of a runtime's rows: one entry per runtime, in table_loader.c.
 * Every row holds its interpreter loop's code ranges and reserved bytes, which the
 * collector checks for every runtime; the walker bounds every offset and window itself
 * (bpf/interp.h). A runtime whose row holds more than that to check gives ok too.
 */
struct ember_interp_row_kind {
	uint32_t size;   /* of a row: a SET message carries exactly this many bytes; 0: none */
	const char *map; /* the walker's map (tgid -> row) in the sampler */
	/* The loop's ranges: ranges u64 starts at start, their ends at end; the first required
	 * of them not empty; each at most max_range long. */
	uint16_t start, end, reserved, reserved_len;
	uint8_t ranges, required;
	uint64_t max_range;
	bool (*ok)(const void *row); /* NULL: nothing more to check */
};

/* The entry of row struct T, its ranges at its members start and end. */
#define EMBER_INTERP_ROW_KIND(T, map, start, end, ranges, required, max_range, ok)                 \
	{                                                                                          \
		sizeof(T), (map), offsetof(T, start), offsetof(T, end), offsetof(T, reserved),     \
		    sizeof(((T *)0)->reserved), (ranges), (required), (max_range), (ok)            \
	}

/* Each runtime's entry, by enum ember_runtime, then the other kinds' (EMBER_ROW_*). */
extern const struct ember_interp_row_kind ember_interp_rows[EMBER_ROW_KINDS];

/* CPython's check of what its row holds beyond the ranges (row_python.c). */
bool ember_row_python_ok(const void *row);

/*
 * The checks rows share. Each field {offset, bytes used there, limit}: offset + bytes <=
 * limit (without overflow), as a window read at offset must fit.
 */
bool ember_row_fields_ok(const uint64_t (*f)[3], size_t n);
/*
 * Each code range [start[i], end[i]) (an interpreter loop and its parts) is empty (both 0,
 * allowed only for i >= required) or ordered, ends at or below limit and is at most max long.
 */
bool ember_row_ranges_ok(const __u64 *start, const __u64 *end, size_t n, size_t required,
                         uint64_t limit, uint64_t max);

struct ember_tables {
	int tables_fd, blocks_fd, files_fd, proc_fds[EMBER_PROC_MAPS];
	/* The table being created: in use only once COMMIT sets its slot's block count. */
	bool building, build_failed;
	uint32_t build_slot, build_rows, build_next, build_last_pc;
	uint32_t *slot_rows; /* rows of the table in each slot; 0: empty */
	uint64_t rows_loaded, max_rows;
	struct ember_unwind_proc staging;
	uint32_t staging_pid, staged;
	uint64_t tables_loaded, failures;
	uint32_t proc_maps_set; /* bit i: proc_fds[i] ever held a process: an exit deletes there */
};

int ember_tables_init(struct ember_tables *t, int tables_fd, int blocks_fd, int files_fd,
                      const int proc_fds[EMBER_PROC_MAPS], uint64_t max_rows);
/* Frees the loader's own memory; the maps keep what they hold (they go with their BPF
 * object: emptying them entry by entry took 0.2 s at every exit). */
void ember_tables_free(struct ember_tables *t);

/*
 * Handles one UNWIND_* or INTERP_ROW message (already checked against its type's size).
 * Returns 0 (also when the kernel refused memory: counted and logged), or -EPROTO for a
 * message out of bounds or out of order.
 */
int ember_tables_handle(struct ember_tables *t, const union ember_msg *m);

/* The symbolizer went away: forgets every table and process it sent. */
void ember_tables_reset(struct ember_tables *t);

#endif
