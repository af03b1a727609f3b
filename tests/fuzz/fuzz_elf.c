// SPDX-License-Identifier: Apache-2.0
/*
 * ELF headers, notes (GNU and Go build ids), .gnu_debuglink, symbol tables,
 * .gopclntab inside an ELF file, DWARF through libdw (lines, inline
 * records) and MiniDebugInfo: everything ember reads from a mapped file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/symbols/objfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_objfile o;
	struct ember_sym_frames fr;
	uint8_t *copy;

	/* libelf may keep pointers into the image: give it a private copy. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (!ember_objfile_open_mem(copy, size, &o)) {
		/* Addresses in and around every loadable segment. */
		for (size_t i = 0; i < o.syms.nsegments; i++) {
			const struct ember_elf_segment *s = &o.syms.segments[i];
			uint64_t step = s->memsz / 64 + 1;

			for (uint64_t k = 0; k <= 64; k++)
				ember_objfile_lookup(&o, s->vaddr + k * step, &fr);
		}
		for (size_t i = 0; i < o.syms.nsyms && i < 256; i++)
			ember_objfile_lookup(&o, o.syms.syms[i].addr + 1, &fr);
		ember_objfile_close(&o);
	}
	free(copy);
	return 0;
}
