// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/debuginfo.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "symbolizer/symbols/file_id.h"
#include "shared/vec.h"

#define MINIDEBUG_FROM (1u << 20) /* first guess of .gnu_debugdata decompressed */

const char *ember_debug_source_name(enum ember_debug_source s)
{
	switch (s) {
	case EMBER_DEBUG_SELF:
		return "self";
	case EMBER_DEBUG_BUILD_ID:
		return "build-id";
	case EMBER_DEBUG_DEBUGLINK:
		return "debuglink";
	case EMBER_DEBUG_MINIDEBUGINFO:
		return "minidebuginfo";
	default:
		return "none";
	}
}

static Elf_Scn *section_by_name(Elf *elf, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh->sh_name);
		if (name && !strcmp(name, want))
			return sh->sh_type == SHT_NOBITS ? NULL : scn;
	}
	return NULL;
}

/*
 * An ELF handle for fd (an opener's answer: a descriptor, which is closed
 * here, or a negative errno); libelf maps the file PROT_READ, MAP_PRIVATE.
 * Returns 0, the opener's error, or -ENOEXEC.
 */
static int take_elf(int fd, Elf **out)
{
	Elf *elf;

	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		elf = NULL;
	}
	/* Everything is mapped: the descriptor can go. */
	if (elf)
		elf_cntl(elf, ELF_C_FDDONE);
	close(fd);
	*out = elf;
	return elf ? 0 : -ENOEXEC;
}

/* Loads the candidate's symbols into dbg; they are kept when it is accepted. */
static bool build_ids_match(Elf *elf, const struct ember_elf_syms *main, struct ember_elf_syms *dbg)
{
	if (ember_elf_syms_load_elf(elf, dbg))
		return false;
	if (!main->build_id_len)
		return true; /* the caller checks something else */
	return dbg->build_id_len == main->build_id_len &&
	       !memcmp(dbg->build_id, main->build_id, main->build_id_len);
}

static bool crc_matches(Elf *elf, uint32_t want)
{
	size_t len;
	char *raw = elf_rawfile(elf, &len);
	uLong crc = crc32(0, Z_NULL, 0);

	if (!raw)
		return false;
	/* zlib takes a uInt length: feed it in chunks. */
	for (size_t off = 0; off < len;) {
		size_t n = len - off > (1u << 30) ? (1u << 30) : len - off;

		crc = crc32(crc, (const Bytef *)raw + off, (uInt)n);
		off += n;
	}
	return (uint32_t)crc == want;
}

static bool has_dwarf_or_symtab(Elf *elf)
{
	GElf_Shdr sh;

	return section_by_name(elf, ".debug_info", &sh) ||
	       section_by_name(elf, ".zdebug_info", &sh) || section_by_name(elf, ".symtab", &sh);
}

/* Keeps elf as the debug file when it matched and has something to offer; else counts it. */
static int keep_or_reject(Elf *elf, bool matched, enum ember_debug_source source,
                          struct ember_debugfile *out)
{
	if (!matched || !has_dwarf_or_symtab(elf)) {
		out->rejected++;
		ember_elf_syms_free(&out->syms);
		elf_end(elf);
		return -ENOENT;
	}
	out->elf = elf;
	out->source = source;
	return 0;
}

static int try_build_id(const struct ember_elf_syms *main, const struct ember_debug_opener *op,
                        struct ember_debugfile *out)
{
	Elf *elf;
	int err;

	if (!main->build_id_len || !op->by_build_id)
		return -ENOENT;
	err = take_elf(op->by_build_id(op->ctx, main->build_id_hex), &elf);
	if (err)
		return err;
	return keep_or_reject(elf, build_ids_match(elf, main, &out->syms), EMBER_DEBUG_BUILD_ID,
	                      out);
}

static int try_debuglink(const struct ember_elf_syms *main, const struct ember_debug_opener *op,
                         struct ember_debugfile *out)
{
	Elf *elf;
	bool ok;
	int err;

	if (!main->debuglink[0] || !op->by_debuglink || strchr(main->debuglink, '/'))
		return -ENOENT;
	err = take_elf(op->by_debuglink(op->ctx, main->debuglink), &elf);
	if (err)
		return err;
	/* Same build id when both have one (cheap), else the link's CRC. */
	ok = build_ids_match(elf, main, &out->syms) &&
	     (main->build_id_len || crc_matches(elf, main->debuglink_crc));
	return keep_or_reject(elf, ok, EMBER_DEBUG_DEBUGLINK, out);
}

int ember_minidebuginfo_extract(Elf *elf, void **out, size_t *out_len)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	GElf_Shdr sh;
	Elf_Scn *scn = section_by_name(elf, ".gnu_debugdata", &sh);
	Elf_Data *data;
	uint8_t *buf = NULL;
	size_t cap = 0, used = 0;
	int err = 0;

	*out = NULL;
	*out_len = 0;
	if (!scn || !(data = elf_rawdata(scn, NULL)) || !data->d_buf || !data->d_size)
		return -ENOENT;
	if (data->d_size > EMBER_MINIDEBUG_MAX_INPUT)
		return -E2BIG;
	if (lzma_stream_decoder(&strm, 128u << 20, 0) != LZMA_OK)
		return -ENOMEM;
	strm.next_in = data->d_buf;
	strm.avail_in = data->d_size;
	while (!err) {
		lzma_ret r;

		/* Output from 1 MiB, doubling up to the cap. */
		if (used == cap) {
			err =
			    ember_ensure_mem((void **)&buf, &cap, 1, cap ? cap + 1 : MINIDEBUG_FROM,
			                     EMBER_MINIDEBUG_MAX_BYTES);
			strm.next_out = buf + used;
			strm.avail_out = cap - used;
			if (err)
				break;
		}
		r = lzma_code(&strm, LZMA_FINISH);
		used = cap - strm.avail_out;
		if (r == LZMA_STREAM_END)
			break;
		/* Out of room is the only error that more room mends; else bad or truncated. */
		if (r != LZMA_OK && !(r == LZMA_BUF_ERROR && !strm.avail_out))
			err = -EBADMSG;
	}
	lzma_end(&strm);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*out_len = used;
	return 0;
}

static int try_minidebuginfo(Elf *main_elf, struct ember_debugfile *out)
{
	void *mem;
	size_t len;
	Elf *elf;
	int err = ember_minidebuginfo_extract(main_elf, &mem, &len);

	if (err)
		return err;
	elf = elf_memory(mem, len);
	if (!elf || elf_kind(elf) != ELF_K_ELF || ember_elf_syms_load_elf(elf, &out->syms)) {
		if (elf)
			elf_end(elf);
		free(mem);
		return -EBADMSG;
	}
	out->elf = elf;
	out->mem = mem;
	out->source = EMBER_DEBUG_MINIDEBUGINFO;
	return 0;
}

void ember_debugfile_find_alt(Elf *elf, const struct ember_debug_opener *op,
                              struct ember_debugfile *out)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section_by_name(elf, ".gnu_debugaltlink", &sh);
	Elf_Data *data;
	char hex[2 * EMBER_BUILD_ID_MAX + 1];
	size_t name_len, id_len;

	if (!scn)
		return;
	out->alt_missing = true;
	data = elf_rawdata(scn, NULL);
	if (!data || !data->d_buf || !op->by_build_id)
		return;
	/* A file name, NUL, then the supplementary file's build id. */
	name_len = strnlen(data->d_buf, data->d_size);
	if (name_len >= data->d_size)
		return;
	id_len = data->d_size - name_len - 1;
	if (id_len < 2 || id_len > EMBER_BUILD_ID_MAX)
		return;
	ember_hex((const uint8_t *)data->d_buf + name_len + 1, id_len, hex);
	out->alt_missing = take_elf(op->by_build_id(op->ctx, hex), &out->alt_elf) != 0;
}

int ember_debugfile_find(Elf *main_elf, const struct ember_elf_syms *main,
                         const struct ember_debug_opener *op, struct ember_debugfile *out)
{
	memset(out, 0, sizeof(*out));
	if (try_build_id(main, op, out) && try_debuglink(main, op, out) &&
	    try_minidebuginfo(main_elf, out))
		return -ENOENT;
	if (out->source != EMBER_DEBUG_MINIDEBUGINFO)
		ember_debugfile_find_alt(out->elf, op, out);
	return 0;
}

void ember_debugfile_close(struct ember_debugfile *d)
{
	if (d->elf)
		elf_end(d->elf);
	if (d->alt_elf)
		elf_end(d->alt_elf);
	ember_elf_syms_free(&d->syms);
	free(d->mem);
	memset(d, 0, sizeof(*d));
}
