// SPDX-License-Identifier: Apache-2.0
/* /proc/PID/maps text: the paths in it are chosen by the profiled process. */
#include <stdint.h>

#include "symbolizer/process/maps_parser.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_maps m;

	if (ember_maps_parse((const char *)data, size, &m))
		return 0;
	for (size_t i = 0; i < m.count; i++) {
		ember_maps_find(&m, m.entries[i].start);
		ember_maps_find(&m, m.entries[i].end - 1);
		ember_maps_path(&m, &m.entries[i]);
	}
	ember_maps_free(&m);
	return 0;
}
