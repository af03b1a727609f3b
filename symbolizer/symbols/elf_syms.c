// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/elf_syms.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/symbols/file_id.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

static int elf_ready(void)
{
	return elf_version(EV_CURRENT) == EV_NONE ? -ELIBBAD : 0;
}

struct sym_builder {
	struct ember_elf_syms *out;
	size_t cap;
	size_t names_cap;
	unsigned int note_chunks; /* note segments and sections read so far */
};

static int add_name(struct sym_builder *b, const char *name, uint32_t *off)
{
	struct ember_elf_syms *s = b->out;
	size_t len = strnlen(name, 4096);

	if (s->names_len + len + 1 > EMBER_ELF_MAX_NAME_BYTES)
		return -E2BIG;
	if (s->names_len + len + 1 > b->names_cap) {
		size_t cap = b->names_cap ? b->names_cap * 2 : 16384;
		char *grown;

		while (cap < s->names_len + len + 1)
			cap *= 2;
		grown = realloc(s->names, cap);
		if (!grown)
			return -ENOMEM;
		s->names = grown;
		b->names_cap = cap;
	}
	memcpy(s->names + s->names_len, name, len);
	s->names[s->names_len + len] = '\0';
	*off = (uint32_t)s->names_len;
	s->names_len += len + 1;
	return 0;
}

static void note_go_symbol(struct ember_elf_syms *s, const char *name, uint64_t value)
{
	if (!name || (name[0] != 'r' && name[0] != 'g'))
		return;
	if (!strcmp(name, "runtime.pclntab"))
		s->go.pclntab_sym = value;
	else if (!strcmp(name, "runtime.text"))
		s->go.text_sym = value;
	else if (!strcmp(name, "go:func.*") || !strcmp(name, "go.func.*"))
		s->go.gofunc_sym = value;
	else if (!strcmp(name, "runtime.firstmoduledata") && !s->go.moduledata_sym)
		s->go.moduledata_sym = value;
}

static int add_symbols(struct sym_builder *b, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
	struct ember_elf_syms *s = b->out;
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return 0;
	n = data->d_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		int type, err;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC) {
			if (type == STT_OBJECT || type == STT_NOTYPE)
				note_go_symbol(s, elf_strptr(elf, sh->sh_link, sym.st_name),
				               sym.st_value);
			continue;
		}
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (s->nsyms == EMBER_ELF_MAX_SYMBOLS)
			return -E2BIG;
		if (s->nsyms == b->cap) {
			size_t cap = b->cap ? b->cap * 2 : 1024;
			void *grown = realloc(s->syms, cap * sizeof(*s->syms));

			if (!grown)
				return -ENOMEM;
			s->syms = grown;
			b->cap = cap;
		}
		err = add_name(b, name, &s->syms[s->nsyms].name);
		if (err)
			return err;
		s->syms[s->nsyms].addr = sym.st_value;
		s->syms[s->nsyms].size = sym.st_size;
		s->nsyms++;
	}
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct ember_elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address keep the larger symbol first: it is the real function. */
	return x->size > y->size ? -1 : x->size < y->size;
}

#define NT_GO_BUILD_ID 4

static void read_go_build_id(struct ember_elf_syms *s, const char *desc, size_t len)
{
	size_t n = 0;

	if (s->go_build_id[0])
		return;
	/* Printable ASCII only: the id ends up in profiles as a string. */
	while (n < len && n < sizeof(s->go_build_id) - 1 && desc[n] >= 0x20 && desc[n] < 0x7f)
		n++;
	memcpy(s->go_build_id, desc, n);
	s->go.is_go = true;
	s->go_build_id[n] = '\0';
}

/* Reads the GNU and Go build id notes; gelf_getnote bounds-checks each note. */
static void read_build_id(struct ember_elf_syms *s, Elf_Data *data)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)data->d_buf + name_off;
		const char *desc = (const char *)data->d_buf + desc_off;

		if (nh.n_type == NT_GO_BUILD_ID && (nh.n_namesz == 3 || nh.n_namesz == 4) &&
		    !memcmp(name, "Go", 3)) {
			read_go_build_id(s, desc, nh.n_descsz);
			continue;
		}
		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 || memcmp(name, "GNU", 4) ||
		    s->build_id_len)
			continue;
		if (!nh.n_descsz || nh.n_descsz > EMBER_BUILD_ID_MAX)
			continue;
		memcpy(s->build_id, desc, nh.n_descsz);
		s->build_id_len = nh.n_descsz;
		ember_hex(s->build_id, nh.n_descsz, s->build_id_hex);
	}
}

static void read_debuglink(struct ember_elf_syms *s, Elf_Data *data)
{
	size_t len;

	if (!data || !data->d_buf || data->d_size < 8)
		return;
	len = strnlen(data->d_buf, data->d_size);
	if (len == data->d_size || len >= sizeof(s->debuglink) || !len)
		return;
	memcpy(s->debuglink, data->d_buf, len + 1);
	/* The CRC follows the name, padded to a 4-byte boundary. */
	len = (len + 4) & ~(size_t)3;
	if (len + 4 <= data->d_size)
		memcpy(&s->debuglink_crc, (const char *)data->d_buf + len, 4);
}

/* Whether one more note chunk of size bytes may be read. */
static bool note_allowed(struct sym_builder *b, uint64_t size)
{
	if (b->note_chunks == EMBER_ELF_MAX_NOTE_CHUNKS || size > EMBER_ELF_MAX_NOTE_BYTES)
		return false;
	b->note_chunks++;
	return true;
}

static int read_segments(struct sym_builder *b, Elf *elf)
{
	struct ember_elf_syms *s = b->out;
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type == PT_NOTE && note_allowed(b, ph.p_filesz)) {
			Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
			                                   ELF_T_NHDR);

			if (d)
				read_build_id(s, d);
		}
		if (ph.p_type != PT_LOAD || s->nsegments == EMBER_ELF_MAX_SEGMENTS)
			continue;
		s->segments[s->nsegments++] = (struct ember_elf_segment){
		    ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz, ph.p_flags};
	}
	return 0;
}

static int read_sections(struct sym_builder *b, Elf *elf)
{
	struct ember_elf_syms *s = b->out;
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr symtab_sh, dynsym_sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0; /* no section headers: segments only */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_SYMTAB) {
			symtab = scn;
			symtab_sh = sh;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			dynsym_sh = sh;
		} else if (sh.sh_type == SHT_NOTE && !s->build_id_len && !s->go_build_id[0] &&
		           note_allowed(b, sh.sh_size)) {
			Elf_Data *d = elf_getdata(scn, NULL);

			if (d)
				read_build_id(s, d);
		}
		if (!name)
			continue;
		if (sh.sh_type != SHT_NOBITS &&
		    (!strcmp(name, ".gopclntab") || !strcmp(name, ".data.rel.ro.gopclntab"))) {
			s->go.pclntab_offset = sh.sh_offset;
			s->go.pclntab_size = sh.sh_size;
			s->go.is_go = true;
		} else if (!strcmp(name, ".go.module")) {
			s->go.moduledata_sym = sh.sh_addr;
		} else if (!strcmp(name, ".go.buildinfo")) {
			s->go.is_go = true;
		}
		if (!strcmp(name, ".gnu_debuglink"))
			read_debuglink(s, elf_getdata(scn, NULL));
		else if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info"))
			s->has_debug_info = sh.sh_type != SHT_NOBITS;
	}
	if (symtab) {
		s->has_symtab = true;
		return add_symbols(b, elf, symtab, &symtab_sh);
	}
	if (dynsym)
		return add_symbols(b, elf, dynsym, &dynsym_sh);
	return 0;
}

static int load_unchecked(Elf *elf, struct ember_elf_syms *out)
{
	struct sym_builder b = {.out = out};
	GElf_Ehdr eh;
	size_t kept = 0;
	int err;

	memset(out, 0, sizeof(*out));
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	out->e_type = eh.e_type;
	out->e_machine = eh.e_machine;
	err = read_segments(&b, elf);
	if (!err)
		err = read_sections(&b, elf);
	if (err)
		return err;
	if (out->nsyms > 1)
		qsort(out->syms, out->nsyms, sizeof(*out->syms), cmp_sym);
	/* One symbol per address: aliases (weak, versioned) add nothing. */
	for (size_t i = 0; i < out->nsyms; i++)
		if (!kept || out->syms[i].addr != out->syms[kept - 1].addr)
			out->syms[kept++] = out->syms[i];
	out->nsyms = kept;
	out->bytes = sizeof(*out) + b.cap * sizeof(*out->syms) + b.names_cap;
	return 0;
}

int ember_elf_syms_load_elf(Elf *elf, struct ember_elf_syms *out)
{
	int err = elf_ready();

	if (!err)
		err = load_unchecked(elf, out);

	if (err)
		ember_elf_syms_free(out);
	return err;
}

int ember_elf_syms_load(int fd, struct ember_elf_syms *out)
{
	Elf *elf;
	int err;

	memset(out, 0, sizeof(*out));
	if ((err = elf_ready()))
		return err;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	err = ember_elf_syms_load_elf(elf, out);
	elf_end(elf);
	if (err)
		ember_elf_syms_free(out);
	return err;
}

int ember_elf_syms_load_mem(const void *data, size_t len, struct ember_elf_syms *out)
{
	Elf *elf;
	int err;

	memset(out, 0, sizeof(*out));
	if ((err = elf_ready()))
		return err;
	elf = elf_memory((char *)data, len);
	if (!elf)
		return -ENOEXEC;
	err = ember_elf_syms_load_elf(elf, out);
	elf_end(elf);
	if (err)
		ember_elf_syms_free(out);
	return err;
}

void ember_elf_syms_free(struct ember_elf_syms *s)
{
	free(s->syms);
	free(s->names);
	memset(s, 0, sizeof(*s));
}

const struct ember_elf_sym *ember_elf_syms_lookup(const struct ember_elf_syms *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nsyms;
	const struct ember_elf_sym *sym;

	/* The last symbol starting at or before addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	sym = &s->syms[lo - 1];
	/* A sized symbol must contain addr; a size-0 symbol (hand-written
	 * assembly) covers up to the next symbol. */
	if (sym->size && addr - sym->addr >= sym->size)
		return NULL;
	return sym;
}

int ember_elf_vaddr_to_offset(const struct ember_elf_syms *s, uint64_t vaddr, uint64_t len,
                              uint64_t *offset)
{
	for (size_t i = 0; i < s->nsegments; i++) {
		const struct ember_elf_segment *seg = &s->segments[i];

		if (vaddr >= seg->vaddr && vaddr - seg->vaddr < seg->filesz &&
		    len <= seg->filesz - (vaddr - seg->vaddr)) {
			*offset = seg->offset + (vaddr - seg->vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

int ember_elf_offset_to_vaddr(const struct ember_elf_syms *s, uint64_t offset, uint64_t *vaddr)
{
	for (size_t i = 0; i < s->nsegments; i++) {
		const struct ember_elf_segment *seg = &s->segments[i];

		if (offset >= seg->offset && offset - seg->offset < seg->filesz) {
			*vaddr = seg->vaddr + (offset - seg->offset);
			return 0;
		}
	}
	return -ENOENT;
}
