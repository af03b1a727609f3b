// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/objfile.h"

#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/param.h>
#include <unistd.h>

#include "symbolizer/memory/mem_owners.h"

/* The size a .zdebug section (GNU compression: "ZLIB", big-endian size) inflates to. */
static uint64_t zdebug_size(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
	size_t shstrndx;
	const char *name;
	Elf_Data *d;
	const uint8_t *p;
	uint64_t size = 0;

	if (elf_getshdrstrndx(elf, &shstrndx) || !(name = elf_strptr(elf, shstrndx, sh->sh_name)) ||
	    strncmp(name, ".zdebug", 7) || !(d = elf_rawdata(scn, NULL)) || !d->d_buf ||
	    d->d_size < 12 || memcmp(d->d_buf, "ZLIB", 4))
		return 0;
	p = (const uint8_t *)d->d_buf + 4;
	for (int i = 0; i < 8; i++)
		size = size << 8 | p[i];
	return size;
}

/* The size a section inflates to (SHF_COMPRESSED or .zdebug), or 0 when it is not compressed. */
static uint64_t inflated_size(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
	GElf_Chdr ch;

	if (sh->sh_flags & SHF_COMPRESSED)
		return gelf_getchdr(scn, &ch) ? ch.ch_size : 0;
	return zdebug_size(elf, scn, sh);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/*
 * Heap libdw will hold for elf's compressed debug sections once it reads
 * them (it inflates whole sections when it opens the file): checked against
 * a cap before, and counted in the cache's accounting after.
 */
static uint64_t inflated_bytes(Elf *elf)
{
	Elf_Scn *scn = NULL;
	uint64_t total = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS)
			total = add_sat(total, inflated_size(elf, scn, &sh));
	}
	return total;
}

/* Sections opening the DWARF reads in place (the units' headers, their abbreviations and
 * address ranges): their pages become resident until given back. */
static bool read_at_open(const char *name)
{
	static const char *const names[] = {"info",     "abbrev",      "aranges", "ranges",
	                                    "rnglists", "str_offsets", "addr"};

	if (!strncmp(name, ".zdebug_", 8))
		name += 8;
	else if (!strncmp(name, ".debug_", 7))
		name += 7;
	else
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

static void add_dwarf_cost(Elf *elf, struct ember_objfile_cost *c)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		uint64_t inflated;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		inflated = inflated_size(elf, scn, &sh);
		c->dwarf_heap = add_sat(c->dwarf_heap, inflated);
		if (!inflated && read_at_open(name))
			c->dwarf_pages = add_sat(c->dwarf_pages, sh.sh_size);
		/* The units libdw reads cost it (and us) some heap each: a quarter of the
		 * unit data is what large files measured (glibc's: 5.5 MiB of units, 3.8 MiB
		 * beyond the inflated sections; CPython's: 8.8 MiB, 1.1 MiB). */
		if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info"))
			c->dwarf_heap =
			    add_sat(c->dwarf_heap, (inflated ? inflated : sh.sh_size) / 4);
	}
}

void ember_objfile_dwarf_cost(Elf *elf, Elf *alt, struct ember_objfile_cost *c)
{
	c->dwarf_heap = c->dwarf_pages = 0;
	add_dwarf_cost(elf, c);
	add_dwarf_cost(alt, c);
}

void ember_objfile_syms_cost(Elf *elf, struct ember_objfile_cost *c)
{
	Elf_Scn *scn = NULL, *best = NULL;
	GElf_Shdr sh, best_sh = {0};

	c->syms = 0;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) &&
		    (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !best))) {
			best = scn;
			best_sh = sh;
		}
	if (!best || best_sh.sh_type == SHT_NOBITS)
		return;
	/* Each ELF symbol (24 bytes) becomes a candidate, then a range: three copies at
	 * most at once. The names stay in the file (ember_elf_syms_load_mapped) but for
	 * those made or cut here: an eighth of the string table is ample. */
	c->syms = best_sh.sh_size > UINT64_MAX / 3 ? UINT64_MAX : best_sh.sh_size * 3;
	scn = elf_getscn(elf, best_sh.sh_link);
	if (scn && gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS)
		c->syms = add_sat(c->syms, sh.sh_size / 8);
}

/* Whether cost fits room's transient part, after asking for more room when it does not. */
static bool fits_now(struct ember_objfile_room *room, uint64_t cost)
{
	if (cost > room->transient && room->make_way)
		room->transient += MIN(room->make_way(room->ctx, cost - room->transient),
		                       SIZE_MAX - room->transient);
	return cost <= room->transient;
}

/* Whether the DWARF of elf (with alt_elf) fits room; when it does not, it is deferred. */
static bool dwarf_fits(struct ember_objfile *o, Elf *elf, Elf *alt_elf,
                       struct ember_objfile_room *room, size_t *max_heap)
{
	struct ember_objfile_cost c;

	*max_heap = SIZE_MAX;
	if (!room)
		return true;
	ember_objfile_dwarf_cost(elf, alt_elf, &c);
	o->dwarf_cost = add_sat(c.dwarf_heap, c.dwarf_pages);
	if (c.dwarf_heap > room->kept || !fits_now(room, o->dwarf_cost)) {
		o->dwarf_deferred = true;
		return false;
	}
	/* What libdw measurably takes is held to the room too: the estimate may be low. */
	*max_heap = MIN(room->kept, room->transient - c.dwarf_pages);
	return true;
}

static int open_dwarf(struct ember_objfile *o, Elf *elf, Elf *alt_elf, enum ember_debug_source src,
                      struct ember_objfile_room *room)
{
	uint64_t inflated = inflated_bytes(elf);
	Dwarf *alt = NULL;
	size_t max_heap;
	int err;

	if (alt_elf)
		inflated += inflated_bytes(alt_elf) < EMBER_DWARF_MAX_INFLATED
		                ? inflated_bytes(alt_elf)
		                : EMBER_DWARF_MAX_INFLATED;
	if (inflated > EMBER_DWARF_MAX_INFLATED) {
		o->open_errors++;
		return -E2BIG;
	}
	if (!dwarf_fits(o, elf, alt_elf, room, &max_heap))
		return -ENOBUFS;
	if (alt_elf) {
		alt = dwarf_begin_elf(alt_elf, DWARF_C_READ, NULL);
		if (!alt)
			return -ENODATA;
	}
	err = ember_dwarf_open_within(elf, alt, max_heap, &o->dwarf);
	if (err) {
		o->dwarf_deferred = err == -ENOBUFS;
		/* libelf keeps what libdw inflated with the section, past dwarf_end. */
		if (o->dwarf_deferred && inflated)
			o->inflated_left = elf;
		if (alt)
			dwarf_end(alt);
		return err;
	}
	o->dwarf_source = src;
	o->dwarf_heap = (size_t)inflated;
	/* The alt handle is ended with the main one's owner below. */
	o->debug.alt_dwarf = alt;
	return 0;
}

/* DWARF of the file itself, else of a separate debug file. */
static void find_debug_info(struct ember_objfile *o, const struct ember_debug_opener *op,
                            struct ember_objfile_room *room)
{
	static const struct ember_debug_opener none = {0};

	if (!op)
		op = &none;
	if (o->syms.has_debug_info) {
		struct ember_debugfile alt = {0};

		/* dwz: without its supplementary file the DWARF cannot be read safely. */
		ember_debugfile_find_alt(o->elf, op, &alt);
		if (!alt.alt_missing &&
		    !open_dwarf(o, o->elf, alt.alt_elf, EMBER_DEBUG_SELF, room)) {
			o->debug.alt_elf = alt.alt_elf;
			return;
		}
		ember_debugfile_close(&alt);
		return;
	}
	if (ember_debugfile_find(o->elf, &o->syms, op, &o->debug))
		return;
	if (o->debug.source != EMBER_DEBUG_MINIDEBUGINFO && !o->debug.alt_missing)
		open_dwarf(o, o->debug.elf, o->debug.alt_elf, o->debug.source, room);
}

/*
 * A DWARF given up for room after libdw inflated its sections leaves them
 * with the libelf handle (tens of MiB for a large debug file): the handle
 * goes. The symbols are copies; the file itself is mapped again from fd, a
 * debug file is not needed any more (it is read again with its DWARF).
 */
static void drop_inflated(struct ember_objfile *o, int fd)
{
	Elf *again;

	if (!o->inflated_left)
		return;
	if (o->inflated_left == o->elf) {
		again = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
		/* The names left in the file move to the new mapping, or the old one stays. */
		if (again && ember_elf_syms_rebind(&o->syms, again)) {
			elf_end(again);
			again = NULL;
		}
		if (again) {
			elf_cntl(again, ELF_C_FDDONE);
			elf_end(o->elf);
			o->elf = again;
		}
	} else if (!o->debug.mem) {
		elf_end(o->debug.elf);
		o->debug.elf = NULL;
	}
	if (o->debug.alt_elf && !o->dwarf) {
		elf_end(o->debug.alt_elf);
		o->debug.alt_elf = NULL;
	}
	o->inflated_left = NULL;
}

static int open_elf(struct ember_objfile *o, const struct ember_debug_opener *op,
                    struct ember_objfile_room *room)
{
	struct ember_objfile_cost cost;
	size_t len;
	const uint8_t *raw;
	int err;

	if (elf_kind(o->elf) != ELF_K_ELF)
		return -ENOEXEC;
	if (room) {
		ember_objfile_syms_cost(o->elf, &cost);
		if (!fits_now(room, cost.syms))
			return -ENOBUFS;
	}
	err = ember_elf_syms_load_mapped(o->elf, &o->syms);
	if (err)
		return err;
	raw = (const uint8_t *)elf_rawfile(o->elf, &len);
	if (raw && o->syms.go.is_go)
		o->has_go = !ember_gopclntab_open(raw, len, &o->syms, &o->go);
	/* Go's own table is exact and cheaper than Go's DWARF. */
	if (!o->has_go && room) {
		/* What the symbols keep is no longer room. */
		struct ember_objfile_room left = *room;

		left.kept -= MIN(left.kept, o->syms.bytes);
		left.transient -= MIN(left.transient, o->syms.bytes);
		find_debug_info(o, op, &left);
	} else if (!o->has_go) {
		find_debug_info(o, op, NULL);
	}
	return 0;
}

int ember_objfile_open(int fd, const struct ember_debug_opener *op, struct ember_objfile *out)
{
	return ember_objfile_open_within(fd, op, NULL, out);
}

int ember_objfile_open_within(int fd, const struct ember_debug_opener *op,
                              const struct ember_objfile_room *room, struct ember_objfile *out)
{
	struct ember_objfile_room r = room ? *room : (struct ember_objfile_room){0};
	int err;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ELIBBAD;
	out->has_id = !ember_file_id_fd(fd, &out->id);
	out->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!out->elf)
		return -ENOEXEC;
	elf_cntl(out->elf, ELF_C_FDDONE); /* mapped: the descriptor is not needed */
	err = open_elf(out, op, room ? &r : NULL);
	if (!err)
		drop_inflated(out, fd);
	if (err)
		ember_objfile_close(out);
	return err;
}

int ember_objfile_open_mem(const void *data, size_t len, struct ember_objfile *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ELIBBAD;
	out->has_id = !ember_file_id_mem(data, len, &out->id);
	out->mem_image = true;
	out->elf = elf_memory((char *)data, len);
	if (!out->elf)
		return -ENOEXEC;
	err = open_elf(out, NULL, NULL);
	if (err)
		ember_objfile_close(out);
	return err;
}

void ember_objfile_close(struct ember_objfile *o)
{
	ember_dwarf_close(o->dwarf);
	if (o->debug.alt_dwarf)
		dwarf_end(o->debug.alt_dwarf);
	ember_debugfile_close(&o->debug);
	ember_elf_syms_free(&o->syms);
	if (o->elf)
		elf_end(o->elf);
	memset(o, 0, sizeof(*o));
}

/* The symbol table with the most to say: the debug file's when ours is only .dynsym. */
static const struct ember_elf_syms *best_syms(const struct ember_objfile *o)
{
	if (!o->syms.has_symtab && o->debug.syms.nsyms)
		return &o->debug.syms;
	return &o->syms;
}

/* The symbol table's name for vaddr, copied into out's buffer (it may be in the mapped file). */
static const char *symtab_name(const struct ember_objfile *o, uint64_t vaddr,
                               struct ember_sym_frames *out)
{
	const struct ember_elf_syms *s = best_syms(o);
	const struct ember_elf_sym *sym = ember_elf_syms_lookup(s, vaddr);

	if (!sym && s != &o->syms)
		sym = ember_elf_syms_lookup(s = &o->syms, vaddr);
	return sym ? ember_elf_sym_name_copy(s, sym, out->name_copy, sizeof(out->name_copy)) : NULL;
}

/* Code lives in loadable segments; anything else is not an address of this file. */
static bool in_loaded_segment(const struct ember_elf_syms *s, uint64_t vaddr)
{
	for (size_t i = 0; i < s->nsegments; i++)
		if (vaddr >= s->segments[i].vaddr &&
		    vaddr - s->segments[i].vaddr < s->segments[i].memsz)
			return true;
	return false;
}

enum ember_sym_origin ember_objfile_lookup(struct ember_objfile *o, uint64_t vaddr,
                                           struct ember_sym_frames *out)
{
	return ember_objfile_lookup_within(o, vaddr, SIZE_MAX, out);
}

size_t ember_objfile_expand_cost(struct ember_objfile *o, uint64_t vaddr)
{
	if (!o->dwarf || !in_loaded_segment(&o->syms, vaddr))
		return 0;
	return ember_dwarf_expand_cost(o->dwarf, vaddr);
}

enum ember_sym_origin ember_objfile_lookup_within(struct ember_objfile *o, uint64_t vaddr,
                                                  size_t max_expand, struct ember_sym_frames *out)
{
	struct ember_sym_frame *outer;
	const char *name;

	out->n = 0;
	if (!in_loaded_segment(&o->syms, vaddr))
		return EMBER_SYM_NONE;
	if (o->has_go && !ember_gopclntab_lookup(&o->go, vaddr, out) && out->n &&
	    out->f[out->n - 1].name)
		return EMBER_SYM_GO;
	if (o->dwarf && !ember_dwarf_lookup_within(o->dwarf, vaddr, max_expand, out) && out->n) {
		outer = &out->f[out->n - 1];
		if (!outer->name)
			outer->name = symtab_name(o, vaddr, out);
		/* Inner frames without a name would read as garbage: cut them. */
		for (uint32_t i = 0; i + 1 < out->n; i++)
			if (!out->f[i].name)
				out->f[i].name = "[inlined]";
		if (outer->name)
			return EMBER_SYM_DWARF;
	}
	name = symtab_name(o, vaddr, out);
	if (!name) {
		out->n = 0;
		return EMBER_SYM_NONE;
	}
	memset(&out->f[0], 0, sizeof(out->f[0]));
	out->f[0].name = name;
	out->n = 1;
	return EMBER_SYM_SYMTAB;
}

/*
 * Gives back the pages of elf's file that reading it brought in. Only a
 * mapping libelf made (ELF_C_READ_MMAP maps PROT_READ, MAP_PRIVATE, so
 * nothing in it was ever written: a page dropped comes back from the page
 * cache as it was): its start is page-aligned and it is at least
 * EMBER_MEM_MMAP_THRESHOLD long, which a heap block (libelf reads a file it
 * cannot map into one) never is: glibc maps large blocks on their own, behind
 * a header. Smaller files are left alone.
 */
static void release_pages(Elf *elf)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 0;
	char *raw = elf ? elf_rawfile(elf, &len) : NULL;

	if (raw && len >= EMBER_MEM_MMAP_THRESHOLD && !((uintptr_t)raw & (page - 1)))
		madvise(raw, len, MADV_DONTNEED);
}

void ember_objfile_release_pages(const struct ember_objfile *o)
{
	/* MiniDebugInfo lives on the heap (debug.mem). */
	if (!o->mem_image)
		release_pages(o->elf);
	if (!o->debug.mem)
		release_pages(o->debug.elf);
	release_pages(o->debug.alt_elf);
}

int ember_objfile_reset_dwarf(struct ember_objfile *o)
{
	Elf *elf = o->dwarf_source == EMBER_DEBUG_SELF ? o->elf : o->debug.elf;

	if (!o->dwarf)
		return -ENODATA;
	ember_dwarf_close(o->dwarf);
	o->dwarf = NULL;
	if (o->debug.alt_dwarf)
		dwarf_end(o->debug.alt_dwarf);
	o->debug.alt_dwarf = NULL;
	o->dwarf_resets++;
	return open_dwarf(o, elf, o->debug.alt_elf, o->dwarf_source, NULL);
}

size_t ember_objfile_bytes(const struct ember_objfile *o)
{
	return sizeof(*o) + o->syms.bytes + o->debug.syms.bytes + ember_dwarf_bytes(o->dwarf) +
	       o->dwarf_heap;
}

uint64_t ember_objfile_errors(const struct ember_objfile *o)
{
	return o->lookup_errors + o->open_errors + ember_dwarf_errors(o->dwarf) +
	       (o->has_go ? o->go.errors : 0);
}

static bool image_holds(Elf *elf, uintptr_t addr)
{
	size_t size = 0;
	char *base = elf ? elf_rawfile(elf, &size) : NULL;

	return base && addr - (uintptr_t)base < size;
}

bool ember_objfile_maps(const struct ember_objfile *o, uintptr_t addr)
{
	return image_holds(o->elf, addr) || image_holds(o->debug.elf, addr) ||
	       image_holds(o->debug.alt_elf, addr);
}
