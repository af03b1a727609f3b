/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keyed hashing (SipHash-2-4 through libsodium) and an open-addressing index
 * built on it. Tables fed by untrusted data (paths, symbol names, stacks from
 * profiled processes) use a random key so that an attacker cannot choose
 * colliding inputs.
 */
#ifndef EMBER_SHARED_HASH_H
#define EMBER_SHARED_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ember_hash_key {
	unsigned char bytes[16];
};

/* Fills key with random bytes. Returns 0 or a negative errno. */
int ember_hash_key_init(struct ember_hash_key *key);
uint64_t ember_hash(const struct ember_hash_key *key, const void *data, size_t len);

/*
 * An index from hashed keys to caller-owned uint32_t values (typically an
 * index into the caller's array). The index stores only hashes and values;
 * equality is decided by the caller's callback.
 */
typedef bool (*ember_index_eq_fn)(const void *ctx, uint32_t value, const void *key, size_t len);

struct ember_index {
	uint64_t *hashes;
	uint32_t *values; /* value + 1; 0 marks an empty slot */
	size_t capacity;  /* power of two */
	size_t count;
};

void ember_index_init(struct ember_index *ix);
void ember_index_free(struct ember_index *ix);

/*
 * Looks key up; when absent inserts new_value. *out receives the stored
 * value. Returns 1 if inserted, 0 if found, -ENOMEM.
 */
int ember_index_upsert(struct ember_index *ix, uint64_t hash, const void *key, size_t len,
                       ember_index_eq_fn eq, const void *ctx, uint32_t new_value, uint32_t *out);

/* Returns 0 and sets *out when found, -ENOENT otherwise. */
int ember_index_find(const struct ember_index *ix, uint64_t hash, const void *key, size_t len,
                     ember_index_eq_fn eq, const void *ctx, uint32_t *out);

/* Removes the entry holding value (found by its hash). Returns 0 or -ENOENT. */
int ember_index_remove(struct ember_index *ix, uint64_t hash, uint32_t value);

#endif
