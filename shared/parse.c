// SPDX-License-Identifier: Apache-2.0
#include "shared/parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ember_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int ember_parse_duration_ms(const char *s, uint64_t *out_ms)
{
	static const struct {
		const char *suffix;
		uint64_t ms;
	} units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"", 1000}};
	char num[32];
	size_t digits = strspn(s, "0123456789");
	uint64_t v;

	if (!digits || digits >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, digits);
	num[digits] = '\0';
	if (ember_parse_u64(num, 0, UINT32_MAX, &v))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(s + digits, units[i].suffix)) {
			*out_ms = v * units[i].ms;
			return 0;
		}
	}
	return -EINVAL;
}

int ember_parse_size(const char *s, uint64_t *out)
{
	char num[32];
	size_t len = strlen(s);
	uint64_t mult = 1;

	if (!len || len >= sizeof(num))
		return -EINVAL;
	switch (s[len - 1]) {
	case 'k':
	case 'K':
		mult = 1ull << 10;
		break;
	case 'm':
	case 'M':
		mult = 1ull << 20;
		break;
	case 'g':
	case 'G':
		mult = 1ull << 30;
		break;
	}
	memcpy(num, s, len + 1);
	if (mult != 1)
		num[len - 1] = '\0';
	if (ember_parse_u64(num, 1, UINT64_MAX / mult, out))
		return -EINVAL;
	*out *= mult;
	return 0;
}
