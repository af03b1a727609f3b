// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/memory/mem_owners.h"

#include <stdatomic.h>

_Thread_local uint8_t ember_mem_tag;

static _Atomic long owner_bytes[EMBER_MEM_OWNERS];
static _Atomic long owner_blocks[EMBER_MEM_OWNERS];
static void (*_Atomic give_fn)(void *block, enum ember_mem_owner to);
static atomic_bool counting;

static const char *const names[EMBER_MEM_OWNERS] = {
    [EMBER_MEM_OTHER] = "other",         [EMBER_MEM_OBJCACHE] = "objcache",
    [EMBER_MEM_KALLSYMS] = "kallsyms",   [EMBER_MEM_PROCESSES] = "processes",
    [EMBER_MEM_UNWIND] = "unwind",       [EMBER_MEM_PROFILE] = "profile",
    [EMBER_MEM_EXPORT] = "export_queue", [EMBER_MEM_OUTPUT] = "output",
};

const char *ember_mem_owner_name(enum ember_mem_owner o)
{
	return (unsigned int)o < EMBER_MEM_OWNERS ? names[o] : "?";
}

/* Called for every block allocated or freed: relaxed atomics, nothing else. */
void ember_mem_account(unsigned int owner, long bytes, int blocks)
{
	if (owner >= EMBER_MEM_OWNERS)
		owner = EMBER_MEM_OTHER;
	atomic_fetch_add_explicit(&owner_bytes[owner], bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&owner_blocks[owner], blocks, memory_order_relaxed);
}

void ember_mem_set_give(void (*give)(void *block, enum ember_mem_owner to))
{
	atomic_store(&give_fn, give);
	atomic_store(&counting, give != NULL);
}

bool ember_mem_counting(void)
{
	return atomic_load_explicit(&counting, memory_order_relaxed);
}

static size_t positive(long v)
{
	/* Blocks allocated before counting began may be freed after: never below 0. */
	return v > 0 ? (size_t)v : 0;
}

size_t ember_mem_owner_bytes(enum ember_mem_owner o)
{
	if ((unsigned int)o >= EMBER_MEM_OWNERS)
		return 0;
	return positive(atomic_load_explicit(&owner_bytes[o], memory_order_relaxed));
}

size_t ember_mem_owner_blocks(enum ember_mem_owner o)
{
	if ((unsigned int)o >= EMBER_MEM_OWNERS)
		return 0;
	return positive(atomic_load_explicit(&owner_blocks[o], memory_order_relaxed));
}

size_t ember_mem_total_bytes(void)
{
	size_t total = 0;

	for (unsigned int o = 0; o < EMBER_MEM_OWNERS; o++)
		total += ember_mem_owner_bytes((enum ember_mem_owner)o);
	return total;
}

void ember_mem_give(void *block, enum ember_mem_owner to)
{
	void (*give)(void *, enum ember_mem_owner) = atomic_load(&give_fn);

	if (block && give && (unsigned int)to < EMBER_MEM_OWNERS)
		give(block, to);
}
