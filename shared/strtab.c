// SPDX-License-Identifier: Apache-2.0
#include "shared/strtab.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void ember_strtab_init(struct ember_strtab *t, size_t max)
{
	memset(t, 0, sizeof(*t));
	t->max = max < EMBER_STRTAB_MAX_BYTES ? max : EMBER_STRTAB_MAX_BYTES;
}

void ember_strtab_free(struct ember_strtab *t)
{
	free(t->data);
	ember_strtab_init(t, t->max);
}

int ember_strtab_add(struct ember_strtab *t, const char *s, size_t len, uint32_t *off)
{
	int err;

	/* s may point into the table itself (a string interned again from a
	 * name the table holds): growing moves it, so keep its offset. */
	uintptr_t at = (uintptr_t)s, base = (uintptr_t)t->data;
	bool inside = t->data && at >= base && at < base + t->cap;
	size_t s_off = inside ? at - base : 0;

	if (len >= t->max - t->len)
		return -E2BIG;
	err = EMBER_ENSURE(t->data, t->cap, t->len + len + 1, t->max);
	if (err)
		return err;
	if (inside)
		s = t->data + s_off;
	memcpy(t->data + t->len, s, len);
	t->data[t->len + len] = '\0';
	*off = (uint32_t)t->len;
	t->len += len + 1;
	return 0;
}

void ember_strtab_shrink(struct ember_strtab *t)
{
	char *shrunk;

	if (t->len == t->cap || !t->len)
		return;
	shrunk = realloc(t->data, t->len);
	if (shrunk) {
		t->data = shrunk;
		t->cap = t->len;
	}
}

int ember_strset_init(struct ember_strset *s, size_t max)
{
	ember_strtab_init(&s->tab, max);
	ember_vec_init(&s->offsets, sizeof(uint32_t));
	ember_index_init(&s->index);
	return ember_hash_key_init(&s->key);
}

void ember_strset_free(struct ember_strset *s)
{
	ember_strtab_free(&s->tab);
	ember_vec_free(&s->offsets);
	ember_index_free(&s->index);
}

void ember_strset_clear(struct ember_strset *s)
{
	struct ember_hash_key key = s->key;

	ember_strset_free(s);
	s->key = key;
}

static bool str_eq(const void *ctx, uint32_t id, const void *key, size_t len)
{
	const struct ember_strset *s = ctx;
	const char *have = s->tab.data + *EMBER_VEC_AT(s->offsets, uint32_t, id);

	return !memcmp(have, key, len) && have[len] == '\0';
}

int ember_strset_find(const struct ember_strset *s, const char *str, size_t len, uint32_t *id)
{
	return ember_index_find(&s->index, ember_hash(&s->key, str, len), str, len, str_eq, s, id);
}

int ember_strset_intern(struct ember_strset *s, const char *str, size_t len, uint32_t *id)
{
	uint64_t h = ember_hash(&s->key, str, len);
	uint32_t next = (uint32_t)s->offsets.len, off;
	int err;

	if (!ember_index_find(&s->index, h, str, len, str_eq, s, id))
		return 0;
	if (memchr(str, '\0', len))
		return -EINVAL;
	err = ember_vec_reserve(&s->offsets, 1);
	if (!err)
		err = ember_strtab_add(&s->tab, str, len, &off);
	if (err)
		return err;
	ember_vec_push(&s->offsets, &off, 1);
	/* The copy, not str: str may have pointed into the table that just grew. */
	str = s->tab.data + off;
	err = ember_index_upsert(&s->index, h, str, len, str_eq, s, next, id);
	if (err < 0) {
		s->offsets.len--;
		s->tab.len = off;
		return err;
	}
	return 0;
}

const char *ember_strset_str(const struct ember_strset *s, uint32_t id)
{
	if (id >= s->offsets.len)
		return "";
	return s->tab.data + *EMBER_VEC_AT(s->offsets, uint32_t, id);
}

size_t ember_strset_len(const struct ember_strset *s, uint32_t id)
{
	uint32_t off, end;

	if (id >= s->offsets.len)
		return 0;
	off = *EMBER_VEC_AT(s->offsets, uint32_t, id);
	end = id + 1 < s->offsets.len ? *EMBER_VEC_AT(s->offsets, uint32_t, id + 1)
	                              : (uint32_t)s->tab.len;
	return end - off - 1;
}
