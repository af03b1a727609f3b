// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/elf_syms.h"

#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/symbols/dynsym.h"
#include "symbolizer/symbols/file_id.h"
#include "symbolizer/symbols/plt.h"
#include "shared/sorted.h"
#include "shared/vec.h"
#include "shared/sort.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

static int elf_ready(void)
{
	return elf_version(EV_CURRENT) == EV_NONE ? -ELIBBAD : 0;
}

/* What the symbol tables need to know of a section. */
struct scn_info {
	uint64_t addr, end;
	bool exec;
	bool known;
};

#define MAX_SECTION_INFO 65536 /* sections whose bounds bound sizeless symbols */

struct sym_builder {
	struct ember_elf_syms *out;
	bool names_in_file; /* ember_elf_syms_load_mapped */
	size_t cap;
	unsigned int note_chunks; /* note segments and sections read so far */
	struct scn_info *scns;    /* by section index */
	size_t nscns;
	size_t sorted; /* out->syms[0, sorted) are sorted by address */
};

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

/* Names longer than this are cut there (and then copied, never left in the file). */
#define EMBER_ELF_NAME_MAX 4096

/* Where name lies in the file's string section, when it is there and ends within
 * EMBER_ELF_NAME_MAX bytes inside it; else SIZE_MAX. */
static size_t file_name_offset(const struct ember_elf_syms *s, const char *name)
{
	size_t off, left;

	if (!s->file_names || name < s->file_names || name >= s->file_names + s->file_names_len)
		return SIZE_MAX;
	off = (size_t)(name - s->file_names);
	left = s->file_names_len - off;
	if (off > UINT32_MAX ||
	    !memchr(name, 0, left < EMBER_ELF_NAME_MAX ? left : EMBER_ELF_NAME_MAX))
		return SIZE_MAX;
	return off;
}

/*
 * A candidate range [addr, addr+size) named name. A sizeless one (flags has
 * EMBER_ELF_SYM_SIZELESS) brings the most it may cover as its size: finalize
 * cuts it at the next symbol.
 */
static int add_candidate(struct sym_builder *b, uint64_t addr, uint64_t size, const char *name,
                         uint32_t flags)
{
	struct ember_elf_syms *s = b->out;
	size_t in_file = file_name_offset(s, name);
	int err;

	err = EMBER_ENSURE(s->syms, b->cap, s->nsyms + 1, EMBER_ELF_MAX_SYMBOLS);
	if (err)
		return err;
	if (in_file != SIZE_MAX) {
		s->syms[s->nsyms].name = (uint32_t)in_file;
		flags |= EMBER_ELF_SYM_IN_FILE;
	} else if ((err = ember_strtab_add(&s->names, name, strnlen(name, EMBER_ELF_NAME_MAX),
	                                   &s->syms[s->nsyms].name))) {
		return err;
	}
	s->syms[s->nsyms].addr = addr;
	s->syms[s->nsyms].size = size;
	s->syms[s->nsyms].flags = flags;
	s->nsyms++;
	return 0;
}

/* The loadable segment holding vaddr, or NULL. */
static const struct ember_elf_segment *segment_of(const struct ember_elf_syms *s, uint64_t vaddr)
{
	for (size_t i = 0; i < s->nsegments; i++)
		if (vaddr >= s->segments[i].vaddr &&
		    vaddr - s->segments[i].vaddr < s->segments[i].memsz)
			return &s->segments[i];
	return NULL;
}

/*
 * Takes sym as a candidate when it names code: a function (sized or not), or
 * an untyped symbol in executable code (not an ARM/RISC-V mapping symbol
 * "$x" or a local label ".L..."). scn is its section, NULL when it has none
 * (absolute, or no section headers: the segments say then).
 */
static int consider(struct sym_builder *b, const GElf_Sym *sym, const char *name,
                    const struct scn_info *scn, bool have_sections)
{
	const struct ember_elf_segment *seg = NULL;
	int type = GELF_ST_TYPE(sym->st_info);
	uint64_t end = UINT64_MAX, size;
	uint32_t flags = 0;

	if (sym->st_shndx == SHN_UNDEF || !sym->st_value)
		return 0;
	if (type == STT_OBJECT || type == STT_NOTYPE)
		note_go_symbol(b->out, name, sym->st_value);
	if (!name || !*name || (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
		return 0;
	if (scn && sym->st_value >= scn->addr && sym->st_value < scn->end)
		end = scn->end;
	else if ((seg = segment_of(b->out, sym->st_value)))
		end = seg->vaddr + seg->memsz;
	if (type == STT_NOTYPE) {
		bool code = scn ? scn->exec : !have_sections && seg && (seg->flags & PF_X);

		if (!code || name[0] == '$' || !strncmp(name, ".L", 2))
			return 0;
		flags = EMBER_ELF_SYM_NOTYPE;
	} else if (type == STT_GNU_IFUNC) {
		flags = EMBER_ELF_SYM_IFUNC;
	}
	if (sym->st_size) {
		size = sym->st_size < UINT64_MAX - sym->st_value ? sym->st_size
		                                                 : UINT64_MAX - sym->st_value;
	} else {
		if (end <= sym->st_value)
			return 0;
		size = end - sym->st_value;
		flags |= EMBER_ELF_SYM_SIZELESS;
	}
	return add_candidate(b, sym->st_value, size, name, flags);
}

static const struct scn_info *section_info(const struct sym_builder *b, uint16_t shndx)
{
	if (shndx == SHN_UNDEF || shndx >= SHN_LORESERVE || shndx >= b->nscns ||
	    !b->scns[shndx].known)
		return NULL;
	return &b->scns[shndx];
}

/* The symbol table's string section, for names left in the file. */
static void find_file_names(struct sym_builder *b, Elf *elf, const GElf_Shdr *sh)
{
	Elf_Scn *scn = elf_getscn(elf, sh->sh_link);
	GElf_Shdr str_sh;
	Elf_Data *d;

	if (!b->names_in_file || !scn || !gelf_getshdr(scn, &str_sh) ||
	    str_sh.sh_type != SHT_STRTAB || (str_sh.sh_flags & SHF_COMPRESSED) ||
	    !(d = elf_getdata(scn, NULL)) || !d->d_buf || !d->d_size)
		return;
	b->out->file_names = d->d_buf;
	b->out->file_names_len = d->d_size;
	b->out->file_names_scn = sh->sh_link;
}

/* Symbol sym's name: in the file's string section when it ends there (the common
 * case, found without a search), else as libelf checks it. */
static const char *symbol_name(const struct sym_builder *b, Elf *elf, const GElf_Shdr *sh,
                               const GElf_Sym *sym)
{
	const struct ember_elf_syms *s = b->out;

	if (s->file_names && sym->st_name < s->file_names_len &&
	    file_name_offset(s, s->file_names + sym->st_name) != SIZE_MAX)
		return s->file_names + sym->st_name;
	return elf_strptr(elf, sh->sh_link, sym->st_name);
}

static int add_symbols(struct sym_builder *b, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return 0;
	find_file_names(b, elf, sh);
	n = data->d_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		int err;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		err = consider(b, &sym, symbol_name(b, elf, sh, &sym),
		               section_info(b, sym.st_shndx), true);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Rank of a candidate over an address: lower is better. An IFUNC symbol
 * shares its address with the resolver's own symbol, if it has one: the
 * code there is the resolver.
 */
static unsigned int rank(uint32_t flags)
{
	return (flags & EMBER_ELF_SYM_NOTYPE ? 4 : 0) + (flags & EMBER_ELF_SYM_SIZELESS ? 2 : 0) +
	       (flags & EMBER_ELF_SYM_IFUNC ? 1 : 0);
}

static int cmp_sym(const void *a, const void *b)
{
	const struct ember_elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address the best kind first, then the largest: it is the real function. */
	if (rank(x->flags) != rank(y->flags))
		return rank(x->flags) < rank(y->flags) ? -1 : 1;
	return x->size > y->size ? -1 : x->size < y->size;
}

static void sort_candidates(struct sym_builder *b)
{
	if (b->sorted < b->out->nsyms && b->out->nsyms > 1)
		ember_sort(b->out->syms, b->out->nsyms, sizeof(*b->out->syms), cmp_sym);
	b->sorted = b->out->nsyms;
}

/*
 * An IRELATIVE PLT slot's target: the IFUNC symbol at addr (the resolver),
 * which is what the program calls ("memcpy"), else the function there (the
 * resolver's own name). The symbols are sorted at the first call; PLT entries
 * added after them are not searched (they are no targets), so they need no
 * sorting.
 */
static const char *candidate_at(void *ctx, uint64_t addr)
{
	struct sym_builder *b = ctx;
	const struct ember_elf_syms *s = b->out;
	size_t lo, best;

	if (!b->sorted)
		sort_candidates(b);
	lo = EMBER_LOWER_BOUND(s->syms, b->sorted, addr, addr);
	if (lo == b->sorted || s->syms[lo].addr != addr ||
	    (s->syms[lo].flags & (EMBER_ELF_SYM_NOTYPE | EMBER_ELF_SYM_PLT)))
		return NULL;
	best = lo;
	/* Aliases at one address are few; a hostile file's thousands are not searched. */
	for (size_t i = lo; i < b->sorted && i - lo < 64 && s->syms[i].addr == addr; i++)
		if (s->syms[i].flags & EMBER_ELF_SYM_IFUNC) {
			best = i;
			break;
		}
	return ember_elf_sym_name(s, &s->syms[best]);
}

static int add_plt_entry(void *ctx, uint64_t addr, uint64_t size, const char *name)
{
	if (!size || addr > UINT64_MAX - size)
		return 0;
	return add_candidate(ctx, addr, size, name, EMBER_ELF_SYM_PLT);
}

/* Flattened ranges as finalize builds them. */
struct flat {
	struct ember_elf_sym *v;
	size_t n, cap;
};

/* A symbol whose range is still open while later ones are placed. */
struct open_sym {
	uint64_t end;
	unsigned int rank;
	uint32_t name, flags;
	size_t last; /* its latest range in the output, or SIZE_MAX */
};

static int emit(struct flat *f, uint64_t addr, uint64_t end, uint32_t name, uint32_t flags,
                size_t *at)
{
	int err = EMBER_ENSURE(f->v, f->cap, f->n + 1, 2 * (size_t)EMBER_ELF_MAX_SYMBOLS);

	if (err)
		return err;
	f->v[f->n] = (struct ember_elf_sym){addr, end - addr, name, flags};
	*at = f->n++;
	return 0;
}

/* Ends o's latest range at addr (a later symbol starts there). */
static void cut(struct flat *f, struct open_sym *o, uint64_t addr)
{
	struct ember_elf_sym *r;

	if (o->last == SIZE_MAX)
		return;
	r = &f->v[o->last];
	if (addr - r->addr < r->size)
		r->size = addr - r->addr;
	if (!r->size) {
		/* Only the range emitted last can start where the new symbol does. */
		if (o->last == f->n - 1)
			f->n--;
		o->last = SIZE_MAX;
	}
}

/* After a nested symbol ends at addr, the one around it (o) covers again. */
static int resume(struct flat *f, struct open_sym *o, uint64_t addr)
{
	if (o->end <= addr)
		return 0;
	return emit(f, addr, o->end, o->name, o->flags | EMBER_ELF_SYM_RESUMED, &o->last);
}

/*
 * Turns the candidates (sorted, one per address) into disjoint ranges: each
 * address named by the innermost symbol over it, a worse-ranked symbol
 * (sizeless, untyped) dropped where a better one covers it, and a symbol
 * that runs past the end of the one it starts in cutting that one short.
 */
static int flatten(const struct ember_elf_sym *in, size_t n, struct flat *f)
{
	struct open_sym *st = malloc(EMBER_ELF_MAX_NESTING * sizeof(*st));
	size_t depth = 0;
	int err = 0;

	if (!st)
		return -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		const struct ember_elf_sym *c = &in[i];
		uint64_t end = c->addr + c->size;

		/* Symbols that ended before c: the one around each resumes after it. */
		while (depth && st[depth - 1].end <= c->addr && !err) {
			depth--;
			if (depth)
				err = resume(f, &st[depth - 1], st[depth].end);
		}
		if (err || (depth && rank(c->flags) > st[depth - 1].rank))
			continue; /* something better covers c */
		/* c runs past the end of symbols it starts in: they end where c starts. */
		while (depth && st[depth - 1].end < end)
			cut(f, &st[--depth], c->addr);
		if (depth == EMBER_ELF_MAX_NESTING)
			continue; /* hostile nesting: the enclosing symbols keep covering */
		if (depth)
			cut(f, &st[depth - 1], c->addr); /* c is nested in it */
		st[depth] = (struct open_sym){end, rank(c->flags), c->name, c->flags, SIZE_MAX};
		err = emit(f, c->addr, end, c->name, c->flags, &st[depth].last);
		depth++;
	}
	while (depth && !err) {
		depth--;
		if (depth)
			err = resume(f, &st[depth - 1], st[depth].end);
	}
	free(st);
	return err;
}

static int finalize(struct sym_builder *b)
{
	struct ember_elf_syms *s = b->out;
	struct flat f = {0};
	size_t kept = 0;
	int err;

	sort_candidates(b);
	/* One symbol per address: aliases (weak, versioned) add nothing. */
	for (size_t i = 0; i < s->nsyms; i++)
		if (!kept || s->syms[i].addr != s->syms[kept - 1].addr)
			s->syms[kept++] = s->syms[i];
	/* A sizeless symbol runs to the next symbol (or its section's end). */
	for (size_t i = 0; i + 1 < kept; i++)
		if ((s->syms[i].flags & EMBER_ELF_SYM_SIZELESS) &&
		    s->syms[i + 1].addr - s->syms[i].addr < s->syms[i].size)
			s->syms[i].size = s->syms[i + 1].addr - s->syms[i].addr;
	err = flatten(s->syms, kept, &f);
	if (err) {
		free(f.v);
		return err;
	}
	free(s->syms);
	s->syms = f.v;
	s->nsyms = f.n;
	b->cap = f.cap;
	if (f.n && f.n < f.cap) {
		void *fit = realloc(f.v, f.n * sizeof(*f.v));

		if (fit) {
			s->syms = fit;
			b->cap = f.n;
		}
	}
	return 0;
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

/* Remembers where section index idx lies and whether it holds code. */
static void note_section(struct sym_builder *b, size_t idx, const GElf_Shdr *sh)
{
	struct scn_info *i;

	if (idx >= b->nscns || !(sh->sh_flags & SHF_ALLOC) ||
	    sh->sh_addr > UINT64_MAX - sh->sh_size)
		return;
	i = &b->scns[idx];
	i->addr = sh->sh_addr;
	i->end = sh->sh_addr + sh->sh_size;
	i->exec = (sh->sh_flags & SHF_EXECINSTR) != 0;
	i->known = true;
}

/*
 * Reads what the section headers offer: notes, Go tables, the debug link and
 * the symbols (.symtab, else .dynsym) with names for the PLT entries.
 * Returns 1 when the file has no symbol table section, 0, or a negative errno.
 */
static int read_sections(struct sym_builder *b, Elf *elf)
{
	struct ember_elf_syms *s = b->out;
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr symtab_sh, dynsym_sh;
	struct ember_plt_sink plt = {b, add_plt_entry, candidate_at};
	size_t shstrndx, shnum;
	int err;

	if (elf_getshdrstrndx(elf, &shstrndx) || elf_getshdrnum(elf, &shnum))
		return 1; /* no section headers: segments only */
	b->nscns = shnum < MAX_SECTION_INFO ? shnum : MAX_SECTION_INFO;
	b->scns = calloc(b->nscns ? b->nscns : 1, sizeof(*b->scns));
	if (!b->scns)
		return -ENOMEM;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		note_section(b, elf_ndxscn(scn), &sh);
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
		err = add_symbols(b, elf, symtab, &symtab_sh);
	} else if (dynsym) {
		err = add_symbols(b, elf, dynsym, &dynsym_sh);
	} else {
		err = 1;
	}
	if (err >= 0) {
		int plt_err = ember_plt_entries(elf, s->e_machine, &plt);

		if (plt_err)
			err = plt_err;
	}
	return err;
}

static int add_dynamic_symbol(void *ctx, const GElf_Sym *sym, const char *name)
{
	return consider(ctx, sym, name, NULL, false);
}

static int load_unchecked(Elf *elf, bool names_in_file, struct ember_elf_syms *out)
{
	struct sym_builder b = {.out = out, .names_in_file = names_in_file};
	struct ember_dynsym_sink dyn = {&b, add_dynamic_symbol};
	GElf_Ehdr eh;
	int err;

	memset(out, 0, sizeof(*out));
	ember_strtab_init(&out->names, EMBER_ELF_MAX_NAME_BYTES);
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	out->e_type = eh.e_type;
	out->e_machine = eh.e_machine;
	err = read_segments(&b, elf);
	if (!err)
		err = read_sections(&b, elf);
	free(b.scns);
	if (err == 1) {
		/* No symbol table section: the dynamic one through PT_DYNAMIC, if any. */
		err = ember_dynsym_read(elf, out, &dyn);
		out->from_dynamic = !err && out->nsyms;
		if (err == -ENOENT)
			err = 0;
	}
	if (!err)
		err = finalize(&b);
	if (err)
		return err;
	out->bytes = sizeof(*out) + b.cap * sizeof(*out->syms) + out->names.cap;
	return 0;
}

static int load_from(Elf *elf, bool names_in_file, struct ember_elf_syms *out)
{
	int err = elf_ready();

	if (!err)
		err = load_unchecked(elf, names_in_file, out);

	if (err)
		ember_elf_syms_free(out);
	return err;
}

int ember_elf_syms_load_elf(Elf *elf, struct ember_elf_syms *out)
{
	return load_from(elf, false, out);
}

int ember_elf_syms_load_mapped(Elf *elf, struct ember_elf_syms *out)
{
	return load_from(elf, true, out);
}

int ember_elf_syms_rebind(struct ember_elf_syms *s, Elf *elf)
{
	Elf_Scn *scn;
	Elf_Data *d;

	if (!s->file_names)
		return 0;
	scn = elf_getscn(elf, s->file_names_scn);
	d = scn ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf || d->d_size != s->file_names_len)
		return -ESTALE;
	s->file_names = d->d_buf;
	return 0;
}

/* Loads from elf (NULL: libelf refused the file), which it ends. */
static int load_and_end(Elf *elf, struct ember_elf_syms *out)
{
	int err;

	if (!elf)
		return -ENOEXEC;
	err = ember_elf_syms_load_elf(elf, out);
	elf_end(elf);
	if (err)
		ember_elf_syms_free(out);
	return err;
}

int ember_elf_syms_load(int fd, struct ember_elf_syms *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if ((err = elf_ready()))
		return err;
	return load_and_end(elf_begin(fd, ELF_C_READ_MMAP, NULL), out);
}

int ember_elf_syms_load_mem(const void *data, size_t len, struct ember_elf_syms *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if ((err = elf_ready()))
		return err;
	return load_and_end(elf_memory((char *)data, len), out);
}

void ember_elf_syms_free(struct ember_elf_syms *s)
{
	free(s->syms);
	ember_strtab_free(&s->names);
	memset(s, 0, sizeof(*s));
}

const char *ember_elf_sym_name_copy(const struct ember_elf_syms *s, const struct ember_elf_sym *sym,
                                    char *buf, size_t len)
{
	const char *name = ember_elf_sym_name(s, sym);
	size_t n, left;

	if (!len)
		return "";
	left = sym->flags & EMBER_ELF_SYM_IN_FILE ? s->file_names_len - sym->name : len - 1;
	n = strnlen(name, left < len - 1 ? left : len - 1);
	memcpy(buf, name, n);
	buf[n] = '\0';
	return buf;
}

const struct ember_elf_sym *ember_elf_syms_lookup(const struct ember_elf_syms *s, uint64_t addr)
{
	/* The last symbol starting at or before addr. */
	size_t lo = EMBER_UPPER_BOUND(s->syms, s->nsyms, addr, addr);
	const struct ember_elf_sym *sym;

	if (!lo)
		return NULL;
	sym = &s->syms[lo - 1];
	/* Ranges are disjoint: the last one starting at or before addr holds it, or nothing. */
	if (addr - sym->addr >= sym->size)
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

int ember_elf_mapping_vaddr(const struct ember_elf_syms *s, uint64_t map_offset, uint64_t *vaddr)
{
	const struct ember_elf_segment *found = NULL;

	for (size_t i = 0; i < s->nsegments; i++) {
		const struct ember_elf_segment *seg = &s->segments[i];

		if (map_offset < (seg->offset & ~(uint64_t)4095) ||
		    (map_offset >= seg->offset && map_offset - seg->offset >= seg->filesz))
			continue;
		if (!found || (!(found->flags & PF_X) && (seg->flags & PF_X)))
			found = seg;
	}
	if (!found)
		return -ENOENT;
	/* Unsigned: also right when the mapping starts below the segment's first byte. */
	*vaddr = found->vaddr + (map_offset - found->offset);
	return 0;
}
