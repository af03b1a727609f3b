// SPDX-License-Identifier: Apache-2.0
/*
 * The process context reader (OTEP 4719) on hostile memory: the input is a process's memory
 * from address 0x10000 on, read as a context whose header is at its start (the pointer and
 * sizes in it are the input's); and the input itself as a ProcessContext payload.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/process/process_context.h"
#include "tests/fuzz/fuzz_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_mem m = {data, size};
	struct ember_process_context *c = malloc(sizeof(*c));

	if (!c)
		return 0;
	if (!ember_process_context_read(fuzz_mem_read, &m, FUZZ_MEM_BASE, c) &&
	    (!memchr(c->resource, '\0', sizeof(c->resource)) ||
	     !memchr(c->attributes, '\0', sizeof(c->attributes))))
		abort();
	if (!ember_process_context_parse(data, size, c) && strlen(c->resource) >= sizeof(c->resource))
		abort();
	free(c);
	return 0;
}
