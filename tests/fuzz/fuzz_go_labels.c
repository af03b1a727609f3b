// SPDX-License-Identifier: Apache-2.0
/*
 * The goroutine label reader on hostile memory: the input is a process's memory from
 * address 0x10000 on; a label set is read at each of its first 1 KiB of addresses, as a
 * slice (Go 1.24 and later) and as a map (up to 1.23).
 */
#include <stdint.h>

#include "symbolizer/interp/go_labels.h"
#include "tests/fuzz/fuzz_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_mem m = {data, size};
	static char out[EMBER_GO_LABELS_TEXT];

	for (uint64_t at = FUZZ_MEM_BASE; at < FUZZ_MEM_BASE + size && at < FUZZ_MEM_BASE + 1024;
	     at += 8) {
		ember_go_read_labels(fuzz_mem_read, &m, 26, at, out, sizeof(out));
		ember_go_read_labels(fuzz_mem_read, &m, 19, at, out, sizeof(out));
	}
	return 0;
}
