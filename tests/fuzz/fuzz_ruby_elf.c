// SPDX-License-Identifier: Apache-2.0
/*
 * An ELF file as the symbolizer meets one in a process that might run
 * Ruby: its symbols, version, TLS relocations, .eh_frame_hdr search table
 * (the interpreter loop's bounds), the symbol table's decoder, and ld.so's
 * __tls_get_addr.
 */
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/ruby_elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_rb_elf out;
	uint64_t symbols;
	uint16_t off;
	uint8_t shift;

	ember_rb_elf_read_mem(data, size, &out);
	/* The decoders on the raw bytes too. */
	ember_elf_decode_dtv(data, size < 256 ? size : 256, &off, &shift);
	ember_rb_decode_symbols(data, size < 256 ? size : 256, 0x1000, 0x10, &symbols);
	return 0;
}
