// SPDX-License-Identifier: Apache-2.0
/* A perf map a JIT writes (/tmp/perf-PID.map), read in two pieces cut where the input's
 * first byte says, as a growing file is; every entry found again by its own start. */
#include <stdint.h>

#include "symbolizer/symbols/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_perfmap m;
	size_t cut, used;

	if (!size)
		return 0;
	cut = data[0] % size;
	data++, size--;
	cut = cut < size ? cut : size;
	ember_perfmap_init(&m);
	used = ember_perfmap_feed(&m, (const char *)data, cut);
	if (used > cut)
		__builtin_trap();
	ember_perfmap_feed(&m, (const char *)data + used, size - used);
	for (size_t i = 0; i < m.n; i++) {
		const char *name = ember_perfmap_lookup(&m, m.e[i].start);

		if (!name || !*name) /* a range of its own holds its start: something names it */
			__builtin_trap();
	}
	(void)ember_perfmap_lookup(&m, 0);
	(void)ember_perfmap_lookup(&m, UINT64_MAX);
	ember_perfmap_free(&m);
	return 0;
}
