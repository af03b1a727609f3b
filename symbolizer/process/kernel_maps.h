/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The executable mappings the kernel reported as each process made them
 * (bpf/proc.bpf.h: EMBER_EV_MMAP, and each exec's vDSO): what a process's
 * maps were, for one that is gone before they could be read. On a busy host
 * a compiler's assembler lives 30 ms, and its first sample reaches the
 * collector after its exit, too late for a snapshot of its maps: its stack
 * copies and its frames were left unread ("maps not read", "[unknown]").
 *
 * Kept per process for its latest program (a mapping of another exec, or of
 * a new process given the PID, starts afresh), as maps text (the kernel's format,
 * which maps_parser.c reads), at most EMBER_KMAPS_BYTES a process and
 * EMBER_KMAPS_PROCS processes (those that exited longest ago, then those
 * reported longest ago, make room), EMBER_KMAPS_KEEP_NS after the exit
 * record symbolization read. A path is the file's names within its mount,
 * as the kernel's dentries give them: a file on a mount other than the root
 * shows without the mount's place, and a name cut at EMBER_MMAP_NAME_LEN or
 * a path deeper than EMBER_MMAP_DEPTH is marked with "~". The names are the
 * process's choice: control bytes become '?'. Charged to "processes".
 */
#ifndef EMBER_SYMBOLIZER_PROCESS_KERNEL_MAPS_H
#define EMBER_SYMBOLIZER_PROCESS_KERNEL_MAPS_H

#include <stdint.h>

#include "bpf/records.h"
#include "shared/slots.h"
#include "shared/stat_sink.h"
#include "symbolizer/process/maps_parser.h"

#define EMBER_KMAPS_PROCS   4096
#define EMBER_KMAPS_BYTES   (16u << 10)
#define EMBER_KMAPS_KEEP_NS (10ull * 1000000000ull)

struct ember_kmaps_proc {
	uint32_t pid;
	uint64_t exec_id;
	uint64_t noted_ns, exited_ns; /* exited_ns 0: alive as far as symbolization knows */
	char *text;
	uint32_t len, cap;
	uint32_t files; /* mappings of files in text (the vDSO alone tells too little) */
};

struct ember_kernel_maps {
	struct ember_slots procs; /* struct ember_kmaps_proc, by pid */
	uint64_t mappings, served, dropped;
};

int ember_kernel_maps_init(struct ember_kernel_maps *k);
void ember_kernel_maps_free(struct ember_kernel_maps *k);

/* An exec (its vDSO) or a mapping the kernel reported; other events are ignored. */
void ember_kernel_maps_event(struct ember_kernel_maps *k, const struct ember_proc_event *ev,
                             uint64_t now_ns);
/* pid's exit record was read: its mappings go EMBER_KMAPS_KEEP_NS later. */
void ember_kernel_maps_exited(struct ember_kernel_maps *k, uint32_t pid, uint64_t now_ns);

/* pid's executable mappings as the kernel reported them. Returns 0 or -ENOENT/-ENOMEM. */
int ember_kernel_maps_get(struct ember_kernel_maps *k, uint32_t pid, struct ember_maps *out);

void ember_kernel_maps_report_stats(const struct ember_kernel_maps *k,
                                    const struct ember_stat_sink *sink);

#endif
