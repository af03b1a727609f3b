// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/in_folded.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct folded_reader {
	struct ember_profile *p;
	uint32_t *locs; /* EMBER_FOLDED_MAX_DEPTH, leaf first */
	uint64_t bad_lines;
};

/* The count after the last space; 0 when there is none or it is malformed. */
static uint64_t parse_count(const char *s, size_t len)
{
	uint64_t v = 0;

	if (!len || len > 20)
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > EMBER_FOLDED_MAX_COUNT)
			return 0;
	}
	return v;
}

static bool strip_suffix(const char *s, size_t *len, const char *suffix)
{
	size_t n = strlen(suffix);

	if (*len > n && !memcmp(s + *len - n, suffix, n)) {
		*len -= n;
		return true;
	}
	return false;
}

/* A frame's name is its function; one location per (function, kind) stands for it. */
static int frame_location(struct folded_reader *r, const char *s, size_t len, uint32_t *out)
{
	enum ember_frame_kind kind = EMBER_FRAME_UNKNOWN;
	struct ember_function f = {0};
	struct ember_line line = {0};
	int err;

	if (strip_suffix(s, &len, "_[k]"))
		kind = EMBER_FRAME_KERNEL;
	else if (strip_suffix(s, &len, "_[j]") || strip_suffix(s, &len, "_[i]"))
		kind = EMBER_FRAME_NATIVE;
	if (!len) {
		s = "[unknown]";
		len = strlen(s);
	}
	err = ember_profile_intern(r->p, s, len, &f.name);
	if (err)
		return err;
	f.system_name = f.name;
	err = ember_profile_add_function(r->p, &f, &line.function);
	if (err)
		return err;
	if (!ember_profile_find_location(r->p, EMBER_NONE, kind, line.function, out))
		return 0;
	return ember_profile_add_location(r->p, EMBER_NONE, kind, line.function, &line, 1, out);
}

/* Returns 0, 1 for a line that is skipped as malformed, or a negative errno. */
static int read_line(struct folded_reader *r, const char *s, size_t len)
{
	struct ember_sample_key key = {.cpu = EMBER_NONE};
	const char *space, *end, *field;
	uint32_t depth = 0;
	uint64_t count;
	int err;

	while (len && (s[len - 1] == '\r' || s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (!len || s[0] == '#')
		return 0;
	if (len > EMBER_FOLDED_MAX_LINE || memchr(s, '\0', len))
		return 1;
	space = memrchr(s, ' ', len);
	if (!space || space == s)
		return 1;
	count = parse_count(space + 1, (size_t)(s + len - space - 1));
	if (!count)
		return 1;
	if (r->p->total_count > UINT64_MAX / 4 - count)
		return 1;
	end = space;
	/* Fields from the last (the leaf) back to the second; the first is the process. */
	while (1) {
		const char *semi = memrchr(s, ';', (size_t)(end - s));

		if (!semi)
			break;
		field = semi + 1;
		if (depth == EMBER_FOLDED_MAX_DEPTH)
			return 1;
		err = frame_location(r, field, (size_t)(end - field), &r->locs[depth]);
		if (err)
			return err == -EINVAL ? 1 : err;
		depth++;
		end = semi;
	}
	if (end == s)
		err = ember_profile_intern_cstr(r->p, "[unknown]", &key.comm);
	else
		err = ember_profile_intern(r->p, s, (size_t)(end - s), &key.comm);
	if (!err)
		err = ember_profile_add_stack(r->p, r->locs, depth, &key.stack);
	if (!err)
		err = ember_profile_add_sample(r->p, &key, count, 0);
	return err == -EINVAL ? 1 : err;
}

int ember_read_folded(struct ember_profile *p, const char *buf, size_t len)
{
	struct folded_reader r = {.p = p};
	size_t pos = 0;
	int err = 0;

	r.locs = malloc(EMBER_FOLDED_MAX_DEPTH * sizeof(*r.locs));
	if (!r.locs)
		return -ENOMEM;
	while (pos < len && err >= 0) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;

		err = read_line(&r, buf + pos, n);
		if (err > 0)
			r.bad_lines++;
		pos += n + 1;
	}
	free(r.locs);
	if (err < 0)
		return err;
	if (r.bad_lines)
		return ember_profile_stat_add(p, "report.bad_lines", r.bad_lines);
	return 0;
}
