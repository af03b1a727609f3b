/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tiny writer of x86-64 ELF images in memory, for tests that need files
 * no toolchain would produce (hostile headers, bombs, odd layouts). The
 * image gets the sections in order after a NULL section, then .shstrtab;
 * program headers follow the ELF header.
 */
#ifndef EMBER_TESTS_MINI_ELF_H
#define EMBER_TESTS_MINI_ELF_H

#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct mini_section {
	const char *name;
	uint32_t type;
	uint64_t flags, addr;
	const void *data;
	size_t len;
	uint32_t link, info;
	uint64_t entsize;
};

/* Appends n bytes to *img (of *len bytes), 8-byte aligned first; returns their offset. */
static inline size_t mini_append(uint8_t **img, size_t *len, const void *p, size_t n)
{
	size_t at = (*len + 7) & ~(size_t)7;

	*img = realloc(*img, at + n);
	if (!*img)
		abort();
	memset(*img + *len, 0, at - *len);
	if (n)
		memcpy(*img + at, p, n);
	*len = at + n;
	return at;
}

/* Builds the image; the caller frees *out. */
static inline void mini_elf(const struct mini_section *secs, size_t nsecs, const Elf64_Phdr *ph,
                            size_t nph, uint8_t **out, size_t *out_len)
{
	Elf64_Ehdr eh = {0};
	Elf64_Shdr *sh = calloc(nsecs + 2, sizeof(*sh));
	uint8_t *img = NULL;
	char *names = calloc(1, 1);
	size_t len = 0, names_len = 1;

	if (!sh || !names)
		abort();
	for (size_t i = 0; i <= nsecs; i++) {
		const char *n = i < nsecs ? secs[i].name : ".shstrtab";
		size_t l = strlen(n) + 1;

		names = realloc(names, names_len + l);
		if (!names)
			abort();
		memcpy(names + names_len, n, l);
		sh[i + 1].sh_name = (uint32_t)names_len;
		names_len += l;
	}
	mini_append(&img, &len, &eh, sizeof(eh));
	if (nph)
		eh.e_phoff = mini_append(&img, &len, ph, nph * sizeof(*ph));
	for (size_t i = 0; i < nsecs; i++) {
		Elf64_Shdr *s = &sh[i + 1];

		s->sh_type = secs[i].type;
		s->sh_flags = secs[i].flags;
		s->sh_addr = secs[i].addr;
		s->sh_offset = mini_append(&img, &len, secs[i].data, secs[i].len);
		s->sh_size = secs[i].len;
		s->sh_link = secs[i].link;
		s->sh_info = secs[i].info;
		s->sh_entsize = secs[i].entsize;
		s->sh_addralign = 1;
	}
	sh[nsecs + 1].sh_type = SHT_STRTAB;
	sh[nsecs + 1].sh_offset = mini_append(&img, &len, names, names_len);
	sh[nsecs + 1].sh_size = names_len;
	eh.e_shoff = mini_append(&img, &len, sh, (nsecs + 2) * sizeof(*sh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = (uint16_t)nph;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (uint16_t)(nsecs + 2);
	eh.e_shstrndx = (uint16_t)(nsecs + 1);
	memcpy(img, &eh, sizeof(eh));
	free(sh);
	free(names);
	*out = img;
	*out_len = len;
}

/*
 * A SHF_COMPRESSED section body (Elf64_Chdr, then zlib) that inflates to
 * size zero bytes: a "zip bomb" of about size / 1000 bytes. The caller frees.
 */
static inline void *mini_zlib_zeros(uint64_t size, size_t *out_len)
{
	static uint8_t zeros[1u << 16];
	Elf64_Chdr ch = {.ch_type = ELFCOMPRESS_ZLIB, .ch_size = size, .ch_addralign = 1};
	size_t cap = sizeof(ch) + size / 256 + 4096;
	uint8_t *out = malloc(cap);
	z_stream z = {0};

	if (!out || deflateInit2(&z, 9, Z_DEFLATED, 15, 9, Z_RLE) != Z_OK)
		abort();
	memcpy(out, &ch, sizeof(ch));
	z.next_out = out + sizeof(ch);
	z.avail_out = (uInt)(cap - sizeof(ch));
	for (uint64_t left = size; left;) {
		uInt n = left < sizeof(zeros) ? (uInt)left : (uInt)sizeof(zeros);

		z.next_in = zeros;
		z.avail_in = n;
		if (deflate(&z, Z_NO_FLUSH) != Z_OK)
			abort();
		left -= n;
	}
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		abort();
	*out_len = sizeof(ch) + z.total_out;
	deflateEnd(&z);
	return out;
}

#endif
