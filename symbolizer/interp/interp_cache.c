// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/interp_cache.h"

#include <string.h>

struct entry {
	struct ember_interp_key key;
	uint8_t used; /* since the clock hand last passed */
	size_t bytes;
	uint64_t expires_ns; /* 0: never */
	_Alignas(8) unsigned char value[];
};

struct pid_count {
	uint32_t pid, count;
};

static bool entry_eq(const void *ctx, uint32_t slot, const void *key, size_t len)
{
	const struct entry *e = ember_slots_at(ctx, slot);

	return len == sizeof(e->key) && !memcmp(&e->key, key, len);
}

static bool pid_eq(const void *ctx, uint32_t slot, const void *key, size_t len)
{
	const struct pid_count *p = ember_slots_at(ctx, slot);

	return len == sizeof(p->pid) && !memcmp(&p->pid, key, len);
}

int ember_interp_cache_init(struct ember_interp_cache *c, size_t value_size, uint32_t max_entries,
                            uint64_t max_bytes, ember_interp_release_fn release)
{
	int err;

	memset(c, 0, sizeof(*c));
	c->value_size = value_size;
	c->max_entries = max_entries;
	c->max_bytes = max_bytes;
	c->release = release;
	/* Whole entries of 8-byte alignment, whatever the value's size. */
	err = ember_slots_init(&c->entries,
	                       (sizeof(struct entry) + value_size + _Alignof(struct entry) - 1) &
	                           ~(_Alignof(struct entry) - 1),
	                       max_entries, entry_eq);
	if (!err)
		err = ember_slots_init(&c->pids, sizeof(struct pid_count), max_entries, pid_eq);
	return err;
}

static void drop(struct ember_interp_cache *c, uint32_t slot)
{
	struct entry *e = ember_slots_at(&c->entries, slot);
	uint32_t ps;

	if (!ember_slots_find(&c->pids, &e->key.pid, sizeof(e->key.pid), &ps)) {
		struct pid_count *p = ember_slots_at(&c->pids, ps);

		if (!--p->count)
			ember_slots_remove(&c->pids, ps, &p->pid, sizeof(p->pid));
	}
	c->bytes -= e->bytes;
	c->release(e->value);
	ember_slots_remove(&c->entries, slot, &e->key, sizeof(e->key));
}

void ember_interp_cache_free(struct ember_interp_cache *c)
{
	for (uint32_t s = 0; s < ember_slots_end(&c->entries); s++)
		if (ember_slots_get(&c->entries, s))
			drop(c, s);
	ember_slots_free(&c->entries);
	ember_slots_free(&c->pids);
}

void *ember_interp_cache_find(struct ember_interp_cache *c, const struct ember_interp_key *key,
                              uint64_t now_ns)
{
	struct entry *e;
	uint32_t slot;

	if (ember_slots_find(&c->entries, key, sizeof(*key), &slot))
		return NULL;
	e = ember_slots_at(&c->entries, slot);
	if (e->expires_ns && now_ns >= e->expires_ns) {
		drop(c, slot);
		return NULL;
	}
	e->used = 1;
	return e->value;
}

/* Makes room: entries not used since the hand last passed them go first. */
static void evict(struct ember_interp_cache *c)
{
	uint32_t end = ember_slots_end(&c->entries);

	for (uint32_t steps = 0; end && steps < 2 * end + 1 &&
	                         (c->entries.count >= c->max_entries || c->bytes > c->max_bytes);
	     steps++) {
		uint32_t s = c->clock_hand++ % end;
		struct entry *e = ember_slots_get(&c->entries, s);

		if (!e)
			continue;
		if (e->used) {
			e->used = 0;
			continue;
		}
		drop(c, s);
		c->evictions++;
	}
}

void *ember_interp_cache_add(struct ember_interp_cache *c, const struct ember_interp_key *key,
                             const void *value, size_t bytes, uint64_t expires_ns)
{
	struct pid_count *p;
	struct entry *e;
	uint32_t slot, ps;
	int r;

	evict(c);
	r = ember_slots_add(&c->pids, &key->pid, sizeof(key->pid), &ps);
	if (r < 0)
		return NULL;
	p = ember_slots_at(&c->pids, ps);
	p->pid = key->pid;
	r = ember_slots_add(&c->entries, key, sizeof(*key), &slot);
	if (r != 1) {
		if (!p->count)
			ember_slots_remove(&c->pids, ps, &p->pid, sizeof(p->pid));
		return NULL; /* full, or (never, as callers look first) already there */
	}
	p->count++;
	e = ember_slots_at(&c->entries, slot);
	e->key = *key;
	e->used = 1;
	e->bytes = bytes;
	e->expires_ns = expires_ns;
	memcpy(e->value, value, c->value_size);
	c->bytes += bytes;
	return e->value;
}

void ember_interp_cache_drop_pid(struct ember_interp_cache *c, uint32_t pid)
{
	uint32_t ps;

	if (ember_slots_find(&c->pids, &pid, sizeof(pid), &ps))
		return;
	for (uint32_t s = 0; s < ember_slots_end(&c->entries); s++) {
		struct entry *e = ember_slots_get(&c->entries, s);

		if (!e || e->key.pid != pid)
			continue;
		drop(c, s);
		if (ember_slots_find(&c->pids, &pid, sizeof(pid), &ps))
			return; /* that was its last */
	}
}
