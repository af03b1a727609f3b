// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/utf8.h"

#include <stdlib.h>
#include <string.h>

size_t ember_utf8_seq(const unsigned char *s, size_t n)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		unsigned char lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;

		return n >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		unsigned char lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;

		return n >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
		               (s[3] & 0xc0) == 0x80
		           ? 4
		           : 0;
	}
	return 0;
}

bool ember_utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0, k; i < n; i += k)
		if (!(k = ember_utf8_seq(u + i, n - i)))
			return false;
	return true;
}

char *ember_utf8_sanitize(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	char *out = malloc(3 * n + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0, k; i < n; i += k) {
		k = ember_utf8_seq(u + i, n - i);
		if (k) {
			memcpy(o, s + i, k);
			o += k;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			k = 1;
		}
	}
	*o = '\0';
	return out;
}
