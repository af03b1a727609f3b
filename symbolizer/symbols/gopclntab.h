/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Function names, files, lines and inlined calls of Go programs from the
 * runtime's own table, .gopclntab, which even binaries linked with
 * -ldflags='-s -w' keep. Layouts of Go 1.16 to 1.26 (magics 0xfffffffa,
 * 0xfffffff0, 0xfffffff1). The table is found by section name, by the
 * runtime.pclntab symbol, or by scanning the loadable segments for a header
 * that checks out. Every offset read from the file is bounds-checked and
 * every table walk is capped.
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_GOPCLNTAB_H
#define EMBER_SYMBOLIZER_SYMBOLS_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/symbols/elf_syms.h"
#include "symbolizer/symbols/sym_frame.h"

#define EMBER_GO_MAX_FUNCS   (4u << 20)
#define EMBER_GO_MAX_PCSTEPS (1u << 16) /* varint pairs decoded per table walk */
#define EMBER_GO_MAX_INLINE  EMBER_SYM_MAX_FRAMES
#define EMBER_GO_MAX_NAME    (64u << 10) /* bytes searched for a name's end */

struct ember_gopclntab {
	const uint8_t *file; /* the whole file, owned by the caller */
	size_t file_len;
	const struct ember_elf_syms *elf;
	const uint8_t *tab; /* the pclntab */
	size_t tab_len;
	uint64_t tab_vaddr;
	uint32_t version; /* 116, 118 or 120: the layout, not the exact release */
	uint8_t quantum;
	uint8_t ptrsize;
	uint64_t nfunc;
	uint64_t text_start;
	uint64_t gofunc; /* address of go:func.*, 0 when unknown (no inline frames then) */
	/* Sub-tables as [offset, offset+len) inside tab. */
	size_t funcnames, funcnames_len;
	size_t cutab, cutab_len;
	size_t filetab, filetab_len;
	size_t pctab, pctab_len;
	size_t functab, functab_len;
	uint64_t errors; /* lookups that met a bad offset */
};

/*
 * Finds and checks the pclntab of the ELF file held in file[0..len) whose
 * headers elf describes. Returns 0, -ENOENT (not a Go binary, or an older
 * layout), or -EBADMSG (a table that does not check out).
 */
int ember_gopclntab_open(const uint8_t *file, size_t len, const struct ember_elf_syms *elf,
                         struct ember_gopclntab *out);

/* The inline chain at pc (an ELF virtual address). Returns 0 or -ENOENT. */
int ember_gopclntab_lookup(struct ember_gopclntab *t, uint64_t pc, struct ember_sym_frames *out);

#endif
