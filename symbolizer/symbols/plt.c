// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/plt.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/sorted.h"
#include "shared/vec.h"

/* Relocations scanned per file, kept or not: a bound on the time a hostile table costs. */
#define MAX_RELOCS_SCANNED (16u << 20)
#define MAX_NAME           1024 /* bytes of a target's name kept before "@plt" */

/* Dynamic relocation types that fill a GOT slot a PLT entry jumps through. */
#define X86_64_GLOB_DAT   6
#define X86_64_JUMP_SLOT  7
#define X86_64_IRELATIVE  37
#define AARCH64_GLOB_DAT  1025
#define AARCH64_JUMP_SLOT 1026
#define AARCH64_IRELATIVE 1032

struct reloc {
	uint64_t slot;    /* address of the GOT slot */
	uint64_t addend;  /* the resolver, for IRELATIVE */
	const char *name; /* the target's name (libelf's data), or NULL */
	bool irelative;
};

struct relocs {
	struct reloc *by_slot; /* sorted by slot */
	size_t nslot, slot_cap;
	struct reloc *jmprel; /* .rela.plt in order: x86-64 lazy entries push an index into it */
	size_t njmprel, jmprel_cap;
	size_t scanned;
};

struct plt_reader {
	Elf *elf;
	uint16_t machine;
	const struct ember_plt_sink *sink;
	struct relocs r;
	size_t entries;
	/* A run of unnamed entries, reported as one "[plt]" range. */
	uint64_t unknown_start, unknown_end;
};

static int push_reloc(struct reloc **v, size_t *n, size_t *cap, const struct reloc *r)
{
	int err = EMBER_ENSURE(*v, *cap, *n + 1, EMBER_PLT_MAX_RELOCS);

	if (!err)
		(*v)[(*n)++] = *r;
	return err;
}

static bool slot_type(uint16_t machine, uint32_t type, bool *irelative)
{
	*irelative = false;
	switch (machine) {
	case EM_X86_64:
		*irelative = type == X86_64_IRELATIVE;
		return type == X86_64_JUMP_SLOT || type == X86_64_GLOB_DAT || *irelative;
	case EM_AARCH64:
		*irelative = type == AARCH64_IRELATIVE;
		return type == AARCH64_JUMP_SLOT || type == AARCH64_GLOB_DAT || *irelative;
	default:
		return false;
	}
}

/* The name of symbol idx of the symbol table in section symscn, or NULL. */
static const char *symbol_name(Elf *elf, Elf_Scn *symscn, Elf_Data *syms, size_t link, size_t idx)
{
	GElf_Sym sym;
	const char *name;

	if (!symscn || !syms || !idx || !gelf_getsym(syms, (int)idx, &sym))
		return NULL;
	name = elf_strptr(elf, link, sym.st_name);
	return name && *name ? name : NULL;
}

static int read_reloc_section(struct plt_reader *p, Elf_Scn *scn, const GElf_Shdr *sh,
                              bool is_jmprel)
{
	Elf_Data *data = elf_getdata(scn, NULL), *syms = NULL;
	Elf_Scn *symscn = elf_getscn(p->elf, sh->sh_link);
	GElf_Shdr symsh;
	size_t n;
	bool native;
	int err = 0;

	if (!data || !data->d_buf || !sh->sh_entsize)
		return 0;
	/* Read in place when libelf holds them as Elf64_Rela already (the common
	 * case): a library's tens of thousands of relocations, one call each, cost. */
	native = sh->sh_type == SHT_RELA && data->d_type == ELF_T_RELA &&
	         gelf_getclass(p->elf) == ELFCLASS64 && sh->sh_entsize == sizeof(Elf64_Rela);
	if (symscn && gelf_getshdr(symscn, &symsh) &&
	    (symsh.sh_type == SHT_DYNSYM || symsh.sh_type == SHT_SYMTAB))
		syms = elf_getdata(symscn, NULL);
	else
		symscn = NULL;
	n = data->d_size / sh->sh_entsize;
	for (size_t i = 0; i < n && !err; i++) {
		struct reloc r = {0};
		uint64_t info;
		bool ok;

		if (++p->r.scanned > MAX_RELOCS_SCANNED)
			return 0;
		if (native) {
			const Elf64_Rela *e = (const Elf64_Rela *)data->d_buf + i;

			ok = true;
			r.slot = e->r_offset;
			r.addend = (uint64_t)e->r_addend;
			info = e->r_info;
		} else if (sh->sh_type == SHT_RELA) {
			GElf_Rela rela;

			ok = gelf_getrela(data, (int)i, &rela) != NULL;
			r.slot = rela.r_offset;
			r.addend = (uint64_t)rela.r_addend;
			info = rela.r_info;
		} else {
			GElf_Rel rel;

			ok = gelf_getrel(data, (int)i, &rel) != NULL;
			r.slot = rel.r_offset;
			info = rel.r_info;
		}
		if (!ok)
			break;
		if (!slot_type(p->machine, (uint32_t)GELF_R_TYPE(info), &r.irelative)) {
			r.slot = UINT64_MAX; /* keeps the index of later jump slots */
		} else {
			r.name = symbol_name(p->elf, symscn, syms, symscn ? symsh.sh_link : 0,
			                     GELF_R_SYM(info));
			err = push_reloc(&p->r.by_slot, &p->r.nslot, &p->r.slot_cap, &r);
		}
		if (!err && is_jmprel)
			err = push_reloc(&p->r.jmprel, &p->r.njmprel, &p->r.jmprel_cap, &r);
	}
	return err == -E2BIG ? 0 : err;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct reloc *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static const struct reloc *reloc_of_slot(const struct relocs *r, uint64_t slot)
{
	size_t lo = EMBER_LOWER_BOUND(r->by_slot, r->nslot, slot, slot);

	return lo < r->nslot && r->by_slot[lo].slot == slot ? &r->by_slot[lo] : NULL;
}

static int32_t rd_i32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	                 (uint32_t)p[3] << 24);
}

static uint32_t rd_u32(const uint8_t *p)
{
	return (uint32_t)rd_i32(p);
}

enum decoded { DECODED_NONE, DECODED_SLOT, DECODED_INDEX };

/*
 * An x86-64 PLT entry: [endbr64] [bnd] jmp *slot(%rip) (.plt, .plt.sec,
 * .plt.got), or endbr64; push $index; bnd jmp .plt (the lazy half of an IBT
 * PLT). The header pushes GOT+8 and jumps through GOT+16: no relocation.
 */
static enum decoded decode_x86_64(const uint8_t *b, size_t n, uint64_t addr, uint64_t *slot,
                                  uint32_t *index)
{
	bool have_index = false;

	for (size_t i = 0; i < n;) {
		if (i + 4 <= n && b[i] == 0xf3 && b[i + 1] == 0x0f && b[i + 2] == 0x1e &&
		    b[i + 3] == 0xfa) {
			i += 4; /* endbr64 */
		} else if (b[i] == 0xf2) {
			i++; /* bnd prefix */
		} else if (i + 6 <= n && b[i] == 0xff && b[i + 1] == 0x25) {
			*slot = addr + i + 6 + (uint64_t)(int64_t)rd_i32(b + i + 2);
			return DECODED_SLOT;
		} else if (i + 6 <= n && b[i] == 0xff && b[i + 1] == 0x35) {
			i += 6; /* push GOT+8(%rip): the header */
		} else if (i + 5 <= n && b[i] == 0x68) {
			*index = rd_u32(b + i + 1);
			have_index = true;
			i += 5;
		} else {
			break;
		}
	}
	return have_index ? DECODED_INDEX : DECODED_NONE;
}

/* AArch64: adrp x16, page; ldr x17, [x16, #off] at word i gives the slot. */
static bool decode_aarch64_at(const uint8_t *b, uint64_t addr, uint64_t *slot)
{
	uint32_t adrp = rd_u32(b), ldr = rd_u32(b + 4);
	uint64_t imm, page;

	if ((adrp & 0x9f00001fu) != 0x90000010u || (ldr & 0xffc003ffu) != 0xf9400211u)
		return false;
	imm = ((uint64_t)((adrp >> 5) & 0x7ffff) << 2 | ((adrp >> 29) & 3)) << 12;
	if (imm & (1ull << 32))
		imm |= ~((1ull << 33) - 1); /* sign-extend the 33-bit offset */
	page = (addr & ~0xfffull) + imm;
	*slot = page + (uint64_t)((ldr >> 10) & 0xfff) * 8;
	return true;
}

static int flush_unknown(struct plt_reader *p)
{
	int err = 0;

	if (p->unknown_end > p->unknown_start)
		err = p->sink->add(p->sink->ctx, p->unknown_start,
		                   p->unknown_end - p->unknown_start, EMBER_PLT_UNKNOWN);
	p->unknown_start = p->unknown_end = 0;
	return err;
}

static int report(struct plt_reader *p, uint64_t addr, uint64_t size, const struct reloc *r)
{
	char name[MAX_NAME + 8];
	const char *target = r ? r->name : NULL;
	int err;

	if (r && r->irelative && p->sink->name_at)
		target = p->sink->name_at(p->sink->ctx, r->addend);
	if (!target) {
		if (p->unknown_end != addr && (err = flush_unknown(p)))
			return err;
		if (p->unknown_end != addr)
			p->unknown_start = addr;
		p->unknown_end = addr + size;
		return 0;
	}
	/* Copied before the pending "[plt]" run is added: name_at's answer may
	 * point into the sink's names, which that addition can move. */
	snprintf(name, sizeof(name), "%.*s@plt", MAX_NAME, target);
	if ((err = flush_unknown(p)))
		return err;
	return p->sink->add(p->sink->ctx, addr, size, name);
}

static const struct reloc *jmprel_at(const struct relocs *r, uint32_t index)
{
	if (index >= r->njmprel || r->jmprel[index].slot == UINT64_MAX)
		return NULL;
	return &r->jmprel[index];
}

static int x86_64_section(struct plt_reader *p, const char *name, const GElf_Shdr *sh,
                          const uint8_t *b, size_t len)
{
	uint64_t es = sh->sh_entsize == 8 || sh->sh_entsize == 16 ? sh->sh_entsize
	              : !strcmp(name, ".plt.got")                 ? 8
	                                                          : 16;
	int err = 0;

	for (size_t off = 0; off + es <= len && !err; off += es) {
		const struct reloc *r = NULL;
		uint64_t slot, addr = sh->sh_addr + off;
		uint32_t index;

		if (++p->entries > EMBER_PLT_MAX_ENTRIES)
			break;
		switch (decode_x86_64(b + off, es, addr, &slot, &index)) {
		case DECODED_SLOT:
			r = reloc_of_slot(&p->r, slot);
			break;
		case DECODED_INDEX:
			r = jmprel_at(&p->r, index);
			break;
		default:
			break;
		}
		err = report(p, addr, es, r);
	}
	return err;
}

/* Entries start at each adrp/ldr pair (with a bti before it); the header is the first. */
static int aarch64_section(struct plt_reader *p, const GElf_Shdr *sh, const uint8_t *b, size_t len)
{
	uint64_t start = sh->sh_addr, slot = 0;
	bool have = false;
	int err = 0;

	for (size_t off = 0; off + 8 <= len && !err; off += 4) {
		uint64_t at = sh->sh_addr + off, next_slot;

		if (!decode_aarch64_at(b + off, at, &next_slot))
			continue;
		if (off >= 4 && rd_u32(b + off - 4) == 0xd503245fu) /* bti c */
			at -= 4;
		if (have && at > start) {
			if (++p->entries > EMBER_PLT_MAX_ENTRIES)
				return 0;
			err = report(p, start, at - start, reloc_of_slot(&p->r, slot));
			start = at;
		}
		have = true;
		slot = next_slot;
	}
	if (!err && have && sh->sh_addr + len > start)
		err = report(p, start, sh->sh_addr + len - start, reloc_of_slot(&p->r, slot));
	return err;
}

static bool is_plt_name(const char *name)
{
	return !strcmp(name, ".plt") || !strcmp(name, ".plt.sec") || !strcmp(name, ".plt.got") ||
	       !strcmp(name, ".iplt");
}

static int read_plt_section(struct plt_reader *p, Elf_Scn *scn, const GElf_Shdr *sh,
                            const char *name)
{
	Elf_Data *d = elf_rawdata(scn, NULL);

	if (!d || !d->d_buf || !d->d_size || sh->sh_addr > UINT64_MAX - d->d_size)
		return 0;
	switch (p->machine) {
	case EM_X86_64:
		return x86_64_section(p, name, sh, d->d_buf, d->d_size);
	case EM_AARCH64:
		return aarch64_section(p, sh, d->d_buf, d->d_size);
	default:
		return report(p, sh->sh_addr, d->d_size, NULL);
	}
}

int ember_plt_entries(Elf *elf, uint16_t machine, const struct ember_plt_sink *sink)
{
	struct plt_reader p = {.elf = elf, .machine = machine, .sink = sink};
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool any_plt = false, dyn_slots = false;
	int err = 0;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
		    (sh.sh_flags & SHF_EXECINSTR) &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) && is_plt_name(name)) {
			any_plt = true;
			dyn_slots |= !strcmp(name, ".plt.got") || !strcmp(name, ".iplt");
		}
	}
	if (!any_plt)
		return 0;
	/* Relocations first: each PLT entry is named after the slot it jumps through.
	 * .rela.plt fills the jump slots; the GOT slots of .plt.got are in .rela.dyn,
	 * and so are those of .iplt (lld: an IFUNC's IRELATIVE slot). */
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) && !err) {
		GElf_Shdr sh;
		const char *name;
		bool jmprel;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL) ||
		    !(sh.sh_flags & SHF_ALLOC) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		jmprel = !strcmp(name, ".rela.plt") || !strcmp(name, ".rel.plt");
		if (jmprel || dyn_slots)
			err = read_reloc_section(&p, scn, &sh, jmprel);
	}
	if (p.r.nslot > 1)
		qsort(p.r.by_slot, p.r.nslot, sizeof(*p.r.by_slot), cmp_slot);
	scn = NULL;
	while (!err && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) || !is_plt_name(name))
			continue;
		err = read_plt_section(&p, scn, &sh, name);
		if (!err)
			err = flush_unknown(&p);
	}
	free(p.r.by_slot);
	free(p.r.jmprel);
	return err;
}
