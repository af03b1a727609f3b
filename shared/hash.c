// SPDX-License-Identifier: Apache-2.0
#include "shared/hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

int ember_hash_key_init(struct ember_hash_key *key)
{
	if (sodium_init() < 0)
		return -EIO;
	randombytes_buf(key->bytes, sizeof(key->bytes));
	return 0;
}

uint64_t ember_hash(const struct ember_hash_key *key, const void *data, size_t len)
{
	unsigned char out[crypto_shorthash_siphash24_BYTES];
	uint64_t h;

	crypto_shorthash_siphash24(out, data, len, key->bytes);
	memcpy(&h, out, sizeof(h));
	return h;
}

void ember_index_init(struct ember_index *ix)
{
	memset(ix, 0, sizeof(*ix));
}

void ember_index_free(struct ember_index *ix)
{
	free(ix->hashes);
	free(ix->values);
	ember_index_init(ix);
}

static int index_grow(struct ember_index *ix)
{
	size_t cap = ix->capacity ? ix->capacity * 2 : 64;
	uint64_t *hashes = calloc(cap, sizeof(*hashes));
	uint32_t *values = calloc(cap, sizeof(*values));

	if (!hashes || !values) {
		free(hashes);
		free(values);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ix->capacity; i++) {
		size_t j;

		if (!ix->values[i])
			continue;
		for (j = ix->hashes[i] & (cap - 1); values[j]; j = (j + 1) & (cap - 1))
			;
		hashes[j] = ix->hashes[i];
		values[j] = ix->values[i];
	}
	free(ix->hashes);
	free(ix->values);
	ix->hashes = hashes;
	ix->values = values;
	ix->capacity = cap;
	return 0;
}

int ember_index_find(const struct ember_index *ix, uint64_t hash, const void *key, size_t len,
                     ember_index_eq_fn eq, const void *ctx, uint32_t *out)
{
	if (!ix->capacity)
		return -ENOENT;
	for (size_t j = hash & (ix->capacity - 1);; j = (j + 1) & (ix->capacity - 1)) {
		if (!ix->values[j])
			return -ENOENT;
		if (ix->hashes[j] == hash && eq(ctx, ix->values[j] - 1, key, len)) {
			*out = ix->values[j] - 1;
			return 0;
		}
	}
}

int ember_index_upsert(struct ember_index *ix, uint64_t hash, const void *key, size_t len,
                       ember_index_eq_fn eq, const void *ctx, uint32_t new_value, uint32_t *out)
{
	size_t j;
	int err;

	if (ember_index_find(ix, hash, key, len, eq, ctx, out) == 0)
		return 0;
	/* Keep the load factor at or below 1/2 so probes stay short. */
	if ((ix->count + 1) * 2 > ix->capacity) {
		err = index_grow(ix);
		if (err)
			return err;
	}
	for (j = hash & (ix->capacity - 1); ix->values[j]; j = (j + 1) & (ix->capacity - 1))
		;
	ix->hashes[j] = hash;
	ix->values[j] = new_value + 1;
	ix->count++;
	*out = new_value;
	return 1;
}

int ember_index_remove(struct ember_index *ix, uint64_t hash, uint32_t value)
{
	size_t mask = ix->capacity - 1, j, k;

	if (!ix->capacity)
		return -ENOENT;
	/* The hash too: a value may be stored under several keys (a slot's aliases), and the
	 * first with this value in the probe chain may be another key's. */
	for (j = hash & mask;; j = (j + 1) & mask) {
		if (!ix->values[j])
			return -ENOENT;
		if (ix->values[j] == value + 1 && ix->hashes[j] == hash)
			break;
	}
	/* Backward-shift deletion keeps every probe chain unbroken. */
	ix->values[j] = 0;
	ix->count--;
	for (k = (j + 1) & mask; ix->values[k]; k = (k + 1) & mask) {
		size_t home = ix->hashes[k] & mask;

		if (((k - home) & mask) >= ((k - j) & mask)) {
			ix->hashes[j] = ix->hashes[k];
			ix->values[j] = ix->values[k];
			ix->values[k] = 0;
			j = k;
		}
	}
	return 0;
}
