// SPDX-License-Identifier: Apache-2.0
#include "shared/formats.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "shared/str.h"

static const struct {
	const char *name;
	const char *suffix;
} formats[EMBER_FORMAT_MAX] = {
    [EMBER_FORMAT_FOLDED] = {"folded", ".folded"},
    [EMBER_FORMAT_PPROF] = {"pprof", ".pb.gz"},
    [EMBER_FORMAT_HTML] = {"html", ".html"},
    [EMBER_FORMAT_OTLP] = {"otlp", ".otlp"},
};

int ember_format_parse(const char *name, enum ember_format *out)
{
	for (int f = 0; f < EMBER_FORMAT_MAX; f++)
		if (!strcmp(name, formats[f].name)) {
			*out = (enum ember_format)f;
			return 0;
		}
	return -EINVAL;
}

const char *ember_format_name(enum ember_format f)
{
	return (unsigned)f < EMBER_FORMAT_MAX ? formats[f].name : "?";
}

const char *ember_format_suffix(enum ember_format f)
{
	return (unsigned)f < EMBER_FORMAT_MAX ? formats[f].suffix : "";
}

int ember_format_from_path(const char *path, enum ember_format *out)
{
	for (int f = 0; f < EMBER_FORMAT_MAX; f++)
		if (ember_str_ends_with(path, formats[f].suffix) &&
		    strlen(path) > strlen(formats[f].suffix)) {
			*out = (enum ember_format)f;
			return 0;
		}
	return -EINVAL;
}

int ember_link_prefix(const char *arg, char *out, size_t size)
{
	size_t n = 0;

	for (const char *c = arg; *c; c++) {
		if (c - arg == 32 && *c == ':' && c[1])
			continue; /* the span follows */
		if (!isxdigit((unsigned char)*c) || n + 1 >= size || n >= EMBER_LINK_HEX)
			return -EINVAL;
		out[n++] = (char)tolower((unsigned char)*c);
	}
	if (n != 32 && n != EMBER_LINK_HEX)
		return -EINVAL;
	out[n] = '\0';
	return 0;
}
