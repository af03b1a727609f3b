// SPDX-License-Identifier: Apache-2.0
/*
 * A thread-context record's attributes as a hostile process writes them (the input, up to
 * the 612 bytes ember reads), named by a key map with a gap, a long name and an empty one.
 */
#include <stdint.h>

#include "symbolizer/interp/thread_ctx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[EMBER_TCTX_ATTRS_TEXT], small[40];
	uint64_t unnamed = 0;

	if (size > EMBER_TCTX_MAX_ATTRS)
		size = EMBER_TCTX_MAX_ATTRS;
	ember_tctx_attr_lines(data, size, "http.route\n\nworker\nan.attribute.with.a.long.name\n",
	                      out, sizeof(out), &unnamed);
	ember_tctx_attr_lines(data, size, NULL, out, sizeof(out), &unnamed);
	ember_tctx_attr_lines(data, size, "k\n", small, sizeof(small), &unnamed);
	return 0;
}
