// SPDX-License-Identifier: Apache-2.0
/*
 * A .gopclntab on its own: the input is the table, placed in one loadable
 * segment; the first 8 bytes of the input after the table's header pick
 * nothing special, so lookups walk pcs spread over the text the table names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/symbols/gopclntab.h"

#define VADDR 0x400000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_elf_syms elf;
	struct ember_gopclntab t;
	struct ember_sym_frames fr;
	uint64_t entry;

	memset(&elf, 0, sizeof(elf));
	elf.nsegments = 1;
	elf.segments[0] = (struct ember_elf_segment){0, VADDR, size, size, 4 /* PF_R */};
	elf.go.is_go = true;
	elf.go.pclntab_sym = VADDR;
	elf.go.gofunc_sym = VADDR + (size / 2); /* inline trees read from the input too */
	if (ember_gopclntab_open(data, size, &elf, &t))
		return 0;
	entry = t.text_start;
	for (int i = 0; i < 512; i++)
		ember_gopclntab_lookup(&t, entry + (uint64_t)i * 37, &fr);
	return 0;
}
