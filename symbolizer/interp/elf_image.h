/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An ELF file as the interpreters' readers look at it: its loadable
 * segments, the symbols they ask for by name, bytes at an ELF address, and
 * the .eh_frame range around an address. x86-64, 64-bit files only.
 *
 * The file is hostile: libelf bounds-checks its tables, symbols looked at
 * are capped, every byte range read must lie in a segment's file bytes.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_ELF_IMAGE_H
#define EMBER_SYMBOLIZER_INTERP_ELF_IMAGE_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EMBER_ELF_IMAGE_MAX_SEGMENTS 16
#define EMBER_ELF_IMAGE_MAX_SYMBOLS  (4u << 20) /* symbols looked at, over all tables */
#define EMBER_ELF_MAX_DTV_OFFSET     4096       /* of the dynamic thread vector from the tp */

struct ember_elf_image {
	Elf *elf;
	const uint8_t *image;
	size_t len;
	GElf_Phdr loads[EMBER_ELF_IMAGE_MAX_SEGMENTS];
	size_t nloads;
	uint64_t eh_frame_hdr, eh_frame_hdr_size; /* PT_GNU_EH_FRAME; 0: none */
	GElf_Phdr tls;                            /* PT_TLS; p_type 0: none */
	bool executable; /* a program, not a library: ET_EXEC, a PIE, or one with PT_INTERP */
};

/* A symbol asked for: its value, size and type (STT_*); value and type 0: not found. */
struct ember_elf_sym {
	uint64_t addr, size;
	uint8_t type;
};

/* A loadable segment, kept after the file is closed: where its mappings' bias comes from. */
struct ember_elf_segment {
	uint64_t offset, vaddr, filesz;
};

/* What to add to the file's ELF addresses in a mapping of it at start, from file offset
 * map_offset: true, or false when no segment holds that offset. */
bool ember_elf_bias(const struct ember_elf_segment *segs, size_t n, uint64_t map_offset,
                    uint64_t start, uint64_t *bias);

/* Takes an x86-64 ELF file's segments: 0, or -ENOEXEC for anything else. */
int ember_elf_image_open(Elf *elf, struct ember_elf_image *f);

/* Copies the loadable segments (at most EMBER_ELF_IMAGE_MAX_SEGMENTS) to out: how many. */
uint32_t ember_elf_image_segments(const struct ember_elf_image *f, struct ember_elf_segment *out);

/* What each reader does first: opens elf (ember_elf_image_open), copies its segments to
 * segs (*nsegs of them) and finds the n names into syms. 0, or -ENOEXEC. */
int ember_elf_image_start(Elf *elf, struct ember_elf_image *f, struct ember_elf_segment *segs,
                          uint32_t *nsegs, const char *const *names, size_t n,
                          struct ember_elf_sym *syms);

/* Reads len bytes at ELF address vaddr, from a loadable segment's file bytes. */
int ember_elf_image_read(const struct ember_elf_image *f, uint64_t vaddr, void *buf, size_t len);

/* Whether vaddr lies in a loadable segment with flag (PF_X, PF_W, PF_R). */
bool ember_elf_image_in_segment(const struct ember_elf_image *f, uint64_t vaddr, uint32_t flag);

/* Finds the n names in the symbol tables (the first definition of each) into syms[n]. */
void ember_elf_image_symbols(const struct ember_elf_image *f, const char *const *names, size_t n,
                             struct ember_elf_sym *syms);

/* The .eh_frame range [start, end) of the function holding addr: 0 or -ENOENT. */
int ember_elf_fde_range(Dwarf_CFI *cfi, uint64_t addr, uint64_t *start, uint64_t *end);

/*
 * The function holding addr, by the .eh_frame_hdr search table and the FDE it
 * points at: [start, end). 0, or -ENOENT (no table, not in it, or encodings
 * other than GNU's usual ones: a table of datarel sdata4 pairs, FDEs with a
 * pcrel sdata4 start, checked against the table's, and a 4-byte range).
 */
int ember_elf_fde_bounds(const struct ember_elf_image *f, uint64_t addr, uint64_t *start,
                         uint64_t *end);

/*
 * The first stretch of at least min_gap bytes that no function of the .eh_frame_hdr table
 * covers, starting within `within` bytes after the function holding `after`: [start, end).
 * (Code without unwind tables, such as V8's embedded builtins, in a file without their
 * symbols.) 0, or -ENOENT.
 */
int ember_elf_fde_gap(const struct ember_elf_image *f, uint64_t after, uint64_t within,
                      uint64_t min_gap, uint64_t *start, uint64_t *end);

/*
 * Where glibc's pthread_getspecific, whose first len bytes of code are at code, finds a
 * key's value: key k's (k < 32) is 8 bytes at thread pointer + *offset + 16 * k. 0, or
 * -ENOENT for other code.
 */
int ember_elf_glibc_tsd(const uint8_t *code, size_t len, uint16_t *offset);

/*
 * Where glibc's __tls_get_addr, whose first len bytes of code are at code, finds the
 * thread's dynamic thread vector (thread pointer + *offset) and the size of its entries
 * (1 << *shift). 0, or -ENOENT for other code.
 */
int ember_elf_decode_dtv(const uint8_t *code, size_t len, uint16_t *offset, uint8_t *shift);

/* Whether the file's __tls_get_addr (its symbol) is glibc's, and where its thread vector is
 * then (ember_elf_decode_dtv on its first bytes). */
bool ember_elf_image_dtv(const struct ember_elf_image *f, const struct ember_elf_sym *tls_get_addr,
                         uint16_t *offset, uint8_t *shift);

/* Called for each relocation naming a symbol: its type (R_X86_64_*), r_offset, and the
 * symbol's value plus the addend. Non-zero stops the walk. */
typedef int (*ember_elf_relocation_fn)(void *ctx, uint32_t type, uint64_t offset, uint64_t value);

/* Walks the RELA entries naming sym (at most 1 << 20 entries looked at): 1 when fn stopped
 * it, else 0. */
int ember_elf_relocations(const struct ember_elf_image *f, const char *sym,
                          ember_elf_relocation_fn fn, void *ctx);

/* How code reaches a thread-local variable (the same numbers as bpf/thread_ctx.h's modes). */
enum ember_elf_tls_mode {
	EMBER_ELF_TLS_LE = 1, /* the executable's own: thread pointer + offset */
	EMBER_ELF_TLS_IE,     /* a GOT slot with its offset from the thread pointer */
	EMBER_ELF_TLS_DESC,   /* a TLS descriptor {entry, argument} */
	EMBER_ELF_TLS_GD,     /* a GOT pair {module id, offset in the module's block} */
};

struct ember_elf_tls_ref {
	uint8_t mode;   /* enum ember_elf_tls_mode */
	uint64_t slot;  /* the GOT slot's ELF address (not LE) */
	int64_t offset; /* LE: from the thread pointer (negative) */
};

/*
 * How this file's code reaches the thread-local variable sym (defined here, value
 * st_value): by a relocation naming it, a TLS descriptor first, then a GD pair, then an IE
 * slot (whichever module defines it, the dynamic linker points these at the definition
 * that wins); else, in a program that defines it, at its static offset. 0, or -ENOENT.
 */
int ember_elf_tls_ref(const struct ember_elf_image *f, const char *sym, uint64_t st_value,
                      struct ember_elf_tls_ref *out);
/* The offset from the thread pointer of a program's own thread-local variable of value
 * st_value (its static TLS, local exec): 0, or -ENOENT (no PT_TLS, not a program). */
int ember_elf_tls_static(const struct ember_elf_image *f, uint64_t st_value, int64_t *offset);

/* The file bytes of the section named name (bounded by the file): 0, or -ENOENT. */
int ember_elf_image_section(const struct ember_elf_image *f, const char *name, const uint8_t **data,
                            size_t *len);

/* A parser of an ELF file's facts into out: 0, or a negative errno. */
typedef int (*ember_elf_reader)(Elf *elf, void *out);

/* Runs read on the ELF file open at fd (libelf's mapping of it), or on an image in memory
 * (tests, fuzzing): its result. */
int ember_elf_read_fd(int fd, ember_elf_reader read, void *out);
int ember_elf_read_memory(const void *image, size_t len, ember_elf_reader read, void *out);

/* The range [start, end) of the function sym (an interpreter's loop) in out: its symbol's
 * size, or without one the .eh_frame function starting at it; 0, or -ENOENT when it is no
 * function in code or is longer than max bytes. */
int ember_elf_function_range(const struct ember_elf_image *f, const struct ember_elf_sym *sym,
                             uint64_t max, uint64_t out[2]);

/* The signed 32-bit little-endian displacement at p. */
int32_t ember_elf_disp32(const uint8_t *p);

#endif
