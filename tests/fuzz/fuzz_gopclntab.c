// SPDX-License-Identifier: Apache-2.0
/*
 * A .gopclntab on its own, placed in one loadable segment at VADDR, as the
 * ELF reader would describe it. The first byte says what the ELF headers
 * would have told, so that every way of finding the table and its
 * companions is reached:
 *   bit 0  the segment is writable: runtime.firstmoduledata is searched in it
 *          (binaries without section headers or symbols)
 *   bit 1  no go:func.* symbol: inline trees are found through the moduledata
 *   bit 2  no runtime.pclntab symbol: the table is found by scanning segments
 *   bit 3  a runtime.firstmoduledata symbol, at the input's last 512 bytes
 *   bit 4  textStart cleared in the table's header (as Go 1.26 writes it):
 *          moduledata.text gives it
 * The rest is the table, then whatever follows it (inline trees, moduledata).
 * Lookups walk pcs spread over the text the table names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/symbols/gopclntab.h"

#define VADDR 0x400000u

enum {
	WRITABLE = 1,
	NO_GOFUNC_SYM = 2,
	NO_PCLNTAB_SYM = 4,
	MODULEDATA_SYM = 8,
	NO_TEXT_START = 16,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_elf_syms elf;
	struct ember_gopclntab t;
	struct ember_sym_frames fr;
	uint8_t mode, *copy;
	uint64_t entry;

	if (!size)
		return 0;
	mode = data[0];
	data++;
	size--;
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	/* The 1.18+ header: magic, pad, quantum, ptrsize, nfunc, nfiles, textStart. */
	if ((mode & NO_TEXT_START) && size >= 8 && (copy[7] == 4 || copy[7] == 8) &&
	    size >= 8 + 3 * (size_t)copy[7])
		memset(copy + 8 + 2 * copy[7], 0, copy[7]);
	memset(&elf, 0, sizeof(elf));
	elf.nsegments = 1;
	elf.segments[0] =
	    (struct ember_elf_segment){0, VADDR, size, size, (mode & WRITABLE) ? 6u : 4u};
	elf.go.is_go = true;
	if (!(mode & NO_PCLNTAB_SYM))
		elf.go.pclntab_sym = VADDR;
	if (!(mode & NO_GOFUNC_SYM))
		elf.go.gofunc_sym = VADDR + (size / 2); /* inline trees read from the input too */
	if ((mode & MODULEDATA_SYM) && size > 512)
		elf.go.moduledata_sym = VADDR + size - 512;
	if (!ember_gopclntab_open(copy, size, &elf, &t)) {
		entry = t.text_start;
		for (int i = 0; i < 512; i++)
			ember_gopclntab_lookup(&t, entry + (uint64_t)i * 37, &fr);
	}
	free(copy);
	return 0;
}
