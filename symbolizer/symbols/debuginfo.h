/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Separate debug information for a binary that carries none: the file named
 * by its GNU build id (/usr/lib/debug/.build-id/xx/rest.debug), the file
 * named by .gnu_debuglink (beside the binary, in .debug/, under
 * /usr/lib/debug), and MiniDebugInfo (an xz-compressed ELF with a symbol
 * table in .gnu_debugdata). The symbolizer cannot open files: the opener
 * asks the collector's broker. Everything read is hostile: sizes are capped
 * and a debug file must prove it belongs to the binary (same build id, or
 * the CRC the debug link names).
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_DEBUGINFO_H
#define EMBER_SYMBOLIZER_SYMBOLS_DEBUGINFO_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/symbols/elf_syms.h"

#define EMBER_MINIDEBUG_MAX_BYTES (64u << 20) /* decompressed .gnu_debugdata */
#define EMBER_MINIDEBUG_MAX_INPUT (16u << 20)

/* Opens debug files through the broker. Each returns a descriptor or a negative errno. */
struct ember_debug_opener {
	void *ctx;
	int (*by_build_id)(void *ctx, const char *build_id_hex);
	int (*by_debuglink)(void *ctx, const char *name); /* relative to the mapped file */
};

enum ember_debug_source {
	EMBER_DEBUG_NONE = 0,
	EMBER_DEBUG_SELF,          /* the binary has its own DWARF */
	EMBER_DEBUG_BUILD_ID,      /* /usr/lib/debug/.build-id/... */
	EMBER_DEBUG_DEBUGLINK,     /* .gnu_debuglink */
	EMBER_DEBUG_MINIDEBUGINFO, /* .gnu_debugdata: symbols only */
};

const char *ember_debug_source_name(enum ember_debug_source s);

struct ember_debugfile {
	Elf *elf;  /* the debug file, or NULL */
	void *mem; /* its bytes when decompressed in memory, else NULL */
	enum ember_debug_source source;
	struct ember_elf_syms syms; /* the debug file's symbols and headers */
	Elf *alt_elf;               /* the dwz supplementary file, or NULL */
	struct Dwarf *alt_dwarf;    /* its DWARF once opened (owned by the user of alt_elf) */
	bool alt_missing;           /* DWARF refers to a dwz file that could not be had */
	uint64_t rejected;          /* candidates that did not belong to the binary */
};

/*
 * Finds the debug file of the binary main_elf (whose symbols main describes):
 * build id first, then the debug link, then MiniDebugInfo. Returns 0 (out
 * filled), -ENOENT when there is none, or another negative errno.
 */
int ember_debugfile_find(Elf *main_elf, const struct ember_elf_syms *main,
                         const struct ember_debug_opener *op, struct ember_debugfile *out);

/*
 * Opens the dwz supplementary file named by elf's .gnu_debugaltlink, if it
 * has one, into out->alt_elf (or sets out->alt_missing).
 */
void ember_debugfile_find_alt(Elf *elf, const struct ember_debug_opener *op,
                              struct ember_debugfile *out);

void ember_debugfile_close(struct ember_debugfile *d);

/*
 * Decompresses the .gnu_debugdata section of elf (xz) into a malloc'd buffer.
 * Returns 0, -ENOENT when there is none, -E2BIG past the caps, -EBADMSG.
 */
int ember_minidebuginfo_extract(Elf *elf, void **out, size_t *out_len);

#endif
