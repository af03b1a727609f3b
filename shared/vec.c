// SPDX-License-Identifier: Apache-2.0
#include "shared/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_CAP 4

int ember_ensure_mem(void **data, size_t *cap, size_t item_size, size_t need, size_t max)
{
	size_t new_cap;
	void *grown;

	if (need <= *cap)
		return 0;
	/* Half of the address space at most, so that cap * 2 and cap * item_size never wrap. */
	if (max > SIZE_MAX / 2 / item_size)
		max = SIZE_MAX / 2 / item_size;
	if (need > max)
		return -E2BIG;
	new_cap = *cap ? *cap : FIRST_CAP;
	while (new_cap < need)
		new_cap *= 2;
	if (new_cap > max)
		new_cap = max;
	grown = realloc(*data, new_cap * item_size);
	if (!grown)
		return -ENOMEM;
	*data = grown;
	*cap = new_cap;
	return 0;
}

void ember_vec_init_max(struct ember_vec *v, size_t item_size, size_t max)
{
	memset(v, 0, sizeof(*v));
	v->item_size = item_size;
	v->max = max;
}

void ember_vec_free(struct ember_vec *v)
{
	free(v->items);
	ember_vec_init_max(v, v->item_size, v->max);
}

int ember_vec_reserve(struct ember_vec *v, size_t n)
{
	if (n > SIZE_MAX - v->len)
		return -E2BIG;
	return ember_ensure_mem(&v->items, &v->cap, v->item_size, v->len + n, v->max);
}

void *ember_vec_push(struct ember_vec *v, const void *items, size_t n)
{
	void *dst;

	if (ember_vec_reserve(v, n))
		return NULL;
	dst = (char *)v->items + v->len * v->item_size;
	if (items)
		memcpy(dst, items, n * v->item_size);
	else
		memset(dst, 0, n * v->item_size);
	v->len += n;
	return dst;
}
