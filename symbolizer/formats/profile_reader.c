// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/profile_reader.h"

#include <errno.h>
#include <stdlib.h>

#include "symbolizer/formats/in_folded.h"
#include "symbolizer/formats/gzip.h"
#include "symbolizer/formats/in_pprof.h"

enum ember_input_format ember_input_detect(const uint8_t *buf, size_t len)
{
	if (ember_is_gzip(buf, len))
		return EMBER_INPUT_PPROF;
	/* Binary protobuf has field tags and lengths below the printable range. */
	for (size_t i = 0; i < len && i < 4096; i++)
		if (buf[i] < 0x09 || (buf[i] > 0x0d && buf[i] < 0x20 && buf[i] != 0x1b))
			return EMBER_INPUT_PPROF;
	return EMBER_INPUT_FOLDED;
}

int ember_input_parse(struct ember_profile *p, const uint8_t *buf, size_t len)
{
	if (ember_input_detect(buf, len) == EMBER_INPUT_PPROF)
		return ember_read_pprof(p, buf, len);
	return ember_read_folded(p, (const char *)buf, len);
}
