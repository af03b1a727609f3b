/* SPDX-License-Identifier: Apache-2.0 */
/* Small string helpers: strict number parsing and bounded copies. */
#ifndef EMBER_SHARED_STR_H
#define EMBER_SHARED_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses a whole decimal string into [min, max]. Returns 0 or -EINVAL/-ERANGE. */
int ember_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Parses a duration: "30", "30s", "5m", "1h", "250ms". Returns 0 or -EINVAL. */
int ember_parse_duration_ms(const char *s, uint64_t *out_ms);
/* Parses a byte size: "1048576", "512k", "8M", "1G". Returns 0 or -EINVAL. */
int ember_parse_size(const char *s, uint64_t *out);
/* Copies src into dst (size bytes), always NUL-terminated; returns -ENAMETOOLONG if cut. */
int ember_strlcpy(char *dst, const char *src, size_t size);
bool ember_str_ends_with(const char *s, const char *suffix);
/* True if s is non-empty and only lowercase hex digits. */
bool ember_is_lower_hex(const char *s, size_t len);

#endif
