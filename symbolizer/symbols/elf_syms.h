/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Function symbols of an ELF file (.symtab, else .dynsym, else the dynamic
 * table found through PT_DYNAMIC when the section headers are gone) read
 * with libelf, names for its PLT entries, its loadable segments (to turn a
 * file offset into an ELF address) and its GNU build id.
 *
 * The symbols become disjoint address ranges, each naming the best symbol
 * over it: a sized symbol covers its size and no more; a symbol nested in
 * another covers its own range, after which the enclosing one resumes; a
 * symbol without a size (hand-written assembly) runs to the next symbol or
 * the end of its section, and never into a sized symbol it sits in; an
 * untyped symbol (STT_NOTYPE) in executable code names only what no typed
 * symbol covers.
 *
 * The file is hostile: libelf bounds-checks sections, and every count and
 * size here is capped.
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_ELF_SYMS_H
#define EMBER_SYMBOLIZER_SYMBOLS_ELF_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/strtab.h"

#define EMBER_ELF_MAX_SYMBOLS    (4u << 20)
#define EMBER_ELF_MAX_NAME_BYTES (256u << 20)
#define EMBER_ELF_MAX_SEGMENTS   64
#define EMBER_BUILD_ID_MAX       64 /* bytes */
/* Note segments and sections read for build ids, and their size: real files
 * have a few of some hundred bytes; a hostile one could list thousands that
 * all cover the whole file (and libelf copies each to convert its byte order). */
#define EMBER_ELF_MAX_NOTE_CHUNKS 16
#define EMBER_ELF_MAX_NOTE_BYTES  (64u << 10)

/* How a symbol's range was found (ember_elf_sym.flags). */
#define EMBER_ELF_SYM_SIZELESS 0x1u  /* size 0 in the file: the end was inferred */
#define EMBER_ELF_SYM_NOTYPE   0x2u  /* STT_NOTYPE in executable code */
#define EMBER_ELF_SYM_PLT      0x4u  /* a PLT entry named from its relocation */
#define EMBER_ELF_SYM_RESUMED  0x8u  /* an enclosing symbol's rest after one nested in it */
#define EMBER_ELF_SYM_IFUNC    0x10u /* STT_GNU_IFUNC: what callers call, at its resolver */
#define EMBER_ELF_SYM_IN_FILE  0x20u /* name: an offset into the file's own string table */

/* Symbols nested deeper than this inside one another are dropped. */
#define EMBER_ELF_MAX_NESTING 256

struct ember_elf_sym {
	uint64_t addr;
	uint64_t size; /* never 0: ranges are disjoint and sorted */
	uint32_t name; /* offset into names */
	uint32_t flags;
};

struct ember_elf_segment {
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
	uint64_t memsz;
	uint32_t flags; /* PF_X | PF_W | PF_R */
};

/* What a Go binary's sections and symbols say about its .gopclntab. */
struct ember_elf_go {
	uint64_t pclntab_offset; /* file offset of the .gopclntab section, or 0 */
	uint64_t pclntab_size;
	uint64_t pclntab_sym;    /* runtime.pclntab, or 0 */
	uint64_t text_sym;       /* runtime.text */
	uint64_t gofunc_sym;     /* go:func.* (go.func.* before 1.20) */
	uint64_t moduledata_sym; /* runtime.firstmoduledata, or the .go.module section */
	bool is_go;              /* a Go build id note, .gopclntab or .go.buildinfo */
};

struct ember_elf_syms {
	struct ember_elf_sym *syms; /* sorted by address */
	size_t nsyms;
	struct ember_strtab names; /* what ember_elf_sym.name is an offset into */
	/* Loaded with ember_elf_syms_load_mapped: the symbol table's string section in the
	 * libelf handle's memory (the file's mapping), which the names flagged
	 * EMBER_ELF_SYM_IN_FILE are offsets into; each was checked to end within it. */
	const char *file_names;
	size_t file_names_len;
	size_t file_names_scn; /* its section index, for ember_elf_syms_rebind */
	struct ember_elf_segment segments[EMBER_ELF_MAX_SEGMENTS];
	size_t nsegments;
	uint16_t e_type; /* ET_EXEC, ET_DYN */
	uint16_t e_machine;
	bool has_symtab;     /* full symbol table, not only .dynsym */
	bool from_dynamic;   /* symbols read through PT_DYNAMIC: no section headers */
	bool has_debug_info; /* a .debug_info section is present */
	uint8_t build_id[EMBER_BUILD_ID_MAX];
	size_t build_id_len;
	char build_id_hex[2 * EMBER_BUILD_ID_MAX + 1];
	char go_build_id[128]; /* the Go toolchain's build id note, or "" */
	char debuglink[256];   /* .gnu_debuglink file name, or "" */
	uint32_t debuglink_crc;
	struct ember_elf_go go;
	size_t bytes; /* memory held, for cache accounting */
};

/* The file offset of an ELF virtual address backed by file bytes, or -ENOENT. */
int ember_elf_vaddr_to_offset(const struct ember_elf_syms *s, uint64_t vaddr, uint64_t len,
                              uint64_t *offset);

/* Reads the symbols of the ELF file open at fd. Returns 0 or a negative errno
 * (-ENOEXEC for a file that is not a usable ELF file). */
int ember_elf_syms_load(int fd, struct ember_elf_syms *out);
/* Same, from a libelf handle the caller keeps. On failure out holds nothing. */
typedef struct Elf Elf;
int ember_elf_syms_load_elf(Elf *elf, struct ember_elf_syms *out);
/*
 * Same, leaving the names of the symbol table in the file (a large C++ binary's
 * names are most of its symbols' memory: Node's 11 MB): elf must outlive out, or
 * out must be moved to another handle of the same file with ember_elf_syms_rebind.
 * Names longer than the copied ones' limit, and those made here (PLT entries),
 * are still copied.
 */
int ember_elf_syms_load_mapped(Elf *elf, struct ember_elf_syms *out);
/* Points the names left in the file at elf's copy of the same string section (a new
 * handle of the same file). 0, or -ESTALE when elf's section is not the same size. */
int ember_elf_syms_rebind(struct ember_elf_syms *s, Elf *elf);
/* Same, from a buffer in memory (fuzzing, tests). */
int ember_elf_syms_load_mem(const void *data, size_t len, struct ember_elf_syms *out);
void ember_elf_syms_free(struct ember_elf_syms *s);

/* The symbol whose range holds addr (an ELF virtual address), or NULL. */
const struct ember_elf_sym *ember_elf_syms_lookup(const struct ember_elf_syms *s, uint64_t addr);
static inline const char *ember_elf_sym_name(const struct ember_elf_syms *s,
                                             const struct ember_elf_sym *sym)
{
	if (sym->flags & EMBER_ELF_SYM_IN_FILE)
		return s->file_names + sym->name;
	return ember_strtab_at(&s->names, sym->name);
}

/*
 * sym's name copied into buf (of len bytes, NUL included), read within its string
 * section however the file changed since it was checked (a file rewritten in place
 * while mapped): the name as it is now, cut where the section or buf ends. Returns buf.
 * ember_elf_sym_name returns the name in place: for a table of names copied, or for
 * a file read once (tests, the load itself).
 */
const char *ember_elf_sym_name_copy(const struct ember_elf_syms *s, const struct ember_elf_sym *sym,
                                    char *buf, size_t len);

/* Turns a file offset inside a loadable segment into its ELF virtual address. */
int ember_elf_offset_to_vaddr(const struct ember_elf_syms *s, uint64_t offset, uint64_t *vaddr);
/*
 * The ELF virtual address where a mapping of the file from map_offset starts: the page-aligned
 * start of a loadable segment (the loader maps each from the page holding its first byte) or a
 * page inside one. Where two segments share that page, the executable one: frames are in it.
 */
int ember_elf_mapping_vaddr(const struct ember_elf_syms *s, uint64_t map_offset, uint64_t *vaddr);

#endif
