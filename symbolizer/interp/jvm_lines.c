// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/jvm_lines.h"

#include <errno.h>

#define LOW   192u /* bytes below it end a number; each other byte adds 6 bits more */
#define BYTES 5    /* at most, for 32 bits */

static uint8_t next_byte(struct ember_jvm_stream *s)
{
	if (s->bad || s->p >= s->end) {
		s->bad = true;
		return 0;
	}
	return *s->p++;
}

uint32_t ember_jvm_read_uint(struct ember_jvm_stream *s)
{
	uint32_t sum = 0;

	for (int i = 0; i < BYTES; i++) {
		uint8_t b = next_byte(s);

		if (s->bad || b < s->x) {
			s->bad = true;
			return 0;
		}
		sum += (uint32_t)(b - s->x) << (6 * i);
		if (b < LOW)
			break;
	}
	return sum;
}

int32_t ember_jvm_read_sint(struct ember_jvm_stream *s)
{
	uint32_t v = ember_jvm_read_uint(s);

	return (int32_t)(v >> 1) ^ -(int32_t)(v & 1);
}

/* The next pair into *bci and *line: 1, 0 at the table's end, -EBADMSG. */
static int next_pair(struct ember_jvm_stream *s, uint32_t *bci, int32_t *line)
{
	uint8_t b = next_byte(s);

	if (s->bad)
		return -EBADMSG;
	if (!b)
		return 0;
	/* Deltas wrap as HotSpot's ints would; hostile ones must not overflow here. */
	if (b == 0xff) {
		*bci += (uint32_t)ember_jvm_read_sint(s);
		*line = (int32_t)((uint32_t)*line + (uint32_t)ember_jvm_read_sint(s));
	} else {
		*bci += b >> 3;
		*line = (int32_t)((uint32_t)*line + (b & 7u));
	}
	return s->bad ? -EBADMSG : 1;
}

int ember_jvm_line_of(const uint8_t *table, size_t len, unsigned int x, uint32_t bci, int32_t *line)
{
	struct ember_jvm_stream s = {table, table + len, x, false};
	uint32_t at = 0, best_bci = 0;
	int32_t l = 0, best = -1;
	int more;

	for (uint32_t n = 0; (more = next_pair(&s, &at, &l)) > 0; n++) {
		if (n >= EMBER_JVM_MAX_LINES)
			return -EBADMSG;
		if (at == bci) {
			*line = l;
			return 0;
		}
		if (at < bci && at >= best_bci) {
			best_bci = at;
			best = l;
		}
	}
	if (more < 0)
		return more;
	if (best < 0)
		return -ENOENT;
	*line = best;
	return 0;
}

size_t ember_jvm_lines_len(const uint8_t *table, size_t len, unsigned int x)
{
	struct ember_jvm_stream s = {table, table + len, x, false};
	uint32_t at = 0;
	int32_t l = 0;
	int more;

	for (uint32_t n = 0; (more = next_pair(&s, &at, &l)) > 0; n++)
		if (n >= EMBER_JVM_MAX_LINES)
			return 0;
	return more ? 0 : (size_t)(s.p - table);
}
