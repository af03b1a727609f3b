// SPDX-License-Identifier: Apache-2.0
/*
 * An ELF file as the symbolizer meets one in a process that might run PHP:
 * its symbols (execute_ex, executor_globals, a ZTS build's
 * executor_globals_offset), its version string, the .eh_frame_hdr search
 * table (execute_ex's bounds without a symbol size); and the version
 * string's parser on the raw bytes.
 */
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/php_elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_php_elf out;
	unsigned int v[3];

	ember_php_elf_read_mem(data, size, &out);
	ember_php_parse_version(data, size, v);
	return 0;
}
