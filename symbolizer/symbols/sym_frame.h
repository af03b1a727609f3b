/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One symbolized frame as the readers of debug information (DWARF,
 * .gopclntab) return it. An address yields a chain of frames: the innermost
 * inlined function first, the function that really contains the address
 * last. The strings point into the reader's own data and stay valid while
 * the reader (and so the cache entry that owns it) lives.
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_SYM_FRAME_H
#define EMBER_SYMBOLIZER_SYMBOLS_SYM_FRAME_H

#include <stdint.h>

#define EMBER_SYM_MAX_FRAMES 32 /* inline depth kept; deeper chains are cut */

struct ember_sym_frame {
	const char *name;      /* as the file spells it (mangled), or NULL: unknown */
	const char *file;      /* source file of the position in this frame, or NULL */
	uint32_t line;         /* 0: unknown */
	uint32_t decl_line;    /* first line of the function, 0: unknown */
	const char *decl_file; /* file declaring the function, or NULL */
};

/* The longest name copied into a frames' buffer, its NUL included. */
#define EMBER_SYM_NAME_COPY 4097

struct ember_sym_frames {
	struct ember_sym_frame f[EMBER_SYM_MAX_FRAMES];
	uint32_t n;
	/* A symbol table's name read from the mapped file (ember_elf_syms_load_mapped) is
	 * copied here, bounded by its section: a file rewritten in place while it is mapped
	 * cannot make a name run on past it. One per lookup (the outermost frame's). */
	char name_copy[EMBER_SYM_NAME_COPY];
};

#endif
