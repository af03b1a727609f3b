// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/v8_positions.h"

#include <errno.h>
#include <stdbool.h>

#define MAX_DELTA (1ll << 48) /* a packed position's 47 bits */

struct ember_v8_position ember_v8_position_decode(uint64_t raw)
{
	if (raw & 1) /* external: never JavaScript's */
		return (struct ember_v8_position){-1, -1};
	return (struct ember_v8_position){(int32_t)(raw >> 1 & 0x3fffffff) - 1,
	                                  (int32_t)(raw >> 31 & 0xffff) - 1};
}

/* One zig-zag varint at *at (at most 10 bytes): true, or false past the table's end. */
static bool varint(const uint8_t *t, size_t len, size_t *at, int64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		if (*at >= len)
			return false;
		b = t[(*at)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
			return true;
		}
	}
	return false;
}

int ember_v8_position_at(const uint8_t *table, size_t len, uint32_t offset, uint64_t *raw)
{
	/* Both start before the function's first instruction (V8's function entry offset). */
	int64_t code = -1, pos = 0, d;
	bool found = false;
	size_t at = 0;

	while (at < len) {
		/* Deltas past what a table holds (a code offset or a packed position) are garbage;
		 * bounding them keeps the sums from overflowing. */
		if (!varint(table, len, &at, &d) || d < -MAX_DELTA || d > MAX_DELTA)
			return -EINVAL;
		/* A negative delta is an entry that starts no statement: -delta - 1. */
		code += d >= 0 ? d : -d - 1;
		if (!varint(table, len, &at, &d) || d < -MAX_DELTA || d > MAX_DELTA)
			return -EINVAL;
		pos += d;
		if (code > UINT32_MAX)
			return -EINVAL;
		if (code > (int64_t)offset)
			break;
		*raw = (uint64_t)pos;
		found = true;
	}
	return found ? 0 : -ENOENT;
}

int32_t ember_v8_line_of(const int32_t *ends, size_t n, int32_t offset)
{
	size_t lo = 0, hi = n;

	/* The first end at or after offset: its index is the line, 0-based. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ends[mid] < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int32_t)lo + 1;
}

int ember_v8_line_ends_add(const uint16_t *units, size_t len, int32_t base, int32_t *ends,
                           size_t *n, size_t max, int *cr_pending)
{
	for (size_t i = 0; i < len; i++) {
		uint16_t c = units[i];
		bool end;

		if (*cr_pending) {
			*cr_pending = 0;
			/* CR LF ends one line, at the LF. */
			if (c != '\n') {
				if (*n >= max)
					return -E2BIG;
				ends[(*n)++] = base + (int32_t)i - 1;
			}
		}
		if (c == '\r') {
			*cr_pending = 1;
			continue;
		}
		end = c == '\n' || c == 0x2028 || c == 0x2029;
		if (end) {
			if (*n >= max)
				return -E2BIG;
			ends[(*n)++] = base + (int32_t)i;
		}
	}
	return 0;
}
