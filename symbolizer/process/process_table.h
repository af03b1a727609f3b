/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the symbolizer knows of each sampled process: its mappings (read
 * through a broker descriptor on first sight, again after exec or when an
 * address falls outside every mapping) and whether it has exited.
 */
#ifndef EMBER_SYMBOLIZER_PROCESS_PROCESS_TABLE_H
#define EMBER_SYMBOLIZER_PROCESS_PROCESS_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolizer/broker_client.h"
#include "symbolizer/process/maps_parser.h"
#include "shared/slots.h"

#define EMBER_MAPS_RELOAD_MIN_NS (200ull * 1000000ull) /* per process */
#define EMBER_PROCESSES_MAX      65536

struct ember_process {
	uint32_t pid;
	uint32_t slot; /* in ember_processes.slots, while it lives */
	struct ember_maps maps;
	bool maps_loaded;
	bool maps_stale; /* exec happened: reload before the next lookup */
	int maps_error;
	uint64_t maps_loaded_ns;
	uint64_t last_seen_ns;
	bool exited;
	char comm[16]; /* the main thread's name, once known */
	/* Facts for OTLP resources, asked for once per program (when wanted). */
	bool facts_loaded;
	uint64_t facts_retry_ns; /* the broker was busy: ask again after this */
	char *exe_path;          /* malloc'd, or NULL when unknown */
	char container_id[65];   /* "" when not in a container */
};

struct ember_processes {
	struct ember_slots slots; /* struct ember_process *, by pid */
	uint64_t maps_loads, maps_failures, evictions;
};

int ember_processes_init(struct ember_processes *t);
void ember_processes_free(struct ember_processes *t);

/* The entry for pid, created if new (evicting the idlest when full). NULL: no memory. */
struct ember_process *ember_processes_get(struct ember_processes *t, uint32_t pid, uint64_t now_ns);
struct ember_process *ember_processes_find(struct ember_processes *t, uint32_t pid);
/* Forgets the facts about p's program (after an exec). */
void ember_process_forget_facts(struct ember_process *p);
/* Drops processes that exited, or were idle longer than max_idle_ns. */
void ember_processes_sweep(struct ember_processes *t, uint64_t now_ns, uint64_t max_idle_ns);

/* Reads pid's maps through the broker into out. Returns 0 or a negative errno. */
int ember_process_fetch_maps(struct ember_broker_client *broker, uint32_t pid,
                             struct ember_maps *out);

/*
 * The mapping containing addr, (re)loading the maps through the broker when
 * needed and allowed. NULL when no mapping contains addr.
 */
const struct ember_map_entry *ember_process_find_mapping(struct ember_processes *t,
                                                         struct ember_process *p,
                                                         struct ember_broker_client *broker,
                                                         uint64_t addr, uint64_t now_ns);

#endif
