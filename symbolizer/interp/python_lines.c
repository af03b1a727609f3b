// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/python_lines.h"

#include <errno.h>

/* Lines stay in int32 range whatever a hostile table adds up. */
static int add_line(int64_t *line, int64_t delta)
{
	*line += delta;
	return *line < INT32_MIN || *line > INT32_MAX ? -EBADMSG : 0;
}

/* 3.6-3.9: (address delta, signed line delta) byte pairs; a line belongs to the
 * instructions from its address up to the next pair's. */
static int lnotab_line(const uint8_t *t, size_t len, int64_t line, int64_t offset, int32_t *out)
{
	int64_t addr = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > offset)
			break;
		if (add_line(&line, (int8_t)t[i + 1]))
			return -EBADMSG;
	}
	*out = (int32_t)line;
	return 0;
}

/* 3.10: (byte delta, signed line delta) pairs, each a range; -128: no line. */
static int linetable_line(const uint8_t *t, size_t len, int64_t line, int64_t offset, int32_t *out)
{
	int64_t start, end = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		int8_t ldelta = (int8_t)t[i + 1];

		start = end;
		end += t[i];
		if (ldelta != -128 && add_line(&line, ldelta))
			return -EBADMSG;
		if (offset >= start && offset < end) {
			if (ldelta == -128)
				return -ENOENT;
			*out = (int32_t)line;
			return 0;
		}
	}
	return -ENOENT;
}

/* 3.11+ varints: 6 bits a byte, low bits first, bit 6 says more follow. */
static int varint(const uint8_t *t, size_t len, size_t *i, uint64_t *out)
{
	unsigned int shift = 0;
	uint64_t v = 0;

	for (;;) {
		uint8_t b;

		if (*i >= len || shift > 36)
			return -EBADMSG;
		b = t[(*i)++];
		if (b & 0x80) /* the first byte of the next entry */
			return -EBADMSG;
		v |= (uint64_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	*out = v;
	return 0;
}

static int svarint(const uint8_t *t, size_t len, size_t *i, int64_t *out)
{
	uint64_t u;
	int err = varint(t, len, i, &u);

	if (!err)
		*out = u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return err;
}

enum {
	LOC_ONE_LINE0 = 10, /* 10, 11, 12: the line moves by 0, 1, 2; two column bytes */
	LOC_NO_COLUMNS = 13,
	LOC_LONG = 14,
	LOC_NONE = 15,
};

/* 3.11+: entries of 1-8 code units, each a header byte (bit 7, 4-bit kind,
 * length - 1) and the kind's bytes. */
static int locations_line(const uint8_t *t, size_t len, int64_t line, int64_t offset, int32_t *out)
{
	int64_t addr = 0;
	size_t i = 0;

	while (i < len) {
		uint8_t h = t[i++];
		unsigned int kind = (h >> 3) & 15;
		int64_t delta = 0, end = addr + 2 * ((h & 7) + 1);
		uint64_t skip;

		if (!(h & 0x80))
			return -EBADMSG;
		if (kind == LOC_NO_COLUMNS || kind == LOC_LONG) {
			if (svarint(t, len, &i, &delta))
				return -EBADMSG;
		} else if (kind >= LOC_ONE_LINE0 && kind < LOC_NO_COLUMNS) {
			delta = kind - LOC_ONE_LINE0;
		}
		if (add_line(&line, delta))
			return -EBADMSG;
		/* The bytes after the line: 3 varints (long), 2 bytes (one line), 1 (short). */
		if (kind == LOC_LONG) {
			for (int k = 0; k < 3; k++)
				if (varint(t, len, &i, &skip))
					return -EBADMSG;
		} else if (kind >= LOC_ONE_LINE0 && kind < LOC_NO_COLUMNS) {
			i += 2;
		} else if (kind < LOC_ONE_LINE0) {
			i += 1;
		}
		if (i > len)
			return -EBADMSG;
		if (offset >= addr && offset < end) {
			if (kind == LOC_NONE)
				return -ENOENT;
			*out = (int32_t)line;
			return 0;
		}
		addr = end;
	}
	return -ENOENT;
}

int ember_py_line(unsigned int kind, const uint8_t *table, size_t len, int32_t firstlineno,
                  int64_t offset, int32_t *line)
{
	if (offset < 0) {
		*line = firstlineno;
		return 0;
	}
	switch (kind) {
	case EMBER_PY_LINES_LNOTAB:
		return lnotab_line(table, len, firstlineno, offset, line);
	case EMBER_PY_LINES_LINETABLE:
		return linetable_line(table, len, firstlineno, offset, line);
	case EMBER_PY_LINES_LOCATIONS:
		return locations_line(table, len, firstlineno, offset, line);
	default:
		return -EINVAL;
	}
}
