// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/dynsym.h"

#include <errno.h>
#include <libelf.h>
#include <stdbool.h>
#include <string.h>

#define MAX_GNU_BUCKETS (1u << 24)
#define NAME_REACH      4096 /* bytes of a name the caller reads at most */

struct dyn_tags {
	uint64_t symtab, strtab, strsz, syment, hash, gnu_hash;
};

struct image {
	const uint8_t *raw;
	size_t len;
	bool msb;  /* big-endian */
	bool is64; /* ELFCLASS64 */
};

/* The 32-bit word at file offset off, or false when it is outside the file. */
static bool rd_word(const struct image *im, uint64_t off, uint32_t *v)
{
	const uint8_t *p;

	if (off > im->len || im->len - off < 4)
		return false;
	p = im->raw + off;
	*v = im->msb ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
	             : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
	return true;
}

static int read_tags(Elf *elf, struct dyn_tags *t)
{
	size_t nph;
	bool found = false;

	memset(t, 0, sizeof(*t));
	if (elf_getphdrnum(elf, &nph))
		return -ENOENT;
	for (size_t i = 0; i < nph && !found; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		size_t n;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_DYNAMIC)
			continue;
		n = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
		if (!n)
			return -ENOENT;
		if (ph.p_filesz / n > EMBER_DYNAMIC_MAX_ENTRIES)
			ph.p_filesz = (uint64_t)EMBER_DYNAMIC_MAX_ENTRIES * n;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz - ph.p_filesz % n,
		                         ELF_T_DYN);
		if (!d)
			return -ENOENT;
		found = true;
		for (size_t k = 0; k < ph.p_filesz / n; k++) {
			GElf_Dyn dyn;

			if (!gelf_getdyn(d, (int)k, &dyn) || dyn.d_tag == DT_NULL)
				break;
			switch (dyn.d_tag) {
			case DT_SYMTAB:
				t->symtab = dyn.d_un.d_ptr;
				break;
			case DT_STRTAB:
				t->strtab = dyn.d_un.d_ptr;
				break;
			case DT_STRSZ:
				t->strsz = dyn.d_un.d_val;
				break;
			case DT_SYMENT:
				t->syment = dyn.d_un.d_val;
				break;
			case DT_HASH:
				t->hash = dyn.d_un.d_ptr;
				break;
			case DT_GNU_HASH:
				t->gnu_hash = dyn.d_un.d_ptr;
				break;
			default:
				break;
			}
		}
	}
	return found && t->symtab && t->strtab ? 0 : -ENOENT;
}

/* DT_HASH: nbucket, nchain; the chain has one entry per symbol. */
static uint64_t count_from_hash(const struct image *im, const struct ember_elf_syms *s,
                                uint64_t vaddr)
{
	uint64_t off;
	uint32_t nchain;

	if (ember_elf_vaddr_to_offset(s, vaddr, 8, &off) || !rd_word(im, off + 4, &nchain))
		return 0;
	return nchain;
}

/*
 * DT_GNU_HASH: symbols below symoffset are not hashed; past it, the chain of
 * the highest bucket runs to the last symbol, whose entry has bit 0 set.
 */
static uint64_t count_from_gnu_hash(const struct image *im, const struct ember_elf_syms *s,
                                    uint64_t vaddr)
{
	uint32_t nbuckets, symoffset, bloom_size, v, last = 0;
	uint64_t off, buckets, chain;

	if (ember_elf_vaddr_to_offset(s, vaddr, 16, &off) || !rd_word(im, off, &nbuckets) ||
	    !rd_word(im, off + 4, &symoffset) || !rd_word(im, off + 8, &bloom_size) ||
	    nbuckets > MAX_GNU_BUCKETS || bloom_size > MAX_GNU_BUCKETS)
		return 0;
	buckets = off + 16 + (uint64_t)bloom_size * (im->is64 ? 8 : 4);
	chain = buckets + (uint64_t)nbuckets * 4;
	for (uint32_t i = 0; i < nbuckets; i++) {
		if (!rd_word(im, buckets + 4ull * i, &v))
			return 0;
		if (v > last)
			last = v;
	}
	if (last < symoffset)
		return symoffset;
	for (uint64_t i = last; i - last < EMBER_ELF_MAX_SYMBOLS; i++) {
		if (!rd_word(im, chain + 4 * (i - symoffset), &v))
			return 0;
		if (v & 1)
			return i + 1;
	}
	return 0;
}

int ember_dynsym_read(Elf *elf, const struct ember_elf_syms *s,
                      const struct ember_dynsym_sink *sink)
{
	struct dyn_tags t;
	struct image im = {0};
	uint64_t symoff, stroff, count = 0, entsize;
	const char *strs;
	Elf_Data *d;
	int err;

	if (read_tags(elf, &t) || !(im.raw = (const uint8_t *)elf_rawfile(elf, &im.len)))
		return -ENOENT;
	im.msb = im.len > EI_DATA && im.raw[EI_DATA] == ELFDATA2MSB;
	im.is64 = gelf_getclass(elf) == ELFCLASS64;
	entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!entsize || (t.syment && t.syment != entsize))
		return -ENOENT;
	if (t.gnu_hash)
		count = count_from_gnu_hash(&im, s, t.gnu_hash);
	if (!count && t.hash)
		count = count_from_hash(&im, s, t.hash);
	if (!count && t.strtab > t.symtab)
		count = (t.strtab - t.symtab) / entsize; /* the linker puts .dynstr right after */
	if (count > EMBER_ELF_MAX_SYMBOLS)
		count = EMBER_ELF_MAX_SYMBOLS;
	if (!count || ember_elf_vaddr_to_offset(s, t.symtab, entsize, &symoff))
		return -ENOENT;
	if (symoff > im.len || count > (im.len - symoff) / entsize)
		count = symoff > im.len ? 0 : (im.len - symoff) / entsize;
	/* The string table: DT_STRSZ bytes, or what the file holds past its start. */
	if (ember_elf_vaddr_to_offset(s, t.strtab, 1, &stroff) || stroff >= im.len)
		return -ENOENT;
	if (!t.strsz || t.strsz > im.len - stroff)
		t.strsz = im.len - stroff;
	if (t.strsz > EMBER_ELF_MAX_NAME_BYTES)
		t.strsz = EMBER_ELF_MAX_NAME_BYTES;
	strs = (const char *)im.raw + stroff;
	d = count ? elf_getdata_rawchunk(elf, (int64_t)symoff, count * entsize, ELF_T_SYM) : NULL;
	if (!d)
		return -ENOENT;
	for (uint64_t i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *name = NULL;

		if (!gelf_getsym(d, (int)i, &sym))
			break;
		/* Names are read to at most 4096 bytes: longer ones need no NUL in reach. */
		if (sym.st_name < t.strsz &&
		    (t.strsz - sym.st_name > NAME_REACH ||
		     memchr(strs + sym.st_name, '\0', t.strsz - sym.st_name)))
			name = strs + sym.st_name;
		if ((err = sink->add(sink->ctx, &sym, name)))
			return err;
	}
	return 0;
}
