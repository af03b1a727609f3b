/* SPDX-License-Identifier: Apache-2.0 */
/*
 * String tables (as libbpf's strset): NUL-terminated strings packed in one
 * growable arena with a ceiling in bytes, named by 32-bit numbers.
 *
 * struct ember_strtab appends: a string is named by its offset, and adding
 * one twice stores it twice (symbol and path tables, built once and read
 * many times). struct ember_strset interns: each distinct string is stored
 * once and named by a dense id 0, 1, 2, ... in order of first appearance
 * (the string tables of profiles, whose ids are pprof's string indices).
 *
 * The strings come from profiled programs and files (symbol names, paths,
 * frames): lengths are checked against the ceiling, strings with a NUL
 * inside are refused, and the interning index hashes with a random key.
 */
#ifndef EMBER_SHARED_STRTAB_H
#define EMBER_SHARED_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "shared/hash.h"
#include "shared/vec.h"

/* Offsets are 32-bit: no table may grow beyond this. */
#define EMBER_STRTAB_MAX_BYTES ((size_t)UINT32_MAX)

struct ember_strtab {
	char *data;
	size_t len; /* bytes used, NULs included */
	size_t cap;
	size_t max; /* the most bytes it may hold */
};

/* An empty table that holds at most max bytes (at most EMBER_STRTAB_MAX_BYTES). */
void ember_strtab_init(struct ember_strtab *t, size_t max);
void ember_strtab_free(struct ember_strtab *t);
/*
 * Appends the len bytes at s and a NUL; *off receives where they start.
 * Returns 0, -E2BIG when the table would pass its ceiling, or -ENOMEM.
 */
int ember_strtab_add(struct ember_strtab *t, const char *s, size_t len, uint32_t *off);
/* The string at off (an offset ember_strtab_add returned). */
static inline const char *ember_strtab_at(const struct ember_strtab *t, uint32_t off)
{
	return t->data + off;
}
/* Gives the arena back at its used size (for tables kept long after they are built). */
void ember_strtab_shrink(struct ember_strtab *t);

struct ember_strset {
	struct ember_strtab tab;
	struct ember_vec offsets; /* uint32_t: id -> offset in tab */
	struct ember_index index;
	struct ember_hash_key key;
};

/* An empty set holding at most max bytes. Returns 0 or a negative errno (no random key). */
int ember_strset_init(struct ember_strset *s, size_t max);
void ember_strset_free(struct ember_strset *s);
/* Forgets every string; the key and the ceiling stay. */
void ember_strset_clear(struct ember_strset *s);
/*
 * The id of the len bytes at s, added when new. Returns 0; -EINVAL when s
 * holds a NUL; -E2BIG past the ceiling; -ENOMEM.
 */
int ember_strset_intern(struct ember_strset *s, const char *str, size_t len, uint32_t *id);
/* The id of str if it is in the set. Returns 0 or -ENOENT. */
int ember_strset_find(const struct ember_strset *s, const char *str, size_t len, uint32_t *id);
/* The string of id, or "" for an id the set never gave. */
const char *ember_strset_str(const struct ember_strset *s, uint32_t id);
/* The length of the string of id (0 for an id the set never gave). */
size_t ember_strset_len(const struct ember_strset *s, uint32_t id);
static inline size_t ember_strset_count(const struct ember_strset *s)
{
	return s->offsets.len;
}

#endif
