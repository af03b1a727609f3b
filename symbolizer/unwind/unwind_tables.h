/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keeps the collector's unwind tables in step with the processes being
 * sampled. A process is loaded when it execs and when a sample shows the
 * unwinder had no tables for it (or met a mapping made since): its
 * executable mappings are read, each mapped file's table is built once
 * (cfi.c) and sent, shared by every process that maps the file, and
 * the process's mapping list follows. A table no process maps any more is
 * dropped after a grace period. The work per process is bounded (mappings,
 * rows, reload rate) and counted in the profile's statistics.
 */
#ifndef EMBER_SYMBOLIZER_UNWIND_UNWIND_TABLES_H
#define EMBER_SYMBOLIZER_UNWIND_UNWIND_TABLES_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolizer/broker_client.h"
#include "symbolizer/symbols/objcache.h"
#include "symbolizer/process/maps_parser.h"
#include "symbolizer/profile/profile.h"
#include "shared/slots.h"
#include "bpf/records.h"

#define EMBER_UNWIND_RELOAD_MIN_NS (2ull * 1000000ull)     /* per process, doubled when useless */
#define EMBER_UNWIND_RELOAD_MAX_NS (10ull * 1000000000ull) /* back-off cap */
#define EMBER_UNWIND_IDLE_DROP_NS  (10ull * 1000000000ull) /* unmapped tables kept this long */
#define EMBER_UNWIND_MAX_SEGMENTS  16

struct ember_unwind_segment {
	uint64_t offset, vaddr, filesz;
};

/* One file's table; its slot in ember_unwind.files is the table's id in the collector. */
struct ember_unwind_file {
	struct ember_obj_key key;
	int error; /* 0: the table is loaded */
	uint32_t nrows;
	uint32_t refs; /* processes whose mapping list points here */
	uint64_t idle_since_ns;
	struct ember_unwind_segment segs[EMBER_UNWIND_MAX_SEGMENTS];
	uint32_t nsegs;
};

struct ember_unwind_process {
	uint32_t pid;
	uint32_t nfiles;
	uint32_t *files; /* slots this process holds a reference on */
	uint64_t loaded_ns;
	uint64_t backoff_ns;
	uint64_t maps_digest; /* of the executable mappings at the last load */
	bool after_exec;      /* loaded at exec: the loader maps libraries right after */
};

/*
 * Called with the maps of a process just read; may take them over (then it
 * leaves *maps empty). The symbolizer keeps them for symbolization: a
 * short-lived process may be gone by the time its samples are symbolized.
 */
typedef void (*ember_unwind_maps_fn)(void *ctx, uint32_t pid, struct ember_maps *maps,
                                     uint64_t now_ns);

struct ember_unwind {
	struct ember_broker_client *broker;
	ember_unwind_maps_fn on_maps;
	void *on_maps_ctx;
	struct ember_slots files; /* struct ember_unwind_file, by (dev, inode) */
	struct ember_slots procs; /* struct ember_unwind_process *, by pid */
	uint64_t last_sweep_ns;
	bool disabled; /* the collector went away */
	/* Work done and what samples showed, for the profile's statistics. */
	uint64_t process_loads, loads_deferred, tables_built, table_errors, rows_sent;
	uint64_t tables_dropped, mappings_truncated;
	uint64_t samples, samples_complete, samples_missed, stops[256];
};

int ember_unwind_init(struct ember_unwind *u, struct ember_broker_client *broker);
void ember_unwind_free(struct ember_unwind *u);

/*
 * Builds the tables of the files nearly every process maps (libc, libm,
 * the dynamic loader, the vDSO), taken from the symbolizer's own mappings,
 * so that a new process needs little more than its own binary's table.
 */
void ember_unwind_prewarm(struct ember_unwind *u, uint64_t now_ns);
void ember_unwind_on_exec(struct ember_unwind *u, uint32_t pid, uint64_t now_ns);
void ember_unwind_on_exit(struct ember_unwind *u, uint32_t pid, uint64_t now_ns);
/* Counts how the sample's user stack ended; loads the process if the unwinder missed tables. */
void ember_unwind_on_sample(struct ember_unwind *u, const struct ember_sample_event *s,
                            uint64_t now_ns);

/* "[unwind stopped: reason]" for a stop reason other than EMBER_UNWIND_COMPLETE. */
const char *ember_unwind_stop_marker(uint32_t reason);

void ember_unwind_report_stats(const struct ember_unwind *u, struct ember_profile *p);

#endif
