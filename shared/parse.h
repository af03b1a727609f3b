/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Strict parsing of numbers written by people: the front end's options, the
 * symbolizer's export settings and profiles read back. The collector reads no
 * such text (its configuration is a checked struct) and does not link this.
 */
#ifndef EMBER_SHARED_PARSE_H
#define EMBER_SHARED_PARSE_H

#include <stdint.h>

/* Parses a whole decimal string into [min, max]. Returns 0 or -EINVAL/-ERANGE. */
int ember_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Parses a duration: "30", "30s", "5m", "1h", "250ms". Returns 0 or -EINVAL. */
int ember_parse_duration_ms(const char *s, uint64_t *out_ms);
/* Parses a byte size: "1048576", "512k", "8M", "1G". Returns 0 or -EINVAL. */
int ember_parse_size(const char *s, uint64_t *out);

#endif
