/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The dynamic symbol table of an ELF file read through its program headers
 * alone, for files whose section headers are gone (stripped hard with
 * sstrip, or cut off): PT_DYNAMIC gives DT_SYMTAB and DT_STRTAB, and the
 * hash table (DT_GNU_HASH, else DT_HASH) gives the number of symbols, which
 * no dynamic tag states. Every address is turned into a file offset through
 * the loadable segments and every read is bounds-checked: the file is
 * hostile.
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_DYNSYM_H
#define EMBER_SYMBOLIZER_SYMBOLS_DYNSYM_H

#include <gelf.h>

#include "symbolizer/symbols/elf_syms.h"

#define EMBER_DYNAMIC_MAX_ENTRIES 4096 /* PT_DYNAMIC entries read */

struct ember_dynsym_sink {
	void *ctx;
	/* One symbol (name NULL when its name is out of bounds); a negative errno stops. */
	int (*add)(void *ctx, const GElf_Sym *sym, const char *name);
};

/*
 * Reports every symbol of the dynamic symbol table of elf, whose loadable
 * segments s already holds. Returns 0, -ENOENT when the file has no usable
 * PT_DYNAMIC or table, or the error sink->add returned.
 */
int ember_dynsym_read(Elf *elf, const struct ember_elf_syms *s,
                      const struct ember_dynsym_sink *sink);

#endif
