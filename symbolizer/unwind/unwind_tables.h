/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keeps the collector's unwind tables in step with the processes being
 * sampled. A process is loaded when it execs, when it was running as
 * sampling started (the busiest first, a slice of time at a time), and when
 * a sample shows the unwinder had no tables for it (or met a mapping made
 * since): its executable mappings are read, each mapped file's table is
 * built once (cfi.c) and sent with the file it is for (device, inode, time
 * and size, executable segments: the unwinder then finds it from the file
 * behind a pc, for every process that maps the file, from its first sample),
 * and the process's mapping list follows, for what the kernel cannot find by
 * file. A table no process maps any more is dropped after a grace period.
 * The work per process is bounded (mappings, rows, reload rate) and counted
 * in the profile's statistics.
 *
 * A sample taken before its process's tables were loaded carries a copy of
 * its stack (bpf/records.h): it is unwound here (stack_unwind.c) with the
 * process's mapping list and the same rows, kept in memory up to
 * EMBER_UNWIND_KEEP_ROWS_BYTES, less when the memory budget asks
 * (ember_unwind_set_rows_limit; the least recently used are rebuilt when
 * needed again, at most every EMBER_UNWIND_REBUILD_NS: a host whose tables
 * outgrow the cache leaves some copies incomplete rather than rebuild them
 * over and over). The copy is the profiled process's memory: hostile.
 * What it holds (and the rows of a table while it is built) is charged to
 * the "unwind" owner (symbolizer/memory/mem_owners.h); the maps it reads
 * are handed over through on_maps and charged to their new owner.
 */
#ifndef EMBER_SYMBOLIZER_UNWIND_UNWIND_TABLES_H
#define EMBER_SYMBOLIZER_UNWIND_UNWIND_TABLES_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolizer/client/broker_client.h"
#include "symbolizer/symbols/objcache.h"
#include "symbolizer/process/maps_parser.h"
#include "shared/stat_sink.h"
#include "symbolizer/unwind/cfi.h"
#include "shared/slots.h"
#include "bpf/records.h"

#define EMBER_UNWIND_RELOAD_MIN_NS     (2ull * 1000000ull) /* per process, doubled when useless */
#define EMBER_UNWIND_RELOAD_MAX_NS     (10ull * 1000000000ull) /* back-off cap */
#define EMBER_UNWIND_IDLE_DROP_NS      (10ull * 1000000000ull) /* unmapped tables kept this long */
#define EMBER_UNWIND_MAX_SEGMENTS      16
#define EMBER_UNWIND_KEEP_ROWS_BYTES   (16u << 20) /* rows kept for unwinding stack copies */
#define EMBER_UNWIND_ROWS_FLOOR_BYTES  (1u << 20)  /* what the memory budget leaves them */
#define EMBER_UNWIND_BUILD_FLOOR_BYTES (4u << 20)  /* 100,000 rows: libc's table, many times */
/* Rows dropped from memory are built again for a stack copy at most this often per file. */
#define EMBER_UNWIND_REBUILD_NS  (30ull * 1000000000ull)
#define EMBER_UNWIND_MAX_RUNNING 65536 /* processes waiting for their first load */
/*
 * A process is loaded at exec and again this much later, when the dynamic
 * loader has mapped its libraries, so that its first samples find their
 * tables; if it has not yet (a busy CPU), again after twice as long, up to
 * EMBER_UNWIND_EXEC_RELOADS times.
 */
#define EMBER_UNWIND_EXEC_RELOAD_NS (2ull * 1000000ull)
#define EMBER_UNWIND_EXEC_RELOADS   6
#define EMBER_UNWIND_MAX_RELOADS    4096 /* exec reloads waiting */
/*
 * A new program's files go to on_file (their symbols are read ahead) once its
 * tables and list are out, as time allows: a large binary's symbols take longer
 * than its table, and the next program's tables come first. At most this many wait
 * (a descriptor each); more are not read ahead (symbolization opens them).
 */
#define EMBER_UNWIND_MAX_PRELOADS 32

struct ember_unwind_segment {
	uint64_t offset, vaddr, filesz;
};

/* One file's table; its slot in ember_unwind.files is the table's id in the collector. */
struct ember_unwind_file {
	struct ember_obj_key key;
	int error; /* 0: the table is loaded */
	/* What the unwinder knows of the file (UNWIND_FILE): named, with the table or as
	 * having none (a file that is no x86-64 ELF, or has no CFI: frame pointers). */
	bool named;
	struct ember_file_key kkey;
	struct ember_file_entry entry;
	/* It could not be opened through this process (gone, or its mapping): through another
	 * one it is asked for again at once. 0: the error is the file's own. */
	uint32_t failed_pid;
	uint32_t nrows;
	uint32_t refs; /* processes whose mapping list points here */
	uint64_t idle_since_ns;
	struct ember_unwind_segment segs[EMBER_UNWIND_MAX_SEGMENTS];
	uint32_t nsegs;
	struct ember_unwind_rows rows; /* for stack copies; NULL rows when not kept */
	uint64_t rows_used_ns;
	uint64_t rows_built_ns; /* for a stack copy, after they were dropped */
};

struct ember_unwind_process {
	uint32_t pid;
	uint32_t nfiles;
	uint32_t *files; /* slots this process holds a reference on */
	uint64_t loaded_ns;
	uint64_t maps_read_ns; /* when the maps behind `maps` were read (0: none) */
	uint64_t backoff_ns;
	uint64_t maps_digest; /* of the executable mappings at the last load */
	bool after_exec;      /* loaded at exec: the loader maps libraries right after */
	bool recheck_files;   /* the unwinder found a file changed: its tables are checked again */
	struct ember_unwind_mapping *maps; /* as sent at the last load, sorted by start */
	uint32_t nmaps;
};

/* A process to load again at due_ns. */
struct ember_unwind_reload {
	uint32_t pid;
	uint32_t attempt;
	uint64_t due_ns;
};

/* A file of a program just started whose symbols are to be read ahead (on_file). */
struct ember_unwind_preload {
	uint32_t pid;
	int fd;
	struct ember_map_entry e;
};

/* A process that was running when sampling started, waiting for its first load. */
struct ember_unwind_running {
	uint32_t pid;
	uint64_t cpu_ns;
};

/* The callers a stack copy gave, beyond the sample's own user frames. */
struct ember_copy_stack {
	uint32_t n;
	uint32_t stop; /* enum ember_unwind_stop: how the whole stack ends */
	uint64_t frames[EMBER_MAX_USTACK];
};

/*
 * Called with the maps of a process just read; may take them over (then it
 * leaves *maps empty). The symbolizer keeps them for symbolization: a
 * short-lived process may be gone by the time its samples are symbolized.
 */
typedef void (*ember_unwind_maps_fn)(void *ctx, uint32_t pid, struct ember_maps *maps,
                                     uint64_t now_ns);
/*
 * Called with each file opened for its table when a program has just started
 * (at exec and the reloads after it; fd stays the caller's), for its symbols:
 * not for the processes already running, whose files symbolization opens itself.
 */
typedef void (*ember_unwind_file_fn)(void *ctx, uint32_t pid, const struct ember_map_entry *e,
                                     int fd, uint64_t now_ns);

struct ember_unwind {
	/* The caller sets the callbacks and their context after ember_unwind_init (and, in
	 * tests, hold_back_procs); the rest is unwind_tables.c's. */
	ember_unwind_maps_fn on_maps;
	ember_unwind_file_fn on_file;
	void *on_maps_ctx; /* of both */
	struct ember_broker_client *broker;
	struct ember_kernel_maps *kmaps; /* the caller's: a gone process's maps (process/) */
	struct ember_slots files;        /* struct ember_unwind_file, by (dev, inode) */
	struct ember_slots procs;        /* struct ember_unwind_process *, by pid */
	uint64_t last_sweep_ns;
	uint64_t rows_bytes;  /* kept rows */
	uint64_t rows_limit;  /* EMBER_UNWIND_KEEP_ROWS_BYTES, or less for the memory budget */
	uint64_t build_bytes; /* what one table's build may take (0: no cap but its rows') */
	struct ember_unwind_running *running;
	uint32_t nrunning, running_cap;
	bool running_sorted;
	struct ember_unwind_reload reloads[EMBER_UNWIND_MAX_RELOADS]; /* a FIFO, by due time */
	uint32_t reloads_head, nreloads;
	struct ember_unwind_preload preloads[EMBER_UNWIND_MAX_PRELOADS]; /* a FIFO */
	uint32_t preloads_head, npreloads;
	bool disabled; /* the collector went away */
	/* Tests: neither process mapping lists nor files' entries are sent, so every sample
	 * carries a stack copy. */
	bool hold_back_procs;
	/* Tests: mapping lists are not sent (files' entries are): the kernel finds every table it
	 * uses by file. */
	bool hold_back_lists;
	uint8_t copy_stack[EMBER_MAX_STACK_COPY]; /* the stack a copy stands for, expanded */
	/* Work done and what samples showed, for the profile's statistics. */
	uint64_t process_loads, loads_deferred, tables_built, table_errors, rows_sent;
	uint64_t tables_dropped, mappings_truncated;
	uint64_t samples, samples_complete, samples_missed, stops[256];
	uint64_t samples_complete_copy;
	/* Complete in the kernel: every table from the process's list, or some found by file. */
	uint64_t samples_by_process, samples_by_file;
	/* Why a table was not found by file: none yet, the file changed, its mapping not found;
	 * lists ignored as older than their process's exec. */
	uint64_t missed_unseen, missed_changed, missed_no_vma, stale_lists;
	uint64_t files_named, files_changed, preloads_dropped;
	uint64_t copies, copy_bytes, copy_stack_bytes, copies_failed, copy_reloads, rows_rebuilt,
	    rows_evicted;
	uint64_t rows_not_rebuilt, rows_evicted_for_budget, tables_deferred_for_budget;
	uint64_t procs_gone; /* forgotten when a load found them gone (their exit met first) */
	uint64_t running_listed, running_loaded, exec_reloads, exec_reloads_skipped;
};

int ember_unwind_init(struct ember_unwind *u, struct ember_broker_client *broker);
void ember_unwind_free(struct ember_unwind *u);

/*
 * Builds the tables of the files nearly every process maps (libc, libm,
 * the dynamic loader, the vDSO), taken from the symbolizer's own mappings,
 * so that a new process needs little more than its own binary's table.
 */
void ember_unwind_prewarm(struct ember_unwind *u, uint64_t now_ns);
/*
 * pid ran a new program at exec_ns (CLOCK_MONOTONIC, as the sampler's
 * clock): the mappings read before then are dropped here and in the
 * collector, and the new program's are loaded.
 */
void ember_unwind_on_exec(struct ember_unwind *u, uint32_t pid, uint64_t exec_ns, uint64_t now_ns);
void ember_unwind_on_exit(struct ember_unwind *u, uint32_t pid, uint64_t now_ns);
/* Reads pid's maps again at the next ember_unwind_work() (a process context may have been
 * published): true when queued. */
bool ember_unwind_reread(struct ember_unwind *u, uint32_t pid, uint64_t now_ns);
/* A process that was running when sampling started (cpu_ns: CPU time it has used). */
void ember_unwind_on_running(struct ember_unwind *u, uint32_t pid, uint64_t cpu_ns);
/*
 * The work that waits for its time: reloads after exec that are due, the
 * symbols of new programs' files read ahead, then the processes
 * ember_unwind_on_running listed, the busiest first, until deadline_ns.
 * Returns when more is to be done: now_ns for preloads or running processes
 * still waiting, the next reload's time, or 0 for nothing.
 */
uint64_t ember_unwind_work(struct ember_unwind *u, uint64_t now_ns, uint64_t deadline_ns);
/*
 * Counts how the sample's user stack ended and loads the process if the
 * unwinder missed tables. A sample with a stack copy (copy, and its bytes
 * in stack) is unwound from it: returns true and the callers found in *out.
 */
bool ember_unwind_on_sample(struct ember_unwind *u, const struct ember_sample_event *s,
                            const struct ember_stack_copy *copy, const uint8_t *stack,
                            uint64_t now_ns, struct ember_copy_stack *out);

/*
 * The rows kept for stack copies, in bytes, and their cap: the memory
 * budget lowers it (at least EMBER_UNWIND_ROWS_FLOOR_BYTES, the least
 * recently used go at once) and raises it back, up to
 * EMBER_UNWIND_KEEP_ROWS_BYTES. Returns the bytes freed.
 */
size_t ember_unwind_rows_bytes(const struct ember_unwind *u);
size_t ember_unwind_rows_limit(const struct ember_unwind *u);
size_t ember_unwind_set_rows_limit(struct ember_unwind *u, size_t bytes);
/*
 * The memory one table's build may take (the room the budget leaves, at
 * least EMBER_UNWIND_BUILD_FLOOR_BYTES; 0: no cap): a file with more rows
 * than fit waits (30 s) rather than lift the resident
 * size by tens of MiB for a moment (a large library's table).
 */
void ember_unwind_set_build_bytes(struct ember_unwind *u, size_t bytes);

/* "[unwind stopped: reason]" for a stop reason other than EMBER_UNWIND_COMPLETE. */
const char *ember_unwind_stop_marker(uint32_t reason);

void ember_unwind_report_stats(const struct ember_unwind *u, const struct ember_stat_sink *sink);

/*
 * The kernel's vDSO image as this process sees it, the same for every 64-bit process: its
 * length (its headers, sections and loaded bytes; 0 when it is not a 64-bit ELF or is larger
 * than 1 MiB) and *out, its start.
 */
size_t ember_vdso_image(const void **out);

#endif
