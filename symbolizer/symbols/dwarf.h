/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Source lines and inline frames from DWARF, read with libdw. The compile
 * units' address ranges are read when the file is opened; a unit's
 * functions and inlined calls are turned into a flat table of disjoint
 * address ranges (each naming its deepest inline instance) the first time
 * an address falls into that unit, so a lookup is two binary searches and a
 * walk up the inline chain. File names are absolute where the unit's
 * DW_AT_comp_dir makes them so. The input is hostile: libdw bounds-checks the
 * encoding, and the work spent on DIEs, ranges and depth is capped per file.
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_DWARF_H
#define EMBER_SYMBOLIZER_SYMBOLS_DWARF_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/symbols/sym_frame.h"

#define EMBER_DWARF_MAX_UNITS       (1u << 20)
#define EMBER_DWARF_MAX_DIES        (32u << 20) /* per file, over all units */
#define EMBER_DWARF_MAX_CU_RANGES   (1u << 20)  /* unit address ranges kept, per file */
#define EMBER_DWARF_MAX_UNIT_RANGES (2u << 20)  /* ranges of one unit's functions */
#define EMBER_DWARF_MAX_FILE_RANGES (16u << 20) /* ... per file, over all units */
#define EMBER_DWARF_MAX_DEPTH       256         /* DIE nesting followed */
#define EMBER_DWARF_MAX_DIE_RANGES  4096        /* ranges read per DIE */
#define EMBER_DWARF_MAX_PATHS       (1u << 20)  /* relative file names joined with comp_dir */
#define EMBER_DWARF_MAX_PATH        4096        /* bytes of a directory or name joined */
/* Compressed debug sections libdw inflates into memory when it opens a file
 * (with its dwz file): a few megabytes of zlib can claim gigabytes. */
#define EMBER_DWARF_MAX_INFLATED (256ull << 20)

typedef struct Dwarf Dwarf;
typedef struct Elf Elf;
struct ember_dwarf;

/*
 * Opens the DWARF of elf (which must outlive the handle); alt is the dwz
 * supplementary file's DWARF or NULL. Returns 0, -ENODATA when the file has
 * no usable DWARF, or another negative errno.
 */
int ember_dwarf_open(Elf *elf, Dwarf *alt, struct ember_dwarf **out);
/*
 * Same, giving up with -ENOBUFS once opening has taken more than max_bytes of
 * heap: measured (the calling thread's owner's count, mem_owners.h) after the
 * sections are read and after each unit, else estimated per unit. SIZE_MAX:
 * no limit.
 */
int ember_dwarf_open_within(Elf *elf, Dwarf *alt, size_t max_bytes, struct ember_dwarf **out);
/* Heap a unit costs libdw and this module when it is read (when nothing measures). */
#define EMBER_DWARF_UNIT_BYTES 2048
void ember_dwarf_close(struct ember_dwarf *d);

/*
 * Fills out with the inline chain at addr (an ELF virtual address). Returns
 * 0 when the address lies in a unit with line information (frames may still
 * lack names: the caller then names the outermost from the symbol table),
 * -ENOENT when DWARF does not cover addr, or -E2BIG when a work cap was hit.
 */
int ember_dwarf_lookup(struct ember_dwarf *d, uint64_t addr, struct ember_sym_frames *out);

/*
 * Heap that expanding the unit addr falls in is estimated to take (its
 * functions' table, libdw's line table and caches: at most 13 times the
 * unit's DIE bytes measured, CPython's ceval.c 6.4 MiB of 0.5 MB), or 0 when
 * nothing is to expand (no unit covers addr, or it is expanded already).
 */
size_t ember_dwarf_expand_cost(struct ember_dwarf *d, uint64_t addr);
#define EMBER_DWARF_EXPAND_PER_DIE_BYTE 14
/*
 * ember_dwarf_lookup, expanding the unit only if its estimated cost is at
 * most max_bytes: -ENOBUFS when it is not (nothing is read then, the line
 * table neither). SIZE_MAX: no limit.
 */
int ember_dwarf_lookup_within(struct ember_dwarf *d, uint64_t addr, size_t max_bytes,
                              struct ember_sym_frames *out);

/* Memory held by the handle's own tables, growing as units are expanded. */
size_t ember_dwarf_bytes(const struct ember_dwarf *d);
/* Bytes of the image its compressed sections were inflated into (debug_image.h), or 0. */
size_t ember_dwarf_image_bytes(const struct ember_dwarf *d);
/* Units whose DIEs were malformed or over a cap. */
uint64_t ember_dwarf_errors(const struct ember_dwarf *d);

#endif
