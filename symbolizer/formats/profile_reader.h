/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiles read back from files (`ember report`, `diff`, `top`): hands the
 * bytes of a file (read whole with ember_read_whole_fd, capped at
 * EMBER_INPUT_MAX_BYTES) to the pprof or the folded reader, chosen by
 * content (gzip or binary protobuf is pprof, text is folded).
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_PROFILE_READER_H
#define EMBER_SYMBOLIZER_FORMATS_PROFILE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/profile/profile.h"

#define EMBER_INPUT_MAX_BYTES (1ull << 30)

enum ember_input_format {
	EMBER_INPUT_PPROF,
	EMBER_INPUT_FOLDED,
};

enum ember_input_format ember_input_detect(const uint8_t *buf, size_t len);

/*
 * Parses buf into p, an initialised profile. Returns 0, or a negative errno:
 * -EINVAL for input that is not a profile, -EFBIG for one over the caps.
 */
int ember_input_parse(struct ember_profile *p, const uint8_t *buf, size_t len);

#endif
