// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/objcache.h"
#include "symbolizer/symbols/sigbus_guard.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>

#include "symbolizer/memory/mem_owners.h"

/* The entry in slot, or NULL for a free slot. */
static struct ember_obj *at(const struct ember_objcache *c, uint32_t slot)
{
	struct ember_obj **o = ember_slots_get(&c->slots, slot);

	return o ? *o : NULL;
}

/* ctx is the slot table: an entry is found under any of its keys. */
static bool key_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct ember_obj *o = *(struct ember_obj *const *)ember_slots_at(ctx, value);

	if (len != sizeof(struct ember_obj_key))
		return false;
	for (uint32_t i = 0; i < o->nkeys; i++)
		if (!memcmp(&o->keys[i], key, len))
			return true;
	return false;
}

static bool hash_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct ember_obj *o = at(ctx, value);

	return len == sizeof(o->hash) && o->has_hash && !memcmp(o->hash, key, len);
}

int ember_objcache_init(struct ember_objcache *c, size_t max_bytes)
{
	memset(c, 0, sizeof(*c));
	c->max_bytes = max_bytes ? max_bytes : EMBER_OBJCACHE_DEFAULT_BYTES;
	c->limit = c->max_bytes;
	c->budget_room = SIZE_MAX;
	ember_index_init(&c->id_index);
	return ember_slots_init(&c->slots, sizeof(struct ember_obj *), EMBER_VEC_NO_MAX, key_eq);
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
	if (!o->error)
		ember_objfile_close(&o->file);
	free(o);
}

static uint64_t id_hash(const struct ember_objcache *c, const uint8_t *hash)
{
	return ember_slots_hash(&c->slots, hash, EMBER_FILE_HASH_BYTES);
}

static void remove_entry(struct ember_objcache *c, struct ember_obj *o)
{
	c->removed++;
	for (uint32_t i = 1; i < o->nkeys; i++)
		ember_slots_unalias(&c->slots, o->slot, &o->keys[i], sizeof(o->keys[i]));
	if (o->has_hash)
		ember_index_remove(&c->id_index, id_hash(c, o->hash), o->slot);
	if (!o->error)
		c->retired_errors += ember_objfile_errors(&o->file);
	lru_unlink(c, o);
	ember_slots_remove(&c->slots, o->slot, &o->keys[0], sizeof(o->keys[0]));
	c->bytes -= o->bytes;
	obj_destroy(o);
}

void ember_objcache_free(struct ember_objcache *c)
{
	EMBER_MEM_SCOPE(EMBER_MEM_OBJCACHE);

	for (uint32_t i = 0; i < ember_slots_end(&c->slots); i++)
		if (at(c, i))
			obj_destroy(at(c, i));
	ember_slots_free(&c->slots);
	ember_index_free(&c->id_index);
	memset(c, 0, sizeof(*c));
}

static void touch(struct ember_objcache *c, struct ember_obj *o)
{
	lru_unlink(c, o);
	lru_push_head(c, o);
}

/* Drops the entries whose mapped files lost pages since the last look (sigbus_guard.h):
 * they are read again, from the file as it is now, when next asked for. */
static void drop_changed_files(struct ember_objcache *c)
{
	uintptr_t pages[EMBER_SIGBUS_GUARD_PAGES];
	size_t n = ember_sigbus_guard_faults(&c->sigbus_seen, pages, EMBER_SIGBUS_GUARD_PAGES);
	struct ember_obj *o = c->lru_head, *next;

	for (; o; o = next) {
		bool hit = n == SIZE_MAX; /* more faults than remembered: every file */

		next = o->lru_next;
		if (o->error)
			continue;
		for (size_t i = 0; !hit && i < n; i++)
			hit = ember_objfile_maps(&o->file, pages[i]);
		if (hit) {
			c->changed_files++;
			remove_entry(c, o);
		}
	}
}

struct ember_obj *ember_objcache_get(struct ember_objcache *c, const struct ember_obj_key *key,
                                     uint32_t pid, uint64_t now_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_OBJCACHE);
	struct ember_obj *o;
	uint32_t slot;

	if (ember_sigbus_guard_count() != c->sigbus_seen)
		drop_changed_files(c);

	if (ember_slots_find(&c->slots, key, sizeof(*key), &slot)) {
		c->misses++;
		return NULL;
	}
	o = at(c, slot);
	/* A stall, a file that did not fit, or a broker too busy to open it (every worker
	 * taken, its rate spent: a loaded host) is tried again soon: each may have passed. */
	if (o->error &&
	    now_ns - o->failed_at_ns > (o->error == -ETIMEDOUT || o->error == -ENOBUFS ||
	                                        o->error == -EBUSY || o->error == -EAGAIN
	                                    ? EMBER_OBJCACHE_STALL_RETRY_NS
	                                    : EMBER_OBJCACHE_RETRY_NS)) {
		remove_entry(c, o);
		c->misses++;
		return NULL;
	}
	/* Its DWARF did not fit: there may be room now. */
	if (!o->error && o->file.dwarf_deferred &&
	    now_ns - o->loaded_ns > EMBER_OBJCACHE_RETRY_NS) {
		remove_entry(c, o);
		c->misses++;
		return NULL;
	}
	/* A file the broker could not open through one process (gone already, a
	 * short-lived one) may well open through another that maps it. */
	if (o->open_failed_pid && o->open_failed_pid != pid) {
		c->misses++;
		return NULL;
	}
	c->hits++;
	touch(c, o);
	o->used_ns = now_ns;
	return o;
}

/* Evicts least recently used entries, never keep, until extra bytes fit. */
static void make_room(struct ember_objcache *c, size_t extra, const struct ember_obj *keep)
{
	while (c->lru_tail && c->bytes + extra > c->limit) {
		struct ember_obj *old = c->lru_tail;

		if (old == keep) {
			if (!old->lru_prev)
				return;
			old = old->lru_prev;
		}
		remove_entry(c, old);
		c->evictions++;
	}
}

/* Adds key as another name of o (another path or container with the same content). */
static struct ember_obj *add_alias(struct ember_objcache *c, struct ember_obj *o,
                                   const struct ember_obj_key *key)
{
	if (o->nkeys == EMBER_OBJ_MAX_ALIASES)
		return o; /* found by content each time: still parsed once */
	o->keys[o->nkeys++] = *key;
	if (ember_slots_alias(&c->slots, o->slot, key, sizeof(*key)))
		o->nkeys--;
	c->shared++;
	touch(c, o);
	return o;
}

/* Evicts entries outside the working set, least recently used first, until bytes are freed. */
static size_t make_way(void *ctx, size_t bytes)
{
	struct ember_objcache *c = ctx;
	size_t freed = 0;

	while (freed < bytes && c->lru_tail &&
	       c->load_now_ns - c->lru_tail->used_ns >= EMBER_OBJCACHE_HOT_NS) {
		size_t held = ember_mem_owner_bytes(EMBER_MEM_OBJCACHE),
		       bytes_of = c->lru_tail->bytes;

		remove_entry(c, c->lru_tail);
		c->evictions++;
		c->shrinks++;
		/* Measured where the allocator counts: what the entry held is gone from it. */
		if (ember_mem_counting())
			bytes_of = held - MIN(held, ember_mem_owner_bytes(EMBER_MEM_OBJCACHE));
		freed += bytes_of;
		c->load_freed += bytes_of;
	}
	return freed;
}

/*
 * The room a file about to be read has: what it may keep beside the working
 * set, and what reading it may take of the memory
 * budget's room, which entries outside the working set widen when asked.
 */
static struct ember_objfile_room room_for_new(struct ember_objcache *c, uint64_t now_ns)
{
	struct ember_objfile_room room = {c->limit, c->budget_room, make_way, c};
	size_t hot = 0;

	for (const struct ember_obj *o = c->lru_head;
	     o && now_ns - o->used_ns < EMBER_OBJCACHE_HOT_NS; o = o->lru_next)
		hot += o->bytes;
	/* A small file's DWARF is read whatever the working set holds: it costs little to
	 * evict for, and the programs of a churn would otherwise never have lines. */
	room.kept = MAX(c->limit - MIN(c->limit, hot), c->limit / EMBER_OBJCACHE_SMALL_SHARE);
	c->load_now_ns = now_ns;
	c->load_freed = 0;
	return room;
}

/* What a new entry costs: measured when the allocator counts, else estimated. */
static size_t measured(const struct ember_obj *o, size_t counted_before)
{
	size_t now = ember_mem_owner_bytes(EMBER_MEM_OBJCACHE);

	if (!ember_mem_counting())
		return o->error ? sizeof(*o) : sizeof(*o) + ember_objfile_bytes(&o->file);
	return now > counted_before + sizeof(*o) ? now - counted_before : sizeof(*o);
}

struct ember_obj *ember_objcache_load(struct ember_objcache *c, const struct ember_obj_key *key,
                                      int fd, uint32_t pid, const struct ember_debug_opener *op,
                                      uint64_t now_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_OBJCACHE);
	struct ember_file_id id;
	struct ember_obj *o;
	uint32_t slot, stored;
	size_t before;

	/* Replace an entry of the same key (a failure being retried). */
	if (!ember_slots_find(&c->slots, key, sizeof(*key), &slot))
		remove_entry(c, at(c, slot));
	if (fd >= 0 && !ember_file_id_fd(fd, &id) &&
	    !ember_index_find(&c->id_index, id_hash(c, id.hash), id.hash, sizeof(id.hash), hash_eq,
	                      c, &slot))
		return add_alias(c, at(c, slot), key);
	before = ember_mem_owner_bytes(EMBER_MEM_OBJCACHE);
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->keys[0] = *key;
	o->nkeys = 1;
	o->used_ns = o->loaded_ns = now_ns;
	if (fd >= 0) {
		struct ember_objfile_room room = room_for_new(c, now_ns);

		o->error = ember_objfile_open_within(fd, op, &room, &o->file);
		/* Evictions that made way gave memory back: not the entry's doing. */
		before -= MIN(before, c->load_freed);
		c->files_deferred += o->error == -ENOBUFS;
		c->dwarf_deferred += !o->error && o->file.dwarf_deferred;
	} else {
		o->error = fd;
	}
	if (o->error) {
		o->failed_at_ns = now_ns;
		o->open_failed_pid = fd < 0 ? pid : 0;
		c->load_errors += o->error != -ENOBUFS; /* no room is no error of the file */
	} else if (o->file.has_id) {
		memcpy(o->hash, o->file.id.hash, sizeof(o->hash));
		o->has_hash = true;
	}
	o->bytes = o->bytes_fresh = measured(o, before);
	c->budget_room -= MIN(c->budget_room, o->bytes);
	/* What parsing read of the file (symbol tables, now copied; DWARF headers) goes
	 * back at once: a large file's pages would otherwise stay resident until the next
	 * ember_objcache_release_pages, tens of MiB for a few files parsed in a second. */
	if (!o->error)
		ember_objfile_release_pages(&o->file);
	make_room(c, o->bytes, NULL);
	if (ember_slots_add(&c->slots, key, sizeof(*key), &slot) < 0) {
		obj_destroy(o);
		return NULL;
	}
	o->slot = slot;
	*(struct ember_obj **)ember_slots_at(&c->slots, slot) = o;
	if (o->has_hash && ember_index_upsert(&c->id_index, id_hash(c, o->hash), o->hash,
	                                      sizeof(o->hash), hash_eq, c, slot, &stored) < 0)
		o->has_hash = false;
	c->bytes += o->bytes;
	lru_push_head(c, o);
	return o;
}

/* Bytes the entry's file holds now: measured (the owner's count), else estimated. */
static size_t held_now(const struct ember_obj *o)
{
	if (ember_mem_counting())
		return ember_mem_owner_bytes(EMBER_MEM_OBJCACHE);
	return sizeof(*o) + ember_objfile_bytes(&o->file);
}

/* The entry's size after it changed from `before` (a held_now() value). */
static void recount(struct ember_objcache *c, struct ember_obj *o, size_t before)
{
	size_t now = held_now(o), bytes = o->bytes;

	if (now >= before)
		bytes += now - before;
	else
		bytes -= before - now < bytes - sizeof(*o) ? before - now : bytes - sizeof(*o);
	c->bytes = c->bytes - o->bytes + bytes;
	o->bytes = bytes;
}

/*
 * What a lookup in o may take to expand the DWARF unit it falls in, estimated
 * at cost: cost when it fits, else 0 (the address is named from the symbol
 * table alone, counted). One file keeps at most half the cache, or an eighth
 * more than it took when its DWARF was opened (glibc's debug file takes 13.4
 * MiB at open, past half of the default 24 MiB cache): when a unit
 * would take it past that, what lookups expanded of its DWARF goes first
 * (before the lookup: the frames it returns point into it), at most once
 * every EMBER_OBJCACHE_RETRY_NS (the units in use then expand again, each
 * admitted). The moment's heap must fit the memory budget's room too,
 * entries outside the working set making way. Without this, a lookup in
 * CPython's ceval.c (6.4 MiB expanded, in 20 ms) passed the budget between
 * two checks, and a file past half the cache was reset and expanded again
 * every 2.4 s.
 */
static size_t expand_room(struct ember_objcache *c, struct ember_obj *o, uint64_t vaddr,
                          size_t cost)
{
	size_t cap = ember_objcache_file_cap(c, o), before;

	if (o->bytes + cost > cap && o->bytes > o->bytes_fresh &&
	    (!o->dwarf_was_reset || o->used_ns - o->dwarf_reset_ns >= EMBER_OBJCACHE_RETRY_NS)) {
		before = held_now(o);
		ember_objfile_reset_dwarf(&o->file);
		recount(c, o, before);
		o->bytes_fresh = o->bytes;
		o->dwarf_was_reset = true;
		o->dwarf_reset_ns = o->used_ns;
		c->dwarf_resets++;
		if (!o->file.dwarf)
			return 0;
		cost = ember_objfile_expand_cost(&o->file, vaddr);
	}
	if (o->bytes + cost > cap) {
		c->units_deferred++;
		return 0;
	}
	if (cost > c->budget_room) {
		c->load_now_ns = o->used_ns;
		c->budget_room += make_way(c, cost - c->budget_room);
	}
	if (cost > c->budget_room) {
		c->units_deferred++;
		return 0;
	}
	c->budget_room -= cost;
	return cost;
}

enum ember_sym_origin ember_objcache_lookup(struct ember_objcache *c, struct ember_obj *o,
                                            uint64_t vaddr, struct ember_sym_frames *out)
{
	EMBER_MEM_SCOPE(EMBER_MEM_OBJCACHE);
	enum ember_sym_origin origin;
	size_t before, cost, max_expand = SIZE_MAX;

	out->n = 0;
	if (o->error)
		return EMBER_SYM_NONE;
	c->lookups_without_dwarf += o->file.dwarf_deferred;
	cost = ember_objfile_expand_cost(&o->file, vaddr);
	if (cost)
		max_expand = expand_room(c, o, vaddr, cost);
	before = held_now(o);
	origin = ember_objfile_lookup_within(&o->file, vaddr, max_expand, out);
	o->touched = true; /* it read pages of the file: ember_objcache_release_pages */
	recount(c, o, before);
	/* Frames point into the entry: it stays, others make room. */
	make_room(c, 0, o);
	return origin;
}

void ember_objcache_release_pages(struct ember_objcache *c)
{
	for (struct ember_obj *o = c->lru_head; o; o = o->lru_next)
		if (o->touched && !o->error) {
			ember_objfile_release_pages(&o->file);
			o->touched = false;
		}
}

void ember_objcache_set_room(struct ember_objcache *c, size_t bytes)
{
	c->budget_room = bytes;
}

size_t ember_objcache_file_cap(const struct ember_objcache *c, const struct ember_obj *o)
{
	/* What the other entries leave of the limit evicts nobody when taken: a large
	 * file's DWARF grows into it (the limit itself grows while the budget has room). */
	size_t others = c->bytes - MIN(c->bytes, o->bytes);
	size_t left = c->limit - MIN(c->limit, others);

	return MAX(MAX(c->limit / 2, o->bytes_fresh + c->limit / 8), left);
}

uint64_t ember_objcache_changes(const struct ember_objcache *c)
{
	return c->removed;
}

size_t ember_objcache_bytes(const struct ember_objcache *c)
{
	return c->bytes;
}

size_t ember_objcache_limit(const struct ember_objcache *c)
{
	return c->limit;
}

size_t ember_objcache_set_limit(struct ember_objcache *c, size_t bytes)
{
	EMBER_MEM_SCOPE(EMBER_MEM_OBJCACHE);
	size_t held = c->bytes;
	uint64_t evicted = c->evictions;

	c->limit = bytes && bytes < c->max_bytes ? bytes : c->max_bytes;
	make_room(c, 0, NULL);
	c->shrinks += c->evictions - evicted;
	return held - c->bytes;
}

void ember_objcache_report_stats(const struct ember_objcache *c, const struct ember_stat_sink *sink)
{
	ember_stat(sink, "objcache.hits", c->hits);
	ember_stat(sink, "objcache.misses", c->misses);
	ember_stat(sink, "objcache.evictions", c->evictions);
	ember_stat(sink, "objcache.evictions_for_budget", c->shrinks);
	ember_stat(sink, "objcache.changed_files", c->changed_files);
	ember_stat(sink, "objcache.shared", c->shared);
	ember_stat(sink, "objcache.load_errors", c->load_errors);
	ember_stat(sink, "objcache.bytes", c->bytes);
	ember_stat(sink, "objcache.dwarf_resets", c->dwarf_resets);
	ember_stat(sink, "objcache.units_deferred_for_budget", c->units_deferred);
	ember_stat(sink, "objcache.max_bytes", c->max_bytes);
	ember_stat(sink, "objcache.limit", c->limit);
	ember_stat(sink, "objcache.entries", c->slots.count);
	ember_stat(sink, "objcache.files_deferred_for_budget", c->files_deferred);
	ember_stat(sink, "objcache.dwarf_deferred_for_budget", c->dwarf_deferred);
	ember_stat(sink, "objcache.lookups_without_dwarf", c->lookups_without_dwarf);
}

uint64_t ember_objcache_parse_errors(const struct ember_objcache *c)
{
	/* Errors of evicted files are kept in the running total. */
	uint64_t n = c->load_errors + c->retired_errors;
	const struct ember_obj *o;

	for (uint32_t i = 0; i < ember_slots_end(&c->slots); i++)
		if ((o = at(c, i)) && !o->error)
			n += ember_objfile_errors(&o->file);
	return n;
}
