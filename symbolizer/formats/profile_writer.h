/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The outputs a run writes: each a descriptor opened by the collector (the
 * symbolizer opens nothing) and a format. Every flush rewrites each output
 * completely, so a file always holds one whole profile.
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_PROFILE_WRITER_H
#define EMBER_SYMBOLIZER_FORMATS_PROFILE_WRITER_H

#include <stddef.h>

#include "symbolizer/profile/profile.h"

enum ember_format {
	EMBER_FORMAT_FOLDED = 0,
	EMBER_FORMAT_PPROF,
	EMBER_FORMAT_HTML,
	EMBER_FORMAT_OTLP,
	EMBER_FORMAT_MAX,
};

struct ember_output {
	int fd;
	enum ember_format format;
	char path[256]; /* for messages only */
};

/* "folded", "pprof", "html", "otlp" -> format. Returns 0 or -EINVAL. */
int ember_format_parse(const char *name, enum ember_format *out);
const char *ember_format_name(enum ember_format f);
/* The file-name suffix of a format (".folded", ".pb.gz", ".html", ".otlp"). */
const char *ember_format_suffix(enum ember_format f);
/* The format a file name implies (".folded", ".pb.gz", ".html", ".otlp"); -EINVAL if none. */
int ember_format_from_path(const char *path, enum ember_format *out);

/* Encodes p in the given format into a malloc'd buffer. */
int ember_format_encode(enum ember_format f, const struct ember_profile *p, char **buf,
                        size_t *len);
/* Replaces the content of o with p. Returns 0 or a negative errno. */
int ember_output_write(const struct ember_output *o, const struct ember_profile *p);

#endif
