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

typedef struct Elf Elf;

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
	/* Its DWARF was not opened for want of room (ember_objfile_open_within): names
	 * come from the symbol table alone until it is tried again. */
	bool dwarf_deferred;
	uint64_t dwarf_cost; /* what the DWARF was estimated to take (heap and pages) */
	Elf *inflated_left;  /* the handle holding sections a deferred DWARF inflated */
};

/*
 * What opening a file may take, checked before each piece is read, in bytes
 * (SIZE_MAX: no limit). kept: the heap the parsed file may keep (the object
 * cache's room for it); transient: what reading it may take for a moment,
 * the heap kept and the file pages read included (the memory budget's room),
 * which make_way may widen.
 */
struct ember_objfile_room {
	size_t kept;
	size_t transient;
	/* When a piece does not fit transient: asked to free at least bytes (the cache
	 * evicting entries outside its working set); returns what it freed. May be NULL. */
	size_t (*make_way)(void *ctx, size_t bytes);
	void *ctx;
};

/* What reading a file's pieces takes, estimated from its section headers. */
struct ember_objfile_cost {
	uint64_t syms;        /* its symbol table copied, with the builder's arrays */
	uint64_t dwarf_heap;  /* its DWARF opened: sections libdw inflates, the units read */
	uint64_t dwarf_pages; /* the file pages opening it reads (given back after) */
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
/*
 * Same, within room: a file whose symbol table does not fit room->transient
 * is not read (-ENOBUFS); a file whose DWARF does not fit (its estimate, or
 * what libdw measurably took while the units were read) keeps its symbols
 * alone, with dwarf_deferred set. room NULL: no limit.
 */
int ember_objfile_open_within(int fd, const struct ember_debug_opener *op,
                              const struct ember_objfile_room *room, struct ember_objfile *out);
/* The costs of reading elf's symbols (syms) and its DWARF with alt's (may be NULL). */
void ember_objfile_syms_cost(Elf *elf, struct ember_objfile_cost *c);
void ember_objfile_dwarf_cost(Elf *elf, Elf *alt, struct ember_objfile_cost *c);
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
 * Same, expanding a DWARF unit only if its estimated cost is at most
 * max_expand bytes: else the address is named from the symbol table alone
 * (EMBER_SYM_SYMTAB). SIZE_MAX: no limit.
 */
enum ember_sym_origin ember_objfile_lookup_within(struct ember_objfile *o, uint64_t vaddr,
                                                  size_t max_expand, struct ember_sym_frames *out);
/* What expanding the DWARF unit vaddr falls in would take (0: nothing to expand). */
size_t ember_objfile_expand_cost(struct ember_objfile *o, uint64_t vaddr);

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
