/* SPDX-License-Identifier: Apache-2.0 */
/* Small string helpers: bounded copies, suffixes, hex (numbers: shared/parse.h). */
#ifndef EMBER_SHARED_STR_H
#define EMBER_SHARED_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Copies src into dst (size bytes), always NUL-terminated; returns -ENAMETOOLONG if cut. */
int ember_strlcpy(char *dst, const char *src, size_t size);
bool ember_str_ends_with(const char *s, const char *suffix);
/* True if s is non-empty and only lowercase hex digits. */
bool ember_is_lower_hex(const char *s, size_t len);

#endif
