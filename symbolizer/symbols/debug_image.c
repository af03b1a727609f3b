// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/debug_image.h"

#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#ifdef EMBER_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#define MAX_SECTIONS 16
#define ALIGN8(n)    (((n) + 7) & ~(size_t)7)

/* The sections lookups read (after ".debug_"): units, abbreviations, lines, strings,
 * ranges, addresses. Not location lists, macros, frames or name indexes. */
static bool wanted(const char *name)
{
	static const char *const names[] = {"info",     "abbrev",  "line",        "line_str",
	                                    "str",      "addr",    "str_offsets", "ranges",
	                                    "rnglists", "aranges", "types"};

	if (strncmp(name, ".debug_", 7))
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name + 7, names[i]))
			return true;
	return false;
}

struct piece {
	Elf_Scn *scn;
	const char *name;
	GElf_Shdr sh;
	size_t size;   /* in the image */
	size_t offset; /* of its data in the image */
	bool compressed;
};

static int inflate_into(const Elf_Data *raw, size_t header, void *out, size_t size)
{
	const uint8_t *in = (const uint8_t *)raw->d_buf + header;
	size_t in_len = raw->d_size - header;
#ifdef EMBER_HAVE_LIBDEFLATE
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	size_t got = 0;
	enum libdeflate_result r;

	if (!d)
		return -ENOMEM;
	r = libdeflate_zlib_decompress(d, in, in_len, out, size, &got);
	libdeflate_free_decompressor(d);
	return r == LIBDEFLATE_SUCCESS && got == size ? 0 : -EINVAL;
#else
	uLongf got = size;

	return uncompress(out, &got, in, in_len) == Z_OK && got == size ? 0 : -EINVAL;
#endif
}

/* The wanted sections and their sizes in the image; returns how many, or a negative errno. */
static int list_pieces(Elf *elf, size_t shstrndx, size_t max_bytes, struct piece *p, size_t *total,
                       bool *any_compressed)
{
	Elf_Scn *scn = NULL;
	int n = 0;

	*total = 0;
	*any_compressed = false;
	while ((scn = elf_nextscn(elf, scn))) {
		struct piece x = {.scn = scn};
		GElf_Chdr ch;

		if (!gelf_getshdr(scn, &x.sh) ||
		    !(x.name = elf_strptr(elf, shstrndx, x.sh.sh_name)))
			return -EINVAL;
		if (!strncmp(x.name, ".zdebug_", 8))
			return -ENOTSUP;
		if (!wanted(x.name) || x.sh.sh_type == SHT_NOBITS)
			continue;
		x.compressed = x.sh.sh_flags & SHF_COMPRESSED;
		if (x.compressed && (!gelf_getchdr(scn, &ch) || ch.ch_type != ELFCOMPRESS_ZLIB))
			return -ENOTSUP;
		x.size = x.compressed ? (size_t)ch.ch_size : (size_t)x.sh.sh_size;
		if (n == MAX_SECTIONS)
			return -ENOTSUP;
		if (x.size > max_bytes || ALIGN8(x.size) > max_bytes - *total)
			return -E2BIG;
		*any_compressed |= x.compressed;
		*total += ALIGN8(x.size);
		p[n++] = x;
	}
	return n;
}

/* Each piece's data at its offset (inflated or copied), then the names, then the headers. */
static int fill(struct ember_debug_image *img, const GElf_Ehdr *eh, struct piece *p, int n,
                size_t strtab_at, size_t shdrs_at)
{
	uint8_t *base = img->data;
	Elf64_Ehdr *out = (Elf64_Ehdr *)base;
	Elf64_Shdr *sh = (Elf64_Shdr *)(base + shdrs_at);
	size_t names = strtab_at + 1; /* byte 0: the empty name */
	int err;

	memcpy(out->e_ident, eh->e_ident, EI_NIDENT);
	out->e_type = eh->e_type;
	out->e_machine = eh->e_machine;
	out->e_version = EV_CURRENT;
	out->e_ehsize = sizeof(Elf64_Ehdr);
	out->e_shoff = shdrs_at;
	out->e_shentsize = sizeof(Elf64_Shdr);
	out->e_shnum = (Elf64_Half)(n + 2);
	out->e_shstrndx = (Elf64_Half)(n + 1);
	for (int i = 0; i < n; i++) {
		Elf_Data *raw = elf_rawdata(p[i].scn, NULL);
		size_t header = p[i].compressed ? sizeof(Elf64_Chdr) : 0;

		if (!raw || !raw->d_buf || raw->d_size < header ||
		    (!p[i].compressed && raw->d_size != p[i].size))
			return -EINVAL;
		err = p[i].compressed ? inflate_into(raw, header, base + p[i].offset, p[i].size)
		                      : (memcpy(base + p[i].offset, raw->d_buf, p[i].size), 0);
		if (err)
			return err;
		sh[i + 1] = (Elf64_Shdr){.sh_name = (Elf64_Word)(names - strtab_at),
		                         .sh_type = SHT_PROGBITS,
		                         .sh_flags = p[i].sh.sh_flags & ~(uint64_t)SHF_COMPRESSED,
		                         .sh_offset = p[i].offset,
		                         .sh_size = p[i].size,
		                         .sh_addralign = 1,
		                         .sh_entsize = p[i].sh.sh_entsize};
		memcpy(base + names, p[i].name, strlen(p[i].name) + 1);
		names += strlen(p[i].name) + 1;
	}
	memcpy(base + names, ".shstrtab", sizeof(".shstrtab"));
	sh[n + 1] = (Elf64_Shdr){.sh_name = (Elf64_Word)(names - strtab_at),
	                         .sh_type = SHT_STRTAB,
	                         .sh_offset = strtab_at,
	                         .sh_size = names + sizeof(".shstrtab") - strtab_at,
	                         .sh_addralign = 1};
	return 0;
}

int ember_debug_image_open(Elf *elf, size_t max_bytes, struct ember_debug_image *img)
{
	struct piece p[MAX_SECTIONS];
	size_t shstrndx, total, names = 1 + sizeof(".shstrtab"), at = sizeof(Elf64_Ehdr);
	bool any_compressed;
	GElf_Ehdr eh;
	int n, err;

	memset(img, 0, sizeof(*img));
	if (!gelf_getehdr(elf, &eh) || elf_getshdrstrndx(elf, &shstrndx))
		return -EINVAL;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		return -ENOTSUP;
	n = list_pieces(elf, shstrndx, max_bytes, p, &total, &any_compressed);
	if (n < 0)
		return n;
	if (!any_compressed)
		return -ENOENT;
	for (int i = 0; i < n; i++) {
		p[i].offset = at;
		at += ALIGN8(p[i].size);
		names += strlen(p[i].name) + 1;
	}
	img->len = at + ALIGN8(names) + (size_t)(n + 2) * sizeof(Elf64_Shdr);
	if (img->len > max_bytes)
		return -E2BIG;
	img->data = calloc(1, img->len);
	if (!img->data)
		return -ENOMEM;
	err = fill(img, &eh, p, n, at, at + ALIGN8(names));
	if (!err && !(img->elf = elf_memory(img->data, img->len)))
		err = -EINVAL;
	if (err)
		ember_debug_image_close(img);
	return err;
}

void ember_debug_image_close(struct ember_debug_image *img)
{
	if (img->elf)
		elf_end(img->elf);
	free(img->data);
	memset(img, 0, sizeof(*img));
}
