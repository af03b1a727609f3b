/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer's allocator: glibc's, with every block charged to the owner
 * the allocating thread works for (mem_owners.h). It defines malloc, free,
 * calloc, realloc, reallocarray, the aligned allocators and
 * malloc_usable_size, which every library in the process then uses (ELF
 * symbol interposition, as glibc's manual describes for replacing malloc),
 * and puts a 16-byte header before each block: its owner and the bytes it
 * was charged (glibc's usable size and chunk header), so that a block freed
 * on another thread, or after its owner changed (ember_mem_give), is given
 * back exactly.
 *
 * Link it into programs only (ember-symbolizer, tests of the accounting),
 * never into a library, and never with a sanitizer, which has an allocator
 * of its own. A pointer that does not carry the header's magic when freed
 * ends the process (abort): the heap is corrupt.
 */
#ifndef EMBER_SYMBOLIZER_MEMORY_COUNTING_MALLOC_H
#define EMBER_SYMBOLIZER_MEMORY_COUNTING_MALLOC_H

#include <stddef.h>

/* The bytes a block costs beyond what was asked: the header and glibc's chunk overhead. */
#define EMBER_COUNTING_MALLOC_OVERHEAD 24

#endif
