/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HotSpot's compressed streams, as a method's bytes hold them: the line
 * number table that follows a method's bytecodes (pairs of bytecode index
 * and line, delta-coded: one byte (bci delta << 3 | line delta), or 0xFF
 * and two signed UNSIGNED5 numbers; 0 ends it), and the UNSIGNED5 numbers
 * compiled code's debug information is written in. From JDK 20 on,
 * UNSIGNED5 leaves the byte 0 out (x = 1), so that a zero byte can end a
 * stream.
 *
 * The bytes were read from a profiled process and are hostile: every read
 * is bounded by the buffer, a number longer than five bytes or an excluded
 * byte is an error, a table has at most EMBER_JVM_MAX_LINES pairs.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_JVM_LINES_H
#define EMBER_SYMBOLIZER_INTERP_JVM_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EMBER_JVM_MAX_LINES 65536u /* pairs of one table: a method has at most 65535 bytecodes */

/* A stream of compressed numbers. */
struct ember_jvm_stream {
	const uint8_t *p, *end;
	unsigned int x; /* bytes left out of UNSIGNED5: 0 up to JDK 19, 1 from JDK 20 */
	bool bad;       /* a read went past the end or met an excluded byte */
};

/* The next UNSIGNED5 number (0 once bad). */
uint32_t ember_jvm_read_uint(struct ember_jvm_stream *s);
/* The next signed number (UNSIGNED5 of its zigzag form). */
int32_t ember_jvm_read_sint(struct ember_jvm_stream *s);

/*
 * The line of bytecode index bci in the line table at table (at most len bytes; it ends
 * at its 0 byte), as HotSpot finds it: the pair with exactly that bci, else the pair with
 * the greatest bci below it. Returns 0 and *line; -ENOENT when no pair comes at or before
 * bci; -EBADMSG for a malformed table (no end within len, a bad number, too many pairs).
 */
int ember_jvm_line_of(const uint8_t *table, size_t len, unsigned int x, uint32_t bci,
                      int32_t *line);

/* Where the table ends: the bytes it takes, its 0 byte included (0: malformed). */
size_t ember_jvm_lines_len(const uint8_t *table, size_t len, unsigned int x);

#endif
