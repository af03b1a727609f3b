/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a runtime's reader read of a process's frames (a code object, an iseq
 * body, a method entry), or its failure to read it, by process, address and
 * checksum: bounded in entries and bytes, the entries not used since the
 * clock hand last passed going first, and dropped with their process at its
 * exec and exit. A value is the reader's own struct, copied in; the cache
 * calls release on it when it goes.
 *
 * A failure expires: the walker checked the structure at sample time, so a
 * read that finds it changed (-ESTALE), freed or half built (any other error)
 * says something of one moment, not of the key. The next sample with the same
 * address and checksum most likely finds that structure back (php-fpm's next
 * request allocates the same functions at the same addresses; Perl clones a
 * closure into the CV the last clone freed): after EMBER_INTERP_RETRY_NS it is
 * read again, its checksum checked again, rather than left unnamed for good.
 * Names read do not expire.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_INTERP_CACHE_H
#define EMBER_SYMBOLIZER_INTERP_INTERP_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "shared/slots.h"

struct ember_interp_key {
	uint32_t pid;
	uint32_t checksum;
	uint64_t addr;
};

#define EMBER_INTERP_RETRY_NS (20ull * 1000000ull)

/* When a value read at now_ns with result err expires (0: never). */
static inline uint64_t ember_interp_cache_expiry(int err, uint64_t now_ns)
{
	return err ? now_ns + EMBER_INTERP_RETRY_NS : 0;
}

typedef void (*ember_interp_release_fn)(void *value);

struct ember_interp_cache {
	struct ember_slots entries; /* by key: a header, then value_size bytes */
	struct ember_slots pids;    /* pid -> its entries' count: an exit with none scans nothing */
	size_t value_size;
	uint32_t max_entries;
	uint64_t max_bytes, bytes;
	uint32_t clock_hand; /* eviction: the next slot looked at */
	ember_interp_release_fn release;
	uint64_t evictions;
};

int ember_interp_cache_init(struct ember_interp_cache *c, size_t value_size, uint32_t max_entries,
                            uint64_t max_bytes, ember_interp_release_fn release);
void ember_interp_cache_free(struct ember_interp_cache *c);

/* The value of key (marked used), or NULL; a value expired at now_ns goes, and is NULL. */
void *ember_interp_cache_find(struct ember_interp_cache *c, const struct ember_interp_key *key,
                              uint64_t now_ns);

/* Makes room, then copies value in under key, counting bytes for it, to expire at
 * expires_ns (0: never). Returns the cached value, or NULL without room (the caller still
 * owns value then). */
void *ember_interp_cache_add(struct ember_interp_cache *c, const struct ember_interp_key *key,
                             const void *value, size_t bytes, uint64_t expires_ns);

/* Drops pid's values (its exec or exit). */
void ember_interp_cache_drop_pid(struct ember_interp_cache *c, uint32_t pid);

#endif
