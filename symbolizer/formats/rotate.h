/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Daemon outputs: one file per format and reporting interval, in a directory
 * the symbolizer holds as a descriptor (it can name no other). A file is
 * written under a temporary name and renamed into place when complete, so a
 * reader never sees half a profile; the oldest are removed beyond a count.
 *
 *   DIR/ember-20250102T030405Z.folded   interval that started 03:04:05 UTC
 *   DIR/ember-20250102T030405Z.pb.gz
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_ROTATE_H
#define EMBER_SYMBOLIZER_FORMATS_ROTATE_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/formats/profile_writer.h"
#include "symbolizer/profile/profile.h"

#define EMBER_ROTATE_PREFIX "ember-"

struct ember_rotation {
	int dir_fd;
	enum ember_format formats[EMBER_FORMAT_MAX];
	size_t nformats;
	unsigned int keep; /* intervals kept per format; 0: all */
	uint64_t files_written, files_removed, write_errors;
};

/*
 * Writes p once per format, named for p->start_ns, then removes the oldest
 * outputs beyond `keep`. Returns 0 or the first negative errno (every format
 * is still attempted).
 */
int ember_rotation_write(struct ember_rotation *r, const struct ember_profile *p);

/* The file name for an interval starting at unix_ns: "ember-YYYYmmddTHHMMSSZ" + suffix. */
int ember_rotation_name(uint64_t unix_ns, const char *suffix, char *buf, size_t size);

#endif
