/* SPDX-License-Identifier: Apache-2.0 */
/*
 * V8's source position tables and source positions, as bytes copied out of
 * a process (hostile: every varint is bounded, a table that runs past its
 * bytes ends there), and the lines of a script's source.
 *
 * A table is a list of (code offset, source position) entries, each two
 * zig-zag varints of the change from the entry before; the code offset's
 * sign says whether the entry starts a statement. A source position packs
 * the script offset (plus one) in bits 1 to 30 and the inlining id (plus
 * one) in bits 31 to 46; bit 0 set marks an external (file, line) one,
 * which JavaScript never has.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_V8_POSITIONS_H
#define EMBER_SYMBOLIZER_INTERP_V8_POSITIONS_H

#include <stddef.h>
#include <stdint.h>

#define EMBER_V8_MAX_TABLE (1u << 20) /* bytes of a position table read */

/* A source position: the offset in its script, and which inlined function (-1: none). */
struct ember_v8_position {
	int32_t script_offset; /* -1: none */
	int32_t inlining_id;   /* -1: the code's own function */
};

/* Decodes a packed source position. */
struct ember_v8_position ember_v8_position_decode(uint64_t raw);

/*
 * The source position of code offset `offset` in the table (len bytes): the last entry's at
 * or before it. 0, or -ENOENT (no entry there), -EINVAL (the table does not decode).
 */
int ember_v8_position_at(const uint8_t *table, size_t len, uint32_t offset, uint64_t *raw);

/* The line (1-based) of offset in a script whose line ends (the offsets of its line
 * terminators, ascending) are ends[n]: offsets past the last end are on the line after it. */
int32_t ember_v8_line_of(const int32_t *ends, size_t n, int32_t offset);

/*
 * Appends to ends (at most max in all, *n used) the offsets of the line terminators among
 * the len UTF-16 units at units, which start at offset base of the script: LF, CR (unless
 * an LF follows: *cr_pending carries a CR at the end of one chunk to the next), U+2028 and
 * U+2029, as V8 counts lines. Returns 0, or -E2BIG once max ends are found.
 */
int ember_v8_line_ends_add(const uint16_t *units, size_t len, int32_t base, int32_t *ends,
                           size_t *n, size_t max, int *cr_pending);

#endif
