/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Each process's perf map (perfmap.h), for the frames in its JIT code that no
 * walker named: code in anonymous memory or a memfd. The broker opens
 * /tmp/perf-PID.map inside the process's root, with the PID the process
 * knows itself by (a regular file, the process's user's or root's, through
 * no symbolic link); a map on a file system that can stop answering comes as
 * a copy made under a deadline (broker_client.h).
 *
 * A map is read as the JIT writes it: when a frame's address is not in it,
 * the lines written since are read (at most every EMBER_PERF_MAPS_GROW_NS),
 * from where the last read ended; a map that shrank was written again and is
 * read from its start. A process without a map is asked about again after a
 * second, then after twice as long each time, up to a minute. A process's map
 * is dropped at its exec and exit (a sample read after the exit does not bring
 * it back), or when no frame of it was looked up for EMBER_PERF_MAPS_IDLE_NS
 * (an exit that never came: a lost record, a process ember stopped seeing);
 * at most EMBER_PERF_MAPS_MAX processes hold
 * one at a time (the next waits for one to go), each bounded as perfmap.h
 * says, and no more than EMBER_PERF_MAPS_MAX_BYTES of a file are read.
 */
#ifndef EMBER_SYMBOLIZER_PROCESS_PERF_MAPS_H
#define EMBER_SYMBOLIZER_PROCESS_PERF_MAPS_H

#include <stdbool.h>
#include <stdint.h>

#include "shared/slots.h"
#include "shared/stat_sink.h"
#include "symbolizer/client/broker_client.h"

#define EMBER_PERF_MAPS_MAX            64   /* processes holding a map */
#define EMBER_PERF_MAPS_PROCS          4096 /* processes remembered (most without a map) */
#define EMBER_PERF_MAPS_MAX_BYTES      (64ull << 20)
#define EMBER_PERF_MAPS_GROW_NS        (200ull * 1000000ull)
#define EMBER_PERF_MAPS_RETRY_NS       (1000ull * 1000000ull)
#define EMBER_PERF_MAPS_BACKOFF_MAX_NS (60000ull * 1000000ull)
#define EMBER_PERF_MAPS_IDLE_NS        (120000ull * 1000000ull) /* the process table's idle */

struct ember_perf_maps {
	struct ember_slots procs; /* pid -> its map (perf_maps.c) */
	struct ember_broker_client *broker;
	uint32_t loaded; /* processes holding a map */
	uint64_t files, reads, bytes, frames, frames_named, truncated, table_full, idle_dropped;
	uint64_t entries, lines_bad, lines_long, lines_dropped; /* of maps dropped since */
};

int ember_perf_maps_init(struct ember_perf_maps *t, struct ember_broker_client *broker);
void ember_perf_maps_free(struct ember_perf_maps *t);

/* The name pid's perf map gives the code at addr, or NULL. Valid until the next call.
 * exited: pid's exit was read (its map is not asked for again). */
const char *ember_perf_maps_name(struct ember_perf_maps *t, uint32_t pid, bool exited,
                                 uint64_t addr, uint64_t now_ns);

/* pid's program is another (exec) or gone (exit): its map with it. */
void ember_perf_maps_drop(struct ember_perf_maps *t, uint32_t pid);

/* Drops the maps of processes none of whose frames was looked up for
 * EMBER_PERF_MAPS_IDLE_NS. */
void ember_perf_maps_sweep(struct ember_perf_maps *t, uint64_t now_ns);

/* perfmap.* statistics into sink. */
void ember_perf_maps_report_stats(const struct ember_perf_maps *t,
                                  const struct ember_stat_sink *sink);

#endif
