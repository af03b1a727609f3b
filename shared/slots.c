// SPDX-License-Identifier: Apache-2.0
#include "shared/slots.h"

#include <errno.h>
#include <string.h>

int ember_slots_init(struct ember_slots *t, size_t item_size, size_t max, ember_slots_eq_fn eq)
{
	memset(t, 0, sizeof(*t));
	ember_index_init(&t->index);
	/* Slot numbers are 32-bit and the index stores slot + 1. */
	if (max >= UINT32_MAX)
		max = UINT32_MAX - 1;
	ember_vec_init_max(&t->items, item_size, max);
	ember_vec_init_max(&t->live, sizeof(bool), max);
	ember_vec_init_max(&t->free, sizeof(uint32_t), max);
	t->eq = eq;
	t->max = max;
	return ember_hash_key_init(&t->key);
}

void ember_slots_free(struct ember_slots *t)
{
	ember_index_free(&t->index);
	ember_vec_free(&t->items);
	ember_vec_free(&t->live);
	ember_vec_free(&t->free);
	t->count = 0;
}

uint64_t ember_slots_hash(const struct ember_slots *t, const void *key, size_t len)
{
	return ember_hash(&t->key, key, len);
}

int ember_slots_find(const struct ember_slots *t, const void *key, size_t len, uint32_t *slot)
{
	return ember_index_find(&t->index, ember_slots_hash(t, key, len), key, len, t->eq, t, slot);
}

/* A free slot, zeroed and marked live. */
static int take(struct ember_slots *t, uint32_t *slot)
{
	if (t->count >= t->max)
		return -ENOSPC;
	if (t->free.len) {
		*slot = *EMBER_VEC_AT(t->free, uint32_t, --t->free.len);
	} else {
		/* Room for the slot's future place on the free list as well. */
		if (ember_vec_reserve(&t->free, t->items.len + 1 - t->free.len) ||
		    ember_vec_reserve(&t->live, 1) || !ember_vec_push(&t->items, NULL, 1))
			return -ENOMEM;
		ember_vec_push(&t->live, NULL, 1);
		*slot = (uint32_t)t->items.len - 1;
	}
	memset(ember_slots_at(t, *slot), 0, t->items.item_size);
	*EMBER_VEC_AT(t->live, bool, *slot) = true;
	t->count++;
	return 0;
}

static void give_back(struct ember_slots *t, uint32_t slot)
{
	memset(ember_slots_at(t, slot), 0, t->items.item_size);
	*EMBER_VEC_AT(t->live, bool, slot) = false;
	/* Reserved when the slot was first taken: cannot fail. */
	ember_vec_push(&t->free, &slot, 1);
	t->count--;
}

int ember_slots_add(struct ember_slots *t, const void *key, size_t len, uint32_t *slot)
{
	uint64_t h = ember_slots_hash(t, key, len);
	uint32_t stored;
	int err;

	if (!ember_index_find(&t->index, h, key, len, t->eq, t, slot))
		return 0;
	err = take(t, slot);
	if (err)
		return err;
	err = ember_index_upsert(&t->index, h, key, len, t->eq, t, *slot, &stored);
	if (err < 0) {
		give_back(t, *slot);
		return err;
	}
	return 1;
}

int ember_slots_alias(struct ember_slots *t, uint32_t slot, const void *key, size_t len)
{
	uint32_t stored;
	int err = ember_index_upsert(&t->index, ember_slots_hash(t, key, len), key, len, t->eq, t,
	                             slot, &stored);

	return err < 0 ? err : 0;
}

void ember_slots_unalias(struct ember_slots *t, uint32_t slot, const void *key, size_t len)
{
	ember_index_remove(&t->index, ember_slots_hash(t, key, len), slot);
}

void ember_slots_remove(struct ember_slots *t, uint32_t slot, const void *key, size_t len)
{
	ember_slots_unalias(t, slot, key, len);
	give_back(t, slot);
}

void *ember_slots_get(const struct ember_slots *t, uint32_t slot)
{
	if (slot >= t->items.len || !*EMBER_VEC_AT(t->live, bool, slot))
		return NULL;
	return ember_slots_at(t, slot);
}
