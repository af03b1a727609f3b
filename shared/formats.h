/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profile formats and the file names that choose them: `ember record`
 * checks its -o names with them before it samples, and the symbolizer, which
 * writes the profiles (symbolizer/formats/profile_writer.h), reads and writes
 * by them. Names and suffixes only: no encoder here.
 */
#ifndef EMBER_SHARED_FORMATS_H
#define EMBER_SHARED_FORMATS_H

#include <stddef.h>

enum ember_format {
	EMBER_FORMAT_FOLDED = 0,
	EMBER_FORMAT_PPROF,
	EMBER_FORMAT_HTML,
	EMBER_FORMAT_OTLP,
	EMBER_FORMAT_MAX,
};

/* "folded", "pprof", "html", "otlp" -> format. Returns 0 or -EINVAL. */
int ember_format_parse(const char *name, enum ember_format *out);
const char *ember_format_name(enum ember_format f);
/* The file-name suffix of a format (".folded", ".pb.gz", ".html", ".otlp"). */
const char *ember_format_suffix(enum ember_format f);
/* The format a file name implies (a name before ".folded", ".pb.gz", ".html" or ".otlp");
 * -EINVAL if none. */
int ember_format_from_path(const char *path, enum ember_format *out);

/*
 * A sample's link to the span its thread ran, as profiles hold it: 32 lowercase hex digits
 * of the trace id, then 16 of the span id.
 */
#define EMBER_LINK_HEX 48

/* What `--trace ID` or `--trace ID:SPAN` selects, as the start of a link (out, size bytes:
 * 32 or 48 lowercase hex digits). Returns 0, or -EINVAL for anything else. */
int ember_link_prefix(const char *arg, char *out, size_t size);

#endif
