/* SPDX-License-Identifier: Apache-2.0 */
/* Where a function of the test process itself sits in its ELF file, for the symbol tests. */
#ifndef EMBER_TESTS_SELF_ELF_H
#define EMBER_TESTS_SELF_ELF_H

#include <check.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "symbolizer/symbols/elf_syms.h"
#include "symbolizer/process/maps_parser.h"

/* The ELF virtual address of fn, found through this process's mapping of the file syms reads. */
static inline uint64_t self_elf_addr_of(const struct ember_elf_syms *syms, const void *fn)
{
	int fd = open("/proc/self/maps", O_RDONLY);
	struct ember_maps m;
	const struct ember_map_entry *e;
	char *text;
	long len = ember_maps_read_fd(fd, &text);
	uint64_t vaddr = 0;

	close(fd);
	ck_assert_int_eq(ember_maps_parse(text, (size_t)len, &m), 0);
	e = ember_maps_find(&m, (uint64_t)(uintptr_t)fn);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(
	    ember_elf_offset_to_vaddr(syms, (uint64_t)(uintptr_t)fn - e->start + e->offset, &vaddr),
	    0);
	ember_maps_free(&m);
	free(text);
	return vaddr;
}

#endif
