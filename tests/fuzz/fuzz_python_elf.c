// SPDX-License-Identifier: Apache-2.0
/*
 * An ELF file as the symbolizer meets one in a process that might run
 * CPython: its symbols, version, _Py_DebugOffsets, interpreter loop (and the
 * jumps to its cold part), thread-state key and glibc's key slots.
 */
#include <stdint.h>
#include <stddef.h>

#include "symbolizer/interp/python_elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_py_elf out;
	uint64_t key;
	uint16_t off;

	ember_py_elf_read_mem(data, size, "/usr/lib/libpython3.9.so.1.0", &out);
	/* The decoders on the raw bytes too. */
	ember_py_decode_tss_key(data, size < 256 ? size : 256, 0x1000, 0x2000, 0x800, &key);
	ember_py_decode_tss_key(data, size < 256 ? size : 256, 0x1000, 0, 0, &key);
	ember_elf_glibc_tsd(data, size < 256 ? size : 256, &off);
	return 0;
}
