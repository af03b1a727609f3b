/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every reader's fuzz target does with a profile it managed to read:
 * write it in every format, so that hostile names and shapes also reach the
 * frame tree and the writers (HTML escaping above all).
 */
#ifndef EMBER_TESTS_FUZZ_COMMON_H
#define EMBER_TESTS_FUZZ_COMMON_H

#include <stdlib.h>

#include "symbolizer/formats/profile_writer.h"
#include "symbolizer/profile/profile.h"

static inline void fuzz_write_all_formats(const struct ember_profile *p)
{
	for (int f = 0; f < EMBER_FORMAT_MAX; f++) {
		char *buf;
		size_t len;

		if (ember_format_encode((enum ember_format)f, p, &buf, &len) == 0)
			free(buf);
	}
}

#endif
