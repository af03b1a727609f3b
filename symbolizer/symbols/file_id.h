/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Content identity of a mapped file, as OpenTelemetry names it: the
 * "htlhash" is SHA-256 over the first 4096 bytes, the last 4096 bytes and
 * the file length as a big-endian u64, of which the first 16 bytes are kept
 * (32 lowercase hex digits). It identifies a file across hosts, containers
 * and processes without reading the whole file.
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_FILE_ID_H
#define EMBER_SYMBOLIZER_SYMBOLS_FILE_ID_H

#include <stddef.h>
#include <stdint.h>

#define EMBER_FILE_HASH_BYTES 16
#define EMBER_FILE_HASH_HEX   (2 * EMBER_FILE_HASH_BYTES + 1)

struct ember_file_id {
	uint8_t hash[EMBER_FILE_HASH_BYTES];
	char hash_hex[EMBER_FILE_HASH_HEX];
	uint64_t size;
};

/* Computes the identity of the regular file open at fd (read with pread). */
int ember_file_id_fd(int fd, struct ember_file_id *out);
/* Same for a file held in memory. */
int ember_file_id_mem(const void *data, size_t len, struct ember_file_id *out);

/* Writes len bytes as lowercase hex into hex (2*len+1 bytes). */
void ember_hex(const uint8_t *bytes, size_t len, char *hex);

#endif
