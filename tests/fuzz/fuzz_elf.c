// SPDX-License-Identifier: Apache-2.0
/*
 * ELF headers, notes (GNU and Go build ids), .gnu_debuglink, symbol tables
 * and PLT names, .gopclntab inside an ELF file, DWARF through libdw (lines,
 * inline records), MiniDebugInfo and separate debug files: everything ember
 * reads from a mapped file.
 *
 * The first byte picks the entry point, the rest is the input:
 *   0  a file opened from memory (ember_objfile_open_mem)
 *   1  the same with its section header table removed (what sstrip leaves):
 *      symbols through PT_DYNAMIC, Go tables found by scanning segments
 *   2  MAIN_LEN (4 bytes, little-endian), a file of that length, then a
 *      debug file the broker would hand over for its build id
 *   3  the same, the debug file found through .gnu_debuglink (no build id)
 * Modes 2 and 3 open the files as descriptors (memfds), as the symbolizer
 * does, and the debug file also answers for a dwz supplementary file.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolizer/symbols/objfile.h"

enum { MODE_MEMORY, MODE_NO_SECTIONS, MODE_BUILD_ID, MODE_DEBUGLINK, MODES };

struct debug_part {
	const uint8_t *data;
	size_t len;
};

static int memfd_of(const uint8_t *data, size_t len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, data + off, len - off);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	return fd;
}

static int open_debug(void *ctx, const char *unused)
{
	const struct debug_part *d = ctx;
	int fd;

	(void)unused;
	fd = memfd_of(d->data, d->len);
	return fd < 0 ? -ENOENT : fd;
}

static void lookups(struct ember_objfile *o)
{
	struct ember_sym_frames fr;

	/* Addresses in and around every loadable segment. */
	for (size_t i = 0; i < o->syms.nsegments; i++) {
		const struct ember_elf_segment *s = &o->syms.segments[i];
		uint64_t step = s->memsz / 64 + 1;

		/* Half within a limit: the expansion's estimate reads the hostile unit headers. */
		for (uint64_t k = 0; k <= 64; k++)
			if (k & 1)
				ember_objfile_lookup_within(
				    o, s->vaddr + k * step,
				    ember_objfile_expand_cost(o, s->vaddr + k * step) / 2, &fr);
			else
				ember_objfile_lookup(o, s->vaddr + k * step, &fr);
	}
	/* Inside every symbol's range, and just past it. */
	for (size_t i = 0; i < o->syms.nsyms && i < 256; i++) {
		ember_objfile_lookup(o, o->syms.syms[i].addr + 1, &fr);
		ember_objfile_lookup(o, o->syms.syms[i].addr + o->syms.syms[i].size, &fr);
	}
}

/* What sstrip does: no section header table. */
static void drop_section_headers(uint8_t *img, size_t len)
{
	if (len >= sizeof(Elf64_Ehdr) && img[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr *eh = (Elf64_Ehdr *)img;

		eh->e_shoff = 0;
		eh->e_shnum = 0;
		eh->e_shstrndx = 0;
	} else if (len >= sizeof(Elf32_Ehdr)) {
		Elf32_Ehdr *eh = (Elf32_Ehdr *)img;

		eh->e_shoff = 0;
		eh->e_shnum = 0;
		eh->e_shstrndx = 0;
	}
}

static void with_debug_file(const uint8_t *data, size_t size, bool by_build_id)
{
	struct debug_part debug;
	struct ember_debug_opener op = {&debug, by_build_id ? open_debug : NULL, open_debug};
	static const struct ember_objfile_room room[] = {
	    {.kept = SIZE_MAX, .transient = SIZE_MAX},
	    {.kept = 64 << 10, .transient = 256 << 10},
	};
	struct ember_objfile o;
	uint32_t main_len;
	int fd;

	if (size < 4)
		return;
	memcpy(&main_len, data, 4);
	data += 4;
	size -= 4;
	if (main_len > size)
		main_len = (uint32_t)size;
	debug.data = data + main_len;
	debug.len = size - main_len;
	fd = memfd_of(data, main_len);
	if (fd < 0)
		return;
	/* Read within a room (the admission estimates read the hostile section headers): all
	 * of it, or a small one that defers pieces, as the length's low bit says. */
	if (!ember_objfile_open_within(fd, &op, &room[main_len & 1], &o)) {
		lookups(&o);
		ember_objfile_close(&o);
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_objfile o;
	uint8_t *copy;
	int mode;

	if (!size)
		return 0;
	mode = data[0] % MODES;
	data++;
	size--;
	if (mode == MODE_BUILD_ID || mode == MODE_DEBUGLINK) {
		with_debug_file(data, size, mode == MODE_BUILD_ID);
		return 0;
	}
	/* libelf may keep pointers into the image: give it a private copy. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (mode == MODE_NO_SECTIONS)
		drop_section_headers(copy, size);
	if (!ember_objfile_open_mem(copy, size, &o)) {
		lookups(&o);
		ember_objfile_close(&o);
	}
	free(copy);
	return 0;
}
