/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parsed symbol data per mapped file, shared by every process that maps the
 * file. A mapping names its file by device and inode; the parsed data is
 * keyed by the file's content identity (htlhash), so copies of one binary
 * in several containers or paths are parsed once: each (device, inode) seen
 * becomes an alias of the entry. Entries are bounded in memory (least
 * recently used out) and failures are remembered for a while so a broken
 * file is not re-read for every sample.
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_OBJCACHE_H
#define EMBER_SYMBOLIZER_SYMBOLS_OBJCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/symbols/objfile.h"
#include "shared/hash.h"
#include "shared/slots.h"

#define EMBER_OBJCACHE_DEFAULT_BYTES (24u << 20)
#define EMBER_OBJCACHE_RETRY_NS      (30ull * 1000000000ull)
/* A file that could not be read in time (-ETIMEDOUT: a stalled file system) is tried again
 * sooner: its frames come back once it answers. */
#define EMBER_OBJCACHE_STALL_RETRY_NS (2ull * 1000000000ull)
#define EMBER_OBJ_MAX_ALIASES         8

struct ember_obj_key {
	uint64_t dev; /* makedev(major, minor) as the mapping shows it */
	uint64_t ino;
};

struct ember_obj {
	struct ember_obj_key keys[EMBER_OBJ_MAX_ALIASES];
	uint32_t nkeys;
	bool has_hash;
	uint8_t hash[EMBER_FILE_HASH_BYTES];
	int error; /* 0: loaded; else why loading failed */
	uint64_t failed_at_ns;
	uint32_t open_failed_pid; /* the file could not be had through this process, else 0 */
	struct ember_objfile file;
	size_t bytes;
	struct ember_obj *lru_prev, *lru_next; /* most recently used at the head */
	uint32_t slot;
};

struct ember_objcache {
	struct ember_slots slots;    /* struct ember_obj *, by each of its keys */
	struct ember_index id_index; /* htlhash -> slot */
	struct ember_obj *lru_head, *lru_tail;
	size_t bytes;
	size_t max_bytes;
	uint64_t hits, misses, evictions, load_errors, shared;
	uint64_t retired_errors; /* parse errors of entries since evicted */
	uint64_t sigbus_seen;    /* sigbus_guard's count when last looked at */
	uint64_t changed_files;  /* entries dropped because their file shrank under them */
};

int ember_objcache_init(struct ember_objcache *c, size_t max_bytes);
void ember_objcache_free(struct ember_objcache *c);

/*
 * The cached entry for key, or NULL on a miss. A remembered failure younger
 * than EMBER_OBJCACHE_RETRY_NS (_STALL_RETRY_NS for a stall) is returned (check ->error); an older
 * one is dropped and reported as a miss so the caller tries again.
 */
struct ember_obj *ember_objcache_get(struct ember_objcache *c, const struct ember_obj_key *key,
                                     uint64_t now_ns);

/*
 * Parses the file open at fd (fd < 0: remember the failure -fd), or finds
 * the same content cached under another key, and caches the result. op
 * opens separate debug files (may be NULL). Returns the entry, or NULL when
 * out of memory.
 */
struct ember_obj *ember_objcache_load(struct ember_objcache *c, const struct ember_obj_key *key,
                                      int fd, const struct ember_debug_opener *op, uint64_t now_ns);

/* Re-reads an entry's size after lookups grew it and evicts others to fit. */
void ember_objcache_account(struct ember_objcache *c, struct ember_obj *o);
/* Malformed inputs met so far: failed loads, and parse errors of entries cached or evicted. */
uint64_t ember_objcache_parse_errors(const struct ember_objcache *c);

#endif
