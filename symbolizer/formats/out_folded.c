// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/out_folded.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "shared/hash.h"

struct line_buf {
	char *s;
	size_t len, cap;
};

static int buf_append(struct line_buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		char *grown;

		while (cap < b->len + n + 1)
			cap *= 2;
		grown = realloc(b->s, cap);
		if (!grown)
			return -ENOMEM;
		b->s = grown;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

/* Frame names may contain the separators of the format; replace them. */
static int append_frame(void *ctx, const char *name, enum ember_frame_kind kind)
{
	struct line_buf *b = ctx;
	size_t start = b->len, n = strlen(name);
	int err;

	(void)kind;
	err = buf_append(b, ";", 1);
	if (!err)
		err = buf_append(b, name, n);
	if (err)
		return err;
	for (size_t i = start + 1; i < b->len; i++)
		if (b->s[i] == ';')
			b->s[i] = ':';
		else if ((unsigned char)b->s[i] < 0x20)
			b->s[i] = '?';
	return 0;
}

struct folded {
	struct ember_hash_key key;
	struct ember_index index;
	char **lines;
	uint64_t *counts;
	size_t n, cap;
};

static bool line_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct folded *f = ctx;

	return strlen(f->lines[value]) == len && !memcmp(f->lines[value], key, len);
}

static int folded_add(struct folded *f, const char *line, size_t len, uint64_t count)
{
	uint64_t h = ember_hash(&f->key, line, len);
	uint32_t id;
	int r;

	if (!ember_index_find(&f->index, h, line, len, line_eq, f, &id)) {
		f->counts[id] += count;
		return 0;
	}
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 256;
		char **lines = realloc(f->lines, cap * sizeof(*lines));
		uint64_t *counts;

		if (!lines)
			return -ENOMEM;
		f->lines = lines;
		counts = realloc(f->counts, cap * sizeof(*counts));
		if (!counts)
			return -ENOMEM;
		f->counts = counts;
		f->cap = cap;
	}
	f->lines[f->n] = strndup(line, len);
	if (!f->lines[f->n])
		return -ENOMEM;
	f->counts[f->n] = count;
	r = ember_index_upsert(&f->index, h, line, len, line_eq, f, (uint32_t)f->n, &id);
	if (r < 0) {
		free(f->lines[f->n]);
		return r;
	}
	f->n++;
	return 0;
}

static int cmp_line(const void *a, const void *b, void *ctx)
{
	const struct folded *f = ctx;

	return strcmp(f->lines[*(const size_t *)a], f->lines[*(const size_t *)b]);
}

int ember_write_folded(const struct ember_profile *p, FILE *out)
{
	struct folded f = {0};
	struct line_buf b = {0};
	size_t *order = NULL;
	int err;

	ember_index_init(&f.index);
	err = ember_hash_key_init(&f.key);
	for (size_t i = 0; !err && i < p->samples.len; i++) {
		const struct ember_sample *s = ember_profile_sample(p, (uint32_t)i);
		const char *comm = ember_profile_str(p, s->key.comm);

		b.len = 0;
		err =
		    buf_append(&b, *comm ? comm : "[unknown]", strlen(*comm ? comm : "[unknown]"));
		for (size_t j = 0; !err && j < b.len; j++)
			if (b.s[j] == ';' || (unsigned char)b.s[j] < 0x20)
				b.s[j] = '_';
		if (!err)
			err = ember_profile_walk_stack(p, s->key.stack, append_frame, &b);
		if (!err)
			err = folded_add(&f, b.s, b.len, s->count);
	}
	if (!err && f.n) {
		order = malloc(f.n * sizeof(*order));
		if (!order)
			err = -ENOMEM;
	}
	if (!err && f.n) {
		for (size_t i = 0; i < f.n; i++)
			order[i] = i;
		qsort_r(order, f.n, sizeof(*order), cmp_line, &f);
		for (size_t i = 0; i < f.n && !err; i++)
			if (fprintf(out, "%s %" PRIu64 "\n", f.lines[order[i]],
			            f.counts[order[i]]) < 0)
				err = -EIO;
	}
	for (size_t i = 0; i < f.n; i++)
		free(f.lines[i]);
	free(f.lines);
	free(f.counts);
	free(order);
	free(b.s);
	ember_index_free(&f.index);
	return err;
}
