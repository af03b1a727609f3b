/* SPDX-License-Identifier: Apache-2.0 */
/*
 * UTF-8 for the writers. A profile's names come from the processes it sampled (a comm, a
 * path, a symbol: any bytes), but pprof's and OTLP's strings are proto3 strings, which must
 * be UTF-8 (a backend refuses a whole OTLP request for one that is not), and folded text and
 * HTML are read as UTF-8. Each byte that starts no well-formed sequence becomes U+FFFD.
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_UTF8_H
#define EMBER_SYMBOLIZER_FORMATS_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Length of the well-formed UTF-8 sequence at s, of the n bytes left (RFC 3629: no overlong
 * form, no surrogate, nothing above U+10FFFF), or 0 when s starts none.
 */
size_t ember_utf8_seq(const unsigned char *s, size_t n);

/* Whether the n bytes at s are well-formed UTF-8. */
bool ember_utf8_valid(const char *s, size_t n);

/*
 * s (n bytes) with U+FFFD for each byte that starts no well-formed sequence, in a malloc'd,
 * NUL-terminated string; NULL when out of memory.
 */
char *ember_utf8_sanitize(const char *s, size_t n);

#endif
