// SPDX-License-Identifier: Apache-2.0
/* Symbol names from hostile files: C++, Rust legacy and Rust v0 demangling. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/symbols/demangle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 1), out[512];

	if (!name)
		return 0;
	memcpy(name, data, size);
	name[size] = '\0';
	ember_demangle(name, out, sizeof(out));
	free(name);
	return 0;
}
