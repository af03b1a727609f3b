/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer's resident memory, where it goes, and the budget it keeps.
 *
 * ember_mem_measure() reads the process's resident size (/proc/self/statm,
 * opened at start-up: the sandbox opens nothing later) and glibc's heap
 * figures, and splits the resident size by owner (mem_owners.h): the heap
 * each owner holds, the heap held free (fragmentation), and what is not
 * heap (code, libraries, stacks, the sample ring). The split goes into
 * every profile's statistics (memory.*) and into one log line.
 *
 * The budget itself is kept by the symbolizer (symbolize.h), which owns the
 * caches: ember_mem_over() says by how much the resident size passes it.
 * The heap is set up against fragmentation (ember_mem_tune: one arena,
 * large blocks mapped on their own so that freeing them gives them back) and ember_mem_release()
 * returns freed pages after each interval.
 *
 * Nothing here reads input but the kernel's statm line.
 */
#ifndef EMBER_SYMBOLIZER_MEMORY_MEM_BUDGET_H
#define EMBER_SYMBOLIZER_MEMORY_MEM_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/memory/mem_owners.h"
#include "shared/stat_sink.h"

#ifdef EMBER_SANITIZERS
/*
 * A sanitized build's resident memory holds what AddressSanitizer adds to every block:
 * shadow memory, redzones, and the quarantine of freed blocks it holds back to catch their
 * use (up to 256 MiB by default). Against the shipped default the symbolizer would shed
 * its caches and leave frames unsymbolized for memory the product does not have.
 */
#define EMBER_MEM_DEFAULT_BUDGET (512u << 20)
#else
#define EMBER_MEM_DEFAULT_BUDGET (64u << 20)
#endif

/* One measurement; every field in bytes. */
struct ember_mem_split {
	size_t rss;                      /* resident, all of it */
	size_t owners[EMBER_MEM_OWNERS]; /* heap held by each owner (0 when not counting) */
	size_t heap_in_use;              /* glibc: bytes handed out */
	size_t heap_free;                /* glibc: bytes held but free (fragmentation) */
	size_t heap_mapped;              /* glibc: large blocks mapped on their own */
	size_t not_heap; /* rss less the heap: code, stacks, the ring, files being read, ... */
	bool counting;   /* owners[] were measured */
};

struct ember_mem_budget {
	size_t limit; /* resident bytes; 0: no budget */
	int statm_fd; /* -1 when /proc/self/statm could not be opened */
	size_t page;
	size_t peak_rss;
	/* Collector figures as it last reported them (0: not yet). */
	uint64_t collector_rss, collector_bpf_maps;
	uint64_t releases; /* malloc_trim calls */
};

/* Sets glibc's allocator up for a long-running process. Call first thing in main. */
void ember_mem_tune(void);

/* Opens /proc/self/statm (before the sandbox). limit 0: EMBER_MEM_DEFAULT_BUDGET. */
int ember_mem_budget_init(struct ember_mem_budget *b, size_t limit);
void ember_mem_budget_free(struct ember_mem_budget *b);

/* Resident bytes now (0 when unknown). */
size_t ember_mem_rss(struct ember_mem_budget *b);
/* Measures everything (reads statm and glibc's figures: a few microseconds). */
void ember_mem_measure(struct ember_mem_budget *b, struct ember_mem_split *out);
/* Bytes by which rss less excluded passes the limit (0 when within it). */
size_t ember_mem_over(const struct ember_mem_budget *b, size_t rss, size_t excluded);
/* Gives freed heap pages back to the system (malloc_trim). */
void ember_mem_release(struct ember_mem_budget *b);

/* memory.* statistics (and the collector's figures when known). */
void ember_mem_report_stats(struct ember_mem_budget *b, const struct ember_mem_split *m,
                            const struct ember_stat_sink *sink);
/* "rss 41.2 MiB (budget 64.0 MiB, peak 45.0 MiB): objcache 18.1 MiB, ..." into buf. */
void ember_mem_format(const struct ember_mem_budget *b, const struct ember_mem_split *m, char *buf,
                      size_t size);

#endif
