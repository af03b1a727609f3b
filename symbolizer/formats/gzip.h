/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gzip through zlib, the one place ember compresses and decompresses: pprof
 * files, OTLP request bodies, and what comes back (pprof files read by
 * `ember report`, gRPC answers of an export endpoint).
 *
 * Compressed input is hostile (a file from anywhere, a network peer): it is
 * inflated into at most max bytes, so a small bomb cannot take memory.
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_GZIP_H
#define EMBER_SYMBOLIZER_FORMATS_GZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* True when buf starts with the gzip magic. */
bool ember_is_gzip(const uint8_t *buf, size_t len);

/* Compresses len bytes (at most 4 GiB) into a malloc'd buffer. Returns 0 or -errno. */
int ember_gzip(const uint8_t *data, size_t len, uint8_t **out, size_t *out_len);
/* Compresses len bytes into out. Returns 0, -EIO when out refuses them, or -errno. */
int ember_gzip_write(const uint8_t *data, size_t len, FILE *out);

/*
 * Decompresses gzip (or zlib) data into a malloc'd buffer of at most max
 * bytes: -EFBIG when the output would be larger, -EINVAL when it is not
 * valid or ends early.
 */
int ember_gunzip(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *out_len);

#endif
