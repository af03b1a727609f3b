/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the symbolizer knows of each process it meets, and all of it owned
 * here: its executable mappings (read through a broker descriptor when first
 * needed, again after exec or when an address falls outside every mapping,
 * or handed over by the unwind loader, which read them first), its name, and
 * the facts OTLP resources want (the executable's path, the container).
 *
 * Lifetime and bounds. An entry is made at a process's first sample or when
 * its maps are handed over, and freed EMBER_PROCESS_EXIT_GRACE_NS after its
 * exit record (a sample drained from the kernel's other ring may still
 * follow the record), or once it has gone EMBER_PROCESS_IDLE_NS without a
 * sample; ember_processes_sweep() does both. At most EMBER_PROCESSES_MAX
 * entries (the idlest makes room), and ember_processes_shrink() frees the
 * idlest when the memory budget asks. Only executable mappings are kept, in
 * arrays of their exact size: no frame is in any other. What the table holds
 * is charged to the "processes" owner (symbolizer/memory/mem_owners.h).
 *
 * Hostile input: the maps text (paths are chosen by the process: see
 * maps_parser.h) and the cgroup list (container.h).
 */
#ifndef EMBER_SYMBOLIZER_PROCESS_PROCESS_TABLE_H
#define EMBER_SYMBOLIZER_PROCESS_PROCESS_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolizer/client/broker_client.h"
#include "symbolizer/process/container.h"
#include "symbolizer/process/kernel_maps.h"
#include "symbolizer/process/maps_parser.h"
#include "shared/slots.h"
#include "shared/stat_sink.h"

#define EMBER_MAPS_RELOAD_MIN_NS     (200ull * 1000000ull) /* per process */
#define EMBER_MAPS_RELOAD_SEEN_NS    (10ull * 1000000ull) /* ... for an address seen after a read */
#define EMBER_PROCESS_EXIT_GRACE_NS  (2ull * 1000000000ull)   /* kept after the exit record */
#define EMBER_PROCESS_IDLE_NS        (120ull * 1000000000ull) /* kept without a sample */
#define EMBER_PROCESSES_SWEEP_NS     (1000ull * 1000000ull)   /* between sweeps */
#define EMBER_PROCESSES_MAX          65536
#define EMBER_PROCESS_FACTS_RETRY_NS (1000ull * 1000000ull)

struct ember_process {
	/* Callers may read these two; only process_table.c writes them. */
	uint32_t pid;
	char comm[16]; /* the main thread's name, once known ("" before) */

	/* The rest is process_table.c's own. */
	uint32_t slot;
	struct ember_maps maps; /* executable mappings only */
	bool maps_loaded;
	bool maps_stale;      /* exec happened: reload before the next lookup */
	bool maps_after_exit; /* read once more after its exit (a snapshot may tell more) */
	uint8_t seen_misses;  /* reads for an address seen after the last that did not find it */
	int maps_error;
	uint64_t maps_loaded_ns;
	uint64_t maps_generation; /* the table's count of maps set when these were */
	uint64_t last_seen_ns; /* the last sample (or maps handed over) */
	uint64_t exited_ns;    /* when its exit record was read; 0 while it lives */
	/* Facts for OTLP resources, asked for once per program. */
	bool facts_loaded;
	uint64_t facts_retry_ns; /* the broker was busy: ask again after this */
	char *exe_path;          /* malloc'd, or NULL when unknown */
	char container_id[EMBER_CONTAINER_ID_LEN + 1]; /* "" when not in a container */
	/* When its maps are next read again for a context it may have published since (0: not
	 * planned yet), and the gap before the one after. */
	uint64_t context_look_ns, context_gap_ns;
	bool exec_seen; /* its program started while ember watched (an exec record) */
};

/* Pids of recent exec records whose process had no entry yet (its first sample follows),
 * direct-mapped: a new entry learns it was exec'd, in a fixed kilobyte. */
#define EMBER_RECENT_EXECS 256

/* Every field is process_table.c's: read the table through the functions below. */
struct ember_processes {
	struct ember_broker_client *broker;
	struct ember_kernel_maps *kmaps; /* a gone process's maps, as the kernel reported them */
	struct ember_slots slots;        /* struct ember_process * per slot */
	size_t maps_bytes;               /* entries and paths held, all processes */
	uint64_t last_sweep_ns;
	uint64_t maps_generations; /* maps set, any process: each set's number */
	uint64_t maps_loads, maps_failures, maps_adopted;
	uint64_t freed_exited, freed_idle, evicted, shrunk;
	uint64_t facts_requests, facts_failures;
	uint32_t recent_execs[EMBER_RECENT_EXECS];
};

int ember_processes_init(struct ember_processes *t, struct ember_broker_client *broker);
void ember_processes_free(struct ember_processes *t);

/* The entry for pid, made if new (the idlest makes room when full); a sample of it was seen
 * at now_ns. NULL: no memory. */
struct ember_process *ember_processes_get(struct ember_processes *t, uint32_t pid, uint64_t now_ns);
/* The entry for pid, or NULL. */
struct ember_process *ember_processes_find(struct ember_processes *t, uint32_t pid);
size_t ember_processes_count(const struct ember_processes *t);

/* The process record stream: exec at exec_ns (CLOCK_MONOTONIC; a new program: maps read
 * before it are forgotten, its name and facts are stale) and exit (the entry goes
 * EMBER_PROCESS_EXIT_GRACE_NS later). */
void ember_processes_on_exec(struct ember_processes *t, uint32_t pid, uint64_t exec_ns);
void ember_processes_on_exit(struct ember_processes *t, uint32_t pid, uint64_t now_ns);

/*
 * Takes over maps of pid that someone else read (the unwind loader) and
 * leaves *maps empty. A short-lived process may be gone by the time its
 * samples are symbolized: these are then the only maps there are.
 */
void ember_processes_adopt_maps(struct ember_processes *t, uint32_t pid, struct ember_maps *maps,
                                uint64_t now_ns);

/*
 * Reads pid's maps (all of them) through the broker into out; for a process that is gone, its
 * mappings as the kernel reported them (kmaps, if not NULL) rather than a snapshot made while
 * it ran, which may be older than its last mapping. Returns 0 or a negative errno.
 */
int ember_process_fetch_maps(struct ember_broker_client *broker, struct ember_kernel_maps *kmaps,
                             uint32_t pid, struct ember_maps *out);

/*
 * The mapping containing addr, (re)loading the maps through the broker when
 * needed and allowed. NULL when no executable mapping contains addr.
 */
const struct ember_map_entry *ember_process_find_mapping(struct ember_processes *t,
                                                         struct ember_process *p, uint64_t addr,
                                                         uint64_t now_ns);
/* The same for an address seen (sampled) at seen_ns: maps read before then that lack it are
 * read again, EMBER_MAPS_RELOAD_SEEN_NS after the last read (twice as long after each
 * such read that did not find it, up to EMBER_MAPS_RELOAD_MIN_NS). */
const struct ember_map_entry *ember_process_find_mapping_at(struct ember_processes *t,
                                                            struct ember_process *p, uint64_t addr,
                                                            uint64_t seen_ns, uint64_t now_ns);
/* The path of a mapping ember_process_find_mapping returned. */
const char *ember_process_mapping_path(const struct ember_process *p,
                                       const struct ember_map_entry *e);

/* Where p publishes its process context (maps_parser.h), as its maps last read said; 0: none. */
/* A number that changes whenever p's maps do (new or read again), never reused; 0 while they
 * are to be read (an address found now may not be found after). */
uint64_t ember_process_maps_generation(const struct ember_process *p);
/* How many times any process's maps were set (read, handed over, dropped). */
uint64_t ember_processes_maps_sets(const struct ember_processes *t);
uint64_t ember_process_context_addr(const struct ember_process *p);

/*
 * Whether p's maps are worth reading again now for a process context published since they
 * were read (an SDK starts when its program is well under way): true at most at
 * EMBER_CONTEXT_LOOK_FIRST_NS after the first ask of a program exec'd while ember watched
 * (EMBER_CONTEXT_LOOK_RUNNING_NS for one already running: its SDK most likely started long
 * ago, and a busy host has hundreds), then at twice the gap each time, up to every
 * EMBER_CONTEXT_LOOK_MAX_NS; never once p has a context.
 */
bool ember_process_context_look_due(struct ember_process *p, uint64_t now_ns);

#define EMBER_CONTEXT_LOOK_FIRST_NS   (1000000000ull)
#define EMBER_CONTEXT_LOOK_RUNNING_NS (64ull * 1000000000ull)
#define EMBER_CONTEXT_LOOK_MAX_NS     (600ull * 1000000000ull)

/* Whether p's exit record was read (it is kept a moment for the samples still coming). */
static inline bool ember_process_exited(const struct ember_process *p)
{
	return p->exited_ns != 0;
}

/* A sample's thread name: the process is named after its main thread. */
void ember_process_learn_comm(struct ember_process *p, const char *comm, bool main_thread);

/*
 * The facts about p's program, asked for through the broker once per
 * program: true with *exe_path (or NULL when unknown) and *container_id
 * ("" when none), false while they are not known yet (the broker asked to
 * come back later).
 */
bool ember_process_facts(struct ember_processes *t, struct ember_process *p, uint64_t now_ns,
                         const char **exe_path, const char **container_id);

/* Frees the processes past their exit grace or idle period (at most once per
 * EMBER_PROCESSES_SWEEP_NS). */
void ember_processes_sweep(struct ember_processes *t, uint64_t now_ns);
/*
 * The memory budget asks for room: frees the processes idle longest (none
 * sampled in the last second) until about `bytes` are freed. Returns the bytes freed.
 */
size_t ember_processes_shrink(struct ember_processes *t, size_t bytes, uint64_t now_ns);

/* processes.* and maps.* statistics into p. */
void ember_processes_report_stats(const struct ember_processes *t,
                                  const struct ember_stat_sink *sink, bool with_facts);

#endif
