/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A slot table: entries in numbered slots, found by key. An entry keeps its
 * slot from ember_slots_add() until ember_slots_remove(), so the number can
 * name it elsewhere (an unwind table's id in the collector's BPF maps, a
 * cache entry in an index); freed slots are reused first. Each entry may be
 * found under several keys (another path to the same file).
 *
 * Keys come from profiled processes (pids, device and inode numbers, file
 * hashes): the index hashes them with a random key, and the table holds at
 * most the number of entries its owner names.
 */
#ifndef EMBER_SHARED_SLOTS_H
#define EMBER_SHARED_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/hash.h"
#include "shared/vec.h"

/*
 * Whether the entry in slot holds key (len bytes). ctx is the table: read
 * the entry with ember_slots_at(ctx, slot).
 */
typedef ember_index_eq_fn ember_slots_eq_fn;

struct ember_slots {
	struct ember_hash_key key;
	struct ember_index index; /* key -> slot */
	ember_slots_eq_fn eq;
	struct ember_vec items; /* item_size bytes a slot, zeroed while free */
	struct ember_vec live;  /* bool a slot */
	struct ember_vec free;  /* uint32_t: slots to reuse, last freed first */
	size_t count;           /* entries */
	size_t max;             /* the most entries at once */
};

/* An empty table of items of item_size bytes, at most max at once. Returns 0 or -errno. */
int ember_slots_init(struct ember_slots *t, size_t item_size, size_t max, ember_slots_eq_fn eq);
/* Frees the table (the caller has released what its items own). */
void ember_slots_free(struct ember_slots *t);

/* The slot of key. Returns 0 or -ENOENT. */
int ember_slots_find(const struct ember_slots *t, const void *key, size_t len, uint32_t *slot);
/*
 * The slot of key, taken when key is absent: the new entry is zeroed and the
 * caller fills it in (its key first: the next lookup compares it). Returns 1
 * for a new entry, 0 for one found, -ENOSPC when max entries are in use, or
 * -ENOMEM.
 */
int ember_slots_add(struct ember_slots *t, const void *key, size_t len, uint32_t *slot);
/* Lets the entry in slot be found under key as well. Returns 0 or -ENOMEM. */
int ember_slots_alias(struct ember_slots *t, uint32_t slot, const void *key, size_t len);
/* Forgets key as a name of the entry in slot (its other keys stay). */
void ember_slots_unalias(struct ember_slots *t, uint32_t slot, const void *key, size_t len);
/* Frees slot, found under key (forget any other keys first with ember_slots_unalias). */
void ember_slots_remove(struct ember_slots *t, uint32_t slot, const void *key, size_t len);

/* The item in slot, or NULL when the slot is free or was never used. */
void *ember_slots_get(const struct ember_slots *t, uint32_t slot);
/* The item in slot, which the caller knows is in use. */
static inline void *ember_slots_at(const struct ember_slots *t, uint32_t slot)
{
	return (char *)t->items.items + (size_t)slot * t->items.item_size;
}
/* The slot of an item in the table (a pointer ember_slots_at or ember_slots_get gave). */
static inline uint32_t ember_slots_slot_of(const struct ember_slots *t, const void *item)
{
	return (uint32_t)(((const char *)item - (const char *)t->items.items) / t->items.item_size);
}
/* One past the highest slot ever used: iterate 0..end with ember_slots_get. */
static inline uint32_t ember_slots_end(const struct ember_slots *t)
{
	return (uint32_t)t->items.len;
}
/* The keyed hash the table's index uses, for a second index of the same entries. */
uint64_t ember_slots_hash(const struct ember_slots *t, const void *key, size_t len);

#endif
