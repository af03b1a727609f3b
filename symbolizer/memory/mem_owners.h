/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who holds the symbolizer's heap. Each thread works for one owner at a time
 * (a tag the owning module sets at its entry points with EMBER_MEM_SCOPE);
 * every block allocated meanwhile is charged to that owner, and given back
 * to it when freed, on whatever thread. The counts are measured, not
 * estimated: they include what libraries allocate on the owner's behalf
 * (libelf and libdw for the object cache, zlib and protobuf-c for the
 * writers) and the allocator's own per-block overhead.
 *
 * The counting itself is done by counting_malloc.c, which wraps glibc's
 * allocator and is linked into ember-symbolizer only; without it (unit tests,
 * sanitizer builds) the counts stay 0 and ember_mem_counting() is false, and
 * callers fall back on their own estimates.
 *
 * Nothing here reads input.
 */
#ifndef EMBER_SYMBOLIZER_MEMORY_MEM_OWNERS_H
#define EMBER_SYMBOLIZER_MEMORY_MEM_OWNERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Blocks at least this large are mapped on their own (ember_mem_tune, mem_budget.h). */
#define EMBER_MEM_MMAP_THRESHOLD (128u << 10)

enum ember_mem_owner {
	EMBER_MEM_OTHER = 0, /* no module's: start-up, libraries, buffers of the moment */
	EMBER_MEM_OBJCACHE,  /* parsed files: symbols, DWARF, Go tables, libelf and libdw */
	EMBER_MEM_KALLSYMS,  /* kernel symbols */
	EMBER_MEM_PROCESSES, /* each process's mappings and facts */
	EMBER_MEM_UNWIND,    /* unwind-table bookkeeping, tables being built */
	EMBER_MEM_PROFILE,   /* the profiles being aggregated */
	EMBER_MEM_EXPORT,    /* encoded profiles waiting in the export queue */
	EMBER_MEM_OUTPUT,    /* writers' buffers while an output is written */
	EMBER_MEM_OWNERS,
};

/* The short name of an owner ("objcache", "profile", ...), as statistics and logs print it. */
const char *ember_mem_owner_name(enum ember_mem_owner o);

/* The owner the calling thread works for. */
extern _Thread_local uint8_t ember_mem_tag;

static inline enum ember_mem_owner ember_mem_enter(enum ember_mem_owner o)
{
	enum ember_mem_owner prev = (enum ember_mem_owner)ember_mem_tag;

	ember_mem_tag = (uint8_t)o;
	return prev;
}

static inline void ember_mem_leave(const enum ember_mem_owner *prev)
{
	ember_mem_tag = (uint8_t)*prev;
}

/* Charges what the rest of the enclosing block allocates to owner. */
#define EMBER_MEM_SCOPE(owner)                                                                     \
	enum ember_mem_owner ember_mem_prev_ __attribute__((cleanup(ember_mem_leave), unused)) =   \
	    ember_mem_enter(owner)

/* Whether blocks are being counted (counting_malloc.c is linked in). */
bool ember_mem_counting(void);
/* Heap bytes the owner holds now (0 when not counting). */
size_t ember_mem_owner_bytes(enum ember_mem_owner o);
/* Blocks the owner holds now. */
size_t ember_mem_owner_blocks(enum ember_mem_owner o);
/* Heap bytes held by every owner together. */
size_t ember_mem_total_bytes(void);

/*
 * Hands a block over to another owner (a profile encoded for the export
 * queue becomes the queue's): its bytes move from one count to the other.
 * Does nothing when not counting or for NULL.
 */
void ember_mem_give(void *block, enum ember_mem_owner to);

/* ---- for counting_malloc.c ---- */

/* Adds (or with a negative delta, takes) bytes and blocks to an owner's counts. */
void ember_mem_account(unsigned int owner, long bytes, int blocks);
/* counting_malloc.c registers how ember_mem_give reaches a block's header. */
void ember_mem_set_give(void (*give)(void *block, enum ember_mem_owner to));

#endif
