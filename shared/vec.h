/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Growable arrays with a ceiling: the one way ember grows memory (as libbpf
 * has libbpf_ensure_mem). Sizes come from parsed input (symbol counts, rows,
 * strings), so every growth is checked against overflow and against a
 * maximum the caller names: hostile input gets -E2BIG, never a huge
 * allocation or a wrapped size.
 *
 * Two forms: ember_ensure_mem() for an array a struct keeps as a pointer and
 * a capacity of its own, and struct ember_vec, which keeps both (and the
 * length) itself.
 */
#ifndef EMBER_SHARED_VEC_H
#define EMBER_SHARED_VEC_H

#include <stddef.h>
#include <stdint.h>

/*
 * Makes room for need items of item_size bytes in *data, whose capacity is
 * *cap items: the capacity doubles (from 4) until need fits, and never
 * exceeds max items. Returns 0; -E2BIG when need > max; -ENOMEM (then *data
 * and *cap are unchanged).
 */
int ember_ensure_mem(void **data, size_t *cap, size_t item_size, size_t need, size_t max);

/* The same for a typed array: EMBER_ENSURE(s->syms, s->syms_cap, s->nsyms + 1, MAX). */
#define EMBER_ENSURE(arr, cap, need, max)                                                          \
	ember_ensure_mem((void **)&(arr), &(cap), sizeof(*(arr)), (need), (max))

/* No ceiling but the one that keeps sizes from overflowing. */
#define EMBER_VEC_NO_MAX SIZE_MAX

struct ember_vec {
	void *items;
	size_t len;
	size_t cap;
	size_t item_size;
	size_t max; /* the most items it may hold */
};

/* An empty vector of items of item_size bytes, holding at most max of them. */
void ember_vec_init_max(struct ember_vec *v, size_t item_size, size_t max);
static inline void ember_vec_init(struct ember_vec *v, size_t item_size)
{
	ember_vec_init_max(v, item_size, EMBER_VEC_NO_MAX);
}
/* Frees the items; the vector is empty again (same item size and ceiling). */
void ember_vec_free(struct ember_vec *v);
/*
 * Appends n items copied from items (zeroed when items is NULL). Returns the
 * first of them, or NULL when they do not fit (memory or the ceiling).
 */
void *ember_vec_push(struct ember_vec *v, const void *items, size_t n);
/* Makes room for n more items without adding them. Returns 0, -E2BIG or -ENOMEM. */
int ember_vec_reserve(struct ember_vec *v, size_t n);

/* Typed access to the items. */
#define EMBER_VEC_AT(vec, type, i) (&((type *)(vec).items)[i])

#endif
