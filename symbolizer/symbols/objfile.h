/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Everything the symbolizer knows about one mapped file: its identity (GNU
 * build id, Go build id, htlhash), its symbol table, its .gopclntab when it
 * is a Go program, and its DWARF (its own, or from a separate debug file).
 * A lookup turns an ELF virtual address into an inline chain of frames.
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_OBJFILE_H
#define EMBER_SYMBOLIZER_SYMBOLS_OBJFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/symbols/debuginfo.h"
#include "symbolizer/symbols/dwarf.h"
#include "symbolizer/symbols/elf_syms.h"
#include "symbolizer/symbols/file_id.h"
#include "symbolizer/symbols/gopclntab.h"
#include "symbolizer/symbols/sym_frame.h"

struct ember_objfile {
	Elf *elf; /* the file itself, mapped read-only by libelf */
	struct ember_elf_syms syms;
	struct ember_file_id id;
	bool has_id;
	bool has_go;
	struct ember_gopclntab go;
	struct ember_debugfile debug; /* separate debug file, if one was used */
	struct ember_dwarf *dwarf;    /* NULL without usable DWARF */
	enum ember_debug_source dwarf_source;
	size_t dwarf_heap; /* libdw's inflated sections, estimated */
	bool mem_image; /* elf is the caller's memory (ember_objfile_open_mem), not libelf's mapping
	                 */
	uint64_t dwarf_resets;
	uint64_t lookup_errors;
	uint64_t open_errors; /* pieces refused when the file was opened (over a cap) */
};

enum ember_sym_origin {
	EMBER_SYM_NONE = 0,
	EMBER_SYM_SYMTAB, /* name only, from .symtab/.dynsym */
	EMBER_SYM_DWARF,
	EMBER_SYM_GO,
};

/*
 * Reads the file open at fd (the descriptor may be closed afterwards) and
 * finds its debug information through op (may be NULL: no separate files).
 * Returns 0 or a negative errno (-ENOEXEC: not an ELF file).
 */
int ember_objfile_open(int fd, const struct ember_debug_opener *op, struct ember_objfile *out);
/* Same for an ELF image in memory, which must outlive the object (fuzzing, tests). */
int ember_objfile_open_mem(const void *data, size_t len, struct ember_objfile *out);
void ember_objfile_close(struct ember_objfile *o);

/*
 * The frames at vaddr, innermost first, every one named. Returns where they
 * came from, or EMBER_SYM_NONE when nothing names the address.
 */
enum ember_sym_origin ember_objfile_lookup(struct ember_objfile *o, uint64_t vaddr,
                                           struct ember_sym_frames *out);

/*
 * Gives back the resident pages of the files libelf mapped (what lookups
 * read of them): they are read back from the page cache when needed.
 */
void ember_objfile_release_pages(const struct ember_objfile *o);
/*
 * Forgets what lookups expanded of the DWARF (its units, libdw's line
 * tables and caches) and opens it afresh. Frames an earlier lookup returned
 * are no longer valid. Returns 0 or a negative errno (the DWARF is then gone).
 */
int ember_objfile_reset_dwarf(struct ember_objfile *o);

/* Memory held (grows as DWARF units are expanded). */
size_t ember_objfile_bytes(const struct ember_objfile *o);
/* Malformed pieces met so far (DWARF units, Go tables). */
uint64_t ember_objfile_errors(const struct ember_objfile *o);
/* Whether addr lies in a file image the object reads through a mapping (the file, its
 * debug file, the dwz file): see sigbus_guard.h. */
bool ember_objfile_maps(const struct ember_objfile *o, uintptr_t addr);

#endif
