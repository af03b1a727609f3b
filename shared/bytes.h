/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bounded little-endian reading of untrusted bytes (ELF sections, .eh_frame,
 * .gopclntab, the interpreters' objects in a process's memory): every read is checked against the
 * end of its region. A cursor (struct ember_bytes) remembers the first read past the end: later
 * reads return 0, and the caller checks `bad` once at the end of a record.
 */
#ifndef EMBER_SHARED_BYTES_H
#define EMBER_SHARED_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The n (at most 8) bytes at p as a little-endian number; the caller has checked the bounds. */
static inline uint64_t ember_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * The 8 (4) bytes at off of buf, little-endian: a field of a struct read whole from a
 * profiled process (the interpreters' readers). The caller has checked the bounds.
 */
static inline uint64_t ember_u64_at(const uint8_t *buf, size_t off)
{
	return ember_le(buf + off, 8);
}

static inline uint32_t ember_u32_at(const uint8_t *buf, size_t off)
{
	return (uint32_t)ember_le(buf + off, 4);
}

/* The n bytes at off of a region of len bytes; false when they are not all inside. */
static inline bool ember_le_at(const uint8_t *base, size_t len, uint64_t off, unsigned int n,
                               uint64_t *v)
{
	if (off > len || n > len - off)
		return false;
	*v = ember_le(base + off, n);
	return true;
}

/*
 * The same, 0 when they are not all inside: a field of an object read whole into a window
 * of len bytes, where a field past the window reads as nothing there (the PHP and Perl
 * readers).
 */
static inline uint64_t ember_le_in(const uint8_t *base, size_t len, uint64_t off, unsigned int n)
{
	uint64_t v;

	return ember_le_at(base, len, off, n, &v) ? v : 0;
}

struct ember_bytes {
	const uint8_t *p, *end;
	bool bad; /* a read went past end */
};

/* The next n (at most 8) bytes, little-endian; 0 once past the end. */
static inline uint64_t ember_bytes_le(struct ember_bytes *r, size_t n)
{
	uint64_t v;

	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return 0;
	}
	v = ember_le(r->p, (unsigned int)n);
	r->p += n;
	return v;
}

/* An unsigned LEB128 number; bad when longer than any 64-bit value. */
static inline uint64_t ember_bytes_uleb(struct ember_bytes *r)
{
	uint64_t v = 0;

	for (unsigned int shift = 0; !r->bad; shift += 7) {
		uint8_t byte = (uint8_t)ember_bytes_le(r, 1);

		if (shift < 64)
			v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return v;
		if (shift > 70)
			r->bad = true;
	}
	return 0;
}

/* A signed LEB128 number; bad when longer than any 64-bit value. */
static inline int64_t ember_bytes_sleb(struct ember_bytes *r)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t byte;

	do {
		byte = (uint8_t)ember_bytes_le(r, 1);
		if (shift < 64)
			v |= (uint64_t)(byte & 0x7f) << shift;
		shift += 7;
		if (shift > 77)
			r->bad = true;
	} while ((byte & 0x80) && !r->bad);
	if (shift < 64 && (byte & 0x40))
		v |= ~0ull << shift;
	return r->bad ? 0 : (int64_t)v;
}

#endif
