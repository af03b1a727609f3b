/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The outputs a run writes: each a descriptor opened by the collector (the
 * symbolizer opens nothing) and a format. Every flush rewrites each output
 * completely, so a file always holds one whole profile.
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_PROFILE_WRITER_H
#define EMBER_SYMBOLIZER_FORMATS_PROFILE_WRITER_H

#include <stddef.h>

#include "shared/formats.h"
#include "symbolizer/profile/profile.h"

struct ember_output {
	int fd;
	enum ember_format format;
	char path[256]; /* for messages only */
};

/* Encodes p in the given format into a malloc'd buffer. */
int ember_format_encode(enum ember_format f, const struct ember_profile *p, char **buf,
                        size_t *len);
/* Replaces the content of o with p. Returns 0 or a negative errno. */
int ember_output_write(const struct ember_output *o, const struct ember_profile *p);

#endif
