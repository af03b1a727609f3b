// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target: the pprof reader (gzip or raw profile.proto), then every writer. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "symbolizer/formats/in_pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_profile p;

	if (ember_profile_init(&p))
		return 0;
	if (ember_read_pprof(&p, data, size) == 0)
		fuzz_write_all_formats(&p);
	ember_profile_free(&p);
	return 0;
}
