// SPDX-License-Identifier: Apache-2.0
#include "objcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool obj_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct ember_objcache *c = ctx;

	return len == sizeof(struct ember_obj_key) && !memcmp(&c->slots[value]->key, key, len);
}

int ember_objcache_init(struct ember_objcache *c, size_t max_bytes)
{
	memset(c, 0, sizeof(*c));
	c->max_bytes = max_bytes ? max_bytes : EMBER_OBJCACHE_DEFAULT_BYTES;
	ember_index_init(&c->index);
	return ember_hash_key_init(&c->hash_key);
}

static void lru_unlink(struct ember_objcache *c, struct ember_obj *o)
{
	if (o->lru_prev)
		o->lru_prev->lru_next = o->lru_next;
	else
		c->lru_head = o->lru_next;
	if (o->lru_next)
		o->lru_next->lru_prev = o->lru_prev;
	else
		c->lru_tail = o->lru_prev;
	o->lru_prev = o->lru_next = NULL;
}

static void lru_push_head(struct ember_objcache *c, struct ember_obj *o)
{
	o->lru_prev = NULL;
	o->lru_next = c->lru_head;
	if (c->lru_head)
		c->lru_head->lru_prev = o;
	c->lru_head = o;
	if (!c->lru_tail)
		c->lru_tail = o;
}

static void obj_destroy(struct ember_obj *o)
{
	ember_elf_syms_free(&o->syms);
	free(o);
}

static void remove_entry(struct ember_objcache *c, struct ember_obj *o)
{
	uint64_t h = ember_hash(&c->hash_key, &o->key, sizeof(o->key));

	ember_index_remove(&c->index, h, o->slot);
	lru_unlink(c, o);
	c->slots[o->slot] = NULL;
	c->free_slots[c->nfree++] = o->slot;
	c->bytes -= o->bytes;
	obj_destroy(o);
}

void ember_objcache_free(struct ember_objcache *c)
{
	for (size_t i = 0; i < c->nslots; i++)
		if (c->slots[i])
			obj_destroy(c->slots[i]);
	free(c->slots);
	free(c->free_slots);
	ember_index_free(&c->index);
	memset(c, 0, sizeof(*c));
}

struct ember_obj *ember_objcache_get(struct ember_objcache *c, const struct ember_obj_key *key,
				     uint64_t now_ns)
{
	uint64_t h = ember_hash(&c->hash_key, key, sizeof(*key));
	struct ember_obj *o;
	uint32_t slot;

	if (ember_index_find(&c->index, h, key, sizeof(*key), obj_eq, c, &slot)) {
		c->misses++;
		return NULL;
	}
	o = c->slots[slot];
	if (o->error && now_ns - o->failed_at_ns > EMBER_OBJCACHE_RETRY_NS) {
		remove_entry(c, o);
		c->misses++;
		return NULL;
	}
	c->hits++;
	lru_unlink(c, o);
	lru_push_head(c, o);
	return o;
}

static int take_slot(struct ember_objcache *c, uint32_t *slot)
{
	if (c->nfree) {
		*slot = c->free_slots[--c->nfree];
		return 0;
	}
	if (c->nslots == c->slots_cap) {
		size_t cap = c->slots_cap ? c->slots_cap * 2 : 256;
		struct ember_obj **slots = realloc(c->slots, cap * sizeof(*slots));
		uint32_t *free_slots;

		if (!slots)
			return -ENOMEM;
		c->slots = slots;
		free_slots = realloc(c->free_slots, cap * sizeof(*free_slots));
		if (!free_slots)
			return -ENOMEM;
		c->free_slots = free_slots;
		c->slots_cap = cap;
	}
	*slot = (uint32_t)c->nslots++;
	return 0;
}

struct ember_obj *ember_objcache_load(struct ember_objcache *c, const struct ember_obj_key *key,
				      int fd, uint64_t now_ns)
{
	uint64_t h = ember_hash(&c->hash_key, key, sizeof(*key));
	struct ember_obj *o = calloc(1, sizeof(*o)), *old;
	uint32_t slot, stored;

	if (!o)
		return NULL;
	o->key = *key;
	o->error = fd < 0 ? fd : ember_elf_syms_load(fd, &o->syms);
	if (o->error) {
		o->failed_at_ns = now_ns;
		c->load_errors++;
	}
	o->bytes = sizeof(*o) + o->syms.bytes;

	/* Replace an entry of the same key (a failure being retried). */
	if (!ember_index_find(&c->index, h, key, sizeof(*key), obj_eq, c, &slot))
		remove_entry(c, c->slots[slot]);
	while (c->lru_tail && c->bytes + o->bytes > c->max_bytes) {
		old = c->lru_tail;
		remove_entry(c, old);
		c->evictions++;
	}
	if (take_slot(c, &slot) ||
	    ember_index_upsert(&c->index, h, key, sizeof(*key), obj_eq, c, slot, &stored) < 0) {
		obj_destroy(o);
		return NULL;
	}
	o->slot = slot;
	c->slots[slot] = o;
	c->bytes += o->bytes;
	lru_push_head(c, o);
	return o;
}
