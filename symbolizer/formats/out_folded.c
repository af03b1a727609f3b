// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/out_folded.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "shared/strtab.h"
#include "shared/vec.h"
#include "symbolizer/formats/utf8.h"

struct line_buf {
	char *s;
	size_t len, cap;
};

static int buf_append(struct line_buf *b, const char *s, size_t n)
{
	int err = EMBER_ENSURE(b->s, b->cap, b->len + n + 1, EMBER_STRTAB_MAX_BYTES);

	if (err)
		return err;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

/* A name as UTF-8: each byte that starts no sequence as U+FFFD (utf8.h). */
static int buf_append_name(struct line_buf *b, const char *s, size_t n)
{
	char *clean;
	int err;

	if (ember_utf8_valid(s, n))
		return buf_append(b, s, n);
	clean = ember_utf8_sanitize(s, n);
	if (!clean)
		return -ENOMEM;
	err = buf_append(b, clean, strlen(clean));
	free(clean);
	return err;
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
		err = buf_append_name(b, name, n);
	if (err)
		return err;
	for (size_t i = start + 1; i < b->len; i++)
		if (b->s[i] == ';')
			b->s[i] = ':';
		else if ((unsigned char)b->s[i] < 0x20)
			b->s[i] = '?';
	return 0;
}

/* Each distinct line once, with the sum of its counts. */
struct folded {
	struct ember_strset lines;
	struct ember_vec counts; /* uint64_t, by line id */
};

static int folded_add(struct folded *f, const char *line, size_t len, uint64_t count)
{
	uint32_t id;
	int err = ember_strset_intern(&f->lines, line, len, &id);

	if (err)
		return err;
	if (id < f->counts.len)
		*EMBER_VEC_AT(f->counts, uint64_t, id) += count;
	else if (!ember_vec_push(&f->counts, &count, 1))
		return -ENOMEM;
	return 0;
}

static int cmp_line(const void *a, const void *b, void *ctx)
{
	const struct folded *f = ctx;

	return strcmp(ember_strset_str(&f->lines, *(const uint32_t *)a),
	              ember_strset_str(&f->lines, *(const uint32_t *)b));
}

int ember_write_folded(const struct ember_profile *p, FILE *out)
{
	struct folded f;
	struct line_buf b = {0};
	uint32_t *order = NULL;
	size_t n;
	int err;

	ember_vec_init(&f.counts, sizeof(uint64_t));
	err = ember_strset_init(&f.lines, EMBER_STRTAB_MAX_BYTES);
	for (size_t i = 0; !err && i < p->samples.len; i++) {
		const struct ember_sample *s = ember_profile_sample(p, (uint32_t)i);
		const char *comm = ember_profile_str(p, s->key.comm);

		b.len = 0;
		err = buf_append_name(&b, *comm ? comm : "[unknown]",
		                      strlen(*comm ? comm : "[unknown]"));
		for (size_t j = 0; !err && j < b.len; j++)
			if (b.s[j] == ';' || (unsigned char)b.s[j] < 0x20)
				b.s[j] = '_';
		if (!ember_sample_value(p, s, p->view))
			continue;
		if (!err)
			err = ember_profile_walk_stack(p, s->key.stack, append_frame, &b);
		if (!err)
			err = folded_add(&f, b.s, b.len, ember_sample_value(p, s, p->view));
	}
	n = f.counts.len;
	if (!err && n) {
		order = malloc(n * sizeof(*order));
		if (!order)
			err = -ENOMEM;
	}
	if (!err && n) {
		for (size_t i = 0; i < n; i++)
			order[i] = (uint32_t)i;
		qsort_r(order, n, sizeof(*order), cmp_line, &f);
		/* Time is summed in nanoseconds and written in microseconds. */
		for (size_t i = 0; i < n && !err; i++) {
			uint64_t v = *EMBER_VEC_AT(f.counts, uint64_t, order[i]);

			if (fprintf(out, "%s %" PRIu64 "\n", ember_strset_str(&f.lines, order[i]),
			            p->view == EMBER_VIEW_CPU ? v : (v + 500) / 1000) < 0)
				err = -EIO;
		}
	}
	ember_strset_free(&f.lines);
	ember_vec_free(&f.counts);
	free(order);
	free(b.s);
	return err;
}
