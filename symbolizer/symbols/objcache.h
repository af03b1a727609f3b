/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parsed symbol data per mapped file, shared by every process that maps the
 * file. A mapping names its file by device and inode; the parsed data is
 * keyed by the file's content identity (htlhash), so copies of one binary
 * in several containers or paths are parsed once: each (device, inode) seen
 * becomes an alias of the entry. Failures are remembered for a while so a
 * broken file is not re-read for every sample.
 *
 * Bounded in bytes, least recently used out: each entry's size is measured
 * (symbolizer/memory/mem_owners.h: everything allocated while it is parsed
 * and looked up, libelf's and libdw's blocks included, is charged to the
 * "objcache" owner and to the entry), or estimated where nothing measures
 * (unit tests). A DWARF unit is expanded by a lookup only if it fits, judged
 * before from its size (dwarf.h, ember_dwarf_expand_cost): one file may hold
 * at most half the cache, an eighth more than its DWARF took at open, or what
 * the other entries leave free (ember_objcache_file_cap; when full, what
 * lookups expanded of its DWARF is dropped, at most once every
 * EMBER_OBJCACHE_RETRY_NS, and the units in use expand again), and the
 * moment's heap must fit the memory budget's room;
 * else the address is named from the symbol table alone
 * (objcache.units_deferred_for_budget).
 * The pages of the files that reading them brings in are given back every
 * second (ember_objcache_release_pages): the page cache keeps them. The memory budget moves
 * the limit at or below the configured maximum (ember_objcache_set_limit): down while
 * resident memory is short, up while the budget has room unused.
 *
 * A file is read only if it fits, judged before it is read from its section
 * headers (objfile.h, ember_objfile_open_within): what it keeps must fit the
 * cache beside the working set (the entries used in the last
 * EMBER_OBJCACHE_HOT_NS; at least a thirty-second of it whatever they
 * hold), and what reading it takes
 * for a moment (heap and file pages) the room the memory budget has left
 * (ember_objcache_set_room), entries outside the working set making way
 * when it would not. A file whose DWARF does not fit keeps its symbols alone (names without
 * lines or inline frames) and is read again after EMBER_OBJCACHE_RETRY_NS; one
 * whose symbols do not fit is not read (-ENOBUFS) and is tried again after
 * EMBER_OBJCACHE_STALL_RETRY_NS, as is one the broker was too busy to open
 * (-EBUSY, -EAGAIN). Both are counted.
 *
 * Hostile input: the files (see objfile.h).
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_OBJCACHE_H
#define EMBER_SYMBOLIZER_SYMBOLS_OBJCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/symbols/objfile.h"
#include "shared/hash.h"
#include "shared/slots.h"
#include "shared/stat_sink.h"

#define EMBER_OBJCACHE_DEFAULT_BYTES (24u << 20)
#define EMBER_OBJCACHE_RETRY_NS      (30ull * 1000000000ull)
/* A file that could not be read in time (-ETIMEDOUT: a stalled file system) is tried again
 * sooner: its frames come back once it answers. */
#define EMBER_OBJCACHE_STALL_RETRY_NS (2ull * 1000000000ull)
#define EMBER_OBJ_MAX_ALIASES         8
/* Entries used this recently are the working set: a file is not read at their expense. */
#define EMBER_OBJCACHE_HOT_NS (5ull * 1000000000ull)
/* ... unless it keeps at most this share of the cache (1/32: 768 KiB of 24 MiB). */
#define EMBER_OBJCACHE_SMALL_SHARE 32

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
	/* Callers read keys, error and file; the rest is objcache.c's own. */
	uint32_t open_failed_pid; /* the file could not be had through this process, else 0 */
	struct ember_objfile file;
	size_t bytes; /* measured while it was parsed and looked up (estimated in unit tests) */
	size_t
	    bytes_fresh;  /* bytes when its DWARF was last opened: what lookups add comes on top */
	bool touched;     /* read since its file's pages were last given back */
	uint64_t used_ns; /* last asked for */
	bool dwarf_was_reset;    /* what lookups expanded of its DWARF was dropped once ... */
	uint64_t dwarf_reset_ns; /* ... last at this time */
	uint64_t loaded_ns;      /* read */
	struct ember_obj *lru_prev, *lru_next; /* most recently used at the head */
	uint32_t slot;
};

/* Every field is objcache.c's: read it through the functions below. */
struct ember_objcache {
	struct ember_slots slots;    /* struct ember_obj *, by each of its keys */
	struct ember_index id_index; /* htlhash -> slot */
	struct ember_obj *lru_head, *lru_tail;
	size_t bytes;
	size_t max_bytes; /* configured */
	size_t limit;     /* now: max_bytes, or less while the memory budget asks */
	uint64_t hits, misses, evictions, load_errors, shared;
	uint64_t removed;        /* entries freed, for whatever reason: ember_objcache_changes */
	uint64_t retired_errors; /* parse errors of entries since evicted */
	uint64_t sigbus_seen;    /* sigbus_guard's count when last looked at */
	uint64_t changed_files;  /* entries dropped because their file shrank under them */
	uint64_t shrinks;        /* entries evicted for the memory budget */
	uint64_t dwarf_resets;   /* files whose expanded DWARF grew past half the cache */
	size_t budget_room;      /* what reading files may take now (ember_objcache_set_room) */
	uint64_t load_now_ns;    /* the time of the load under way (for make_way) */
	size_t load_freed;       /* what its evictions gave back (measured or estimated) */
	uint64_t files_deferred; /* files not read: their symbols did not fit the room */
	uint64_t dwarf_deferred; /* files read without their DWARF: it did not fit */
	uint64_t lookups_without_dwarf; /* lookups in such a file */
	uint64_t units_deferred;        /* lookups whose DWARF unit did not fit to expand */
};

int ember_objcache_init(struct ember_objcache *c, size_t max_bytes);
void ember_objcache_free(struct ember_objcache *c);

/*
 * The cached entry for key, or NULL on a miss. A remembered failure younger
 * than EMBER_OBJCACHE_RETRY_NS (_STALL_RETRY_NS for a stall) is returned (check ->error); an older
 * one is dropped and reported as a miss so the caller tries again, and so is a file that
 * could not be opened through another process than pid (it may well open through this one).
 */
struct ember_obj *ember_objcache_get(struct ember_objcache *c, const struct ember_obj_key *key,
                                     uint32_t pid, uint64_t now_ns);

/*
 * Parses the file open at fd (fd < 0: remember the failure -fd, which the
 * broker gave for a mapping of pid), or finds the same content cached under
 * another key, and caches the result. op opens separate debug files (may be
 * NULL). Returns the entry, or NULL when out of memory.
 */
struct ember_obj *ember_objcache_load(struct ember_objcache *c, const struct ember_obj_key *key,
                                      int fd, uint32_t pid, const struct ember_debug_opener *op,
                                      uint64_t now_ns);

/*
 * The frames at vaddr of a loaded entry (ember_objfile_lookup). DWARF units
 * expand on demand if they fit (above): what that costs is added to the
 * entry, and others are evicted to fit.
 */
enum ember_sym_origin ember_objcache_lookup(struct ember_objcache *c, struct ember_obj *o,
                                            uint64_t vaddr, struct ember_sym_frames *out);

/*
 * Gives back the pages of the cached files that reading them brought in
 * since the last call (objfile.h): a cached file costs its parsed tables,
 * not its size.
 */
void ember_objcache_release_pages(struct ember_objcache *c);

/* The most o may hold with what lookups expand of its DWARF: half the cache, an eighth
 * of it more than it held when its DWARF was opened, or what the other entries leave of
 * the limit, whichever is most. */
size_t ember_objcache_file_cap(const struct ember_objcache *c, const struct ember_obj *o);
/* Changes when an entry is freed: an entry pointer kept from before is the same entry
 * while it has not changed (a new one may reuse a freed one's memory). */
uint64_t ember_objcache_changes(const struct ember_objcache *c);
/* Bytes the entries hold now, and the most they may hold now. */
size_t ember_objcache_bytes(const struct ember_objcache *c);
size_t ember_objcache_limit(const struct ember_objcache *c);
/*
 * Holds the cache to at most bytes (at most the configured maximum; 0: the
 * maximum again), evicting the least recently used. Returns the bytes freed.
 */
size_t ember_objcache_set_limit(struct ember_objcache *c, size_t bytes);
/*
 * What reading files may take from now on (the memory budget's room), less
 * what each file read keeps, until it is set again. SIZE_MAX: no limit (the
 * start).
 */
void ember_objcache_set_room(struct ember_objcache *c, size_t bytes);
/* Malformed files and pieces of files met so far, evicted entries' included. */
uint64_t ember_objcache_parse_errors(const struct ember_objcache *c);

/* objcache.* statistics into p. */
void ember_objcache_report_stats(const struct ember_objcache *c,
                                 const struct ember_stat_sink *sink);

#endif
