// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/gopclntab.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "shared/bytes.h"

#define MAGIC_116 0xfffffffau
#define MAGIC_118 0xfffffff0u
#define MAGIC_120 0xfffffff1u

#define PCDATA_INL_TREE_INDEX 2
#define FUNCDATA_INL_TREE     3

/* Field positions of runtime.moduledata, in words. */
#define MD_PCHEADER    0
#define MD_FUNCNAMETAB 1
#define MD_TEXT        22
#define MD_GOFUNC_118  38 /* 1.18, 1.19 */
#define MD_GOFUNC_120  40 /* 1.20 and later: covctrs, ecovctrs came before */

static bool tab_rd(const struct ember_gopclntab *t, uint64_t off, unsigned int n, uint64_t *v)
{
	return ember_le_at(t->tab, t->tab_len, off, n, v);
}

/* Bytes of the file behind [vaddr, vaddr+len), or NULL. */
static const uint8_t *at_vaddr(const struct ember_gopclntab *t, uint64_t vaddr, uint64_t len)
{
	uint64_t off;

	if (ember_elf_vaddr_to_offset(t->elf, vaddr, len, &off) || off > t->file_len ||
	    len > t->file_len - off)
		return NULL;
	return t->file + off;
}

/*
 * A NUL-terminated string at off inside [base, base+len), or NULL. The end
 * is searched for so far only: a table without NULs would otherwise cost
 * its whole size for every name of every lookup.
 */
static const char *str_at(const struct ember_gopclntab *t, size_t base, size_t len, uint64_t off)
{
	const char *s;
	size_t n;

	if (off >= len)
		return NULL;
	s = (const char *)t->tab + base + off;
	n = len - off < EMBER_GO_MAX_NAME ? len - off : EMBER_GO_MAX_NAME;
	return memchr(s, '\0', n) ? s : NULL;
}

static int parse_header(struct ember_gopclntab *t)
{
	uint64_t magic, nfunc, off[6], text = 0;
	unsigned int p, i, first;

	if (!tab_rd(t, 0, 4, &magic) || t->tab_len < 8)
		return -ENOENT;
	switch (magic) {
	case MAGIC_116:
		t->version = 116;
		break;
	case MAGIC_118:
		t->version = 118;
		break;
	case MAGIC_120:
		t->version = 120;
		break;
	default:
		return -ENOENT;
	}
	t->quantum = t->tab[6];
	t->ptrsize = t->tab[7];
	p = t->ptrsize;
	if (t->tab[4] || t->tab[5] || (p != 4 && p != 8) ||
	    (t->quantum != 1 && t->quantum != 2 && t->quantum != 4))
		return -EBADMSG;
	if (!tab_rd(t, 8, p, &nfunc) || !nfunc || nfunc > EMBER_GO_MAX_FUNCS)
		return -EBADMSG;
	t->nfunc = nfunc;
	first = 8 + 2 * p;
	if (t->version >= 118) {
		if (!tab_rd(t, first, p, &text))
			return -EBADMSG;
		first += p;
	}
	t->text_start = text;
	/* funcnametab, cutab, filetab, pctab, functab: in this order in the table. */
	for (i = 0; i < 5; i++)
		if (!tab_rd(t, first + i * p, p, &off[i]) || off[i] > t->tab_len)
			return -EBADMSG;
	off[5] = t->tab_len;
	for (i = 0; i < 5; i++)
		if (off[i + 1] < off[i])
			return -EBADMSG;
	t->funcnames = off[0], t->funcnames_len = off[1] - off[0];
	t->cutab = off[1], t->cutab_len = off[2] - off[1];
	t->filetab = off[2], t->filetab_len = off[3] - off[2];
	t->pctab = off[3], t->pctab_len = off[4] - off[3];
	t->functab = off[4], t->functab_len = off[5] - off[4];
	/* nfunc+1 functab entries must fit. */
	if ((nfunc + 1) * (t->version >= 118 ? 8 : 2 * p) > t->functab_len)
		return -EBADMSG;
	return 0;
}

static unsigned int ftab_entry_size(const struct ember_gopclntab *t)
{
	return t->version >= 118 ? 8 : 2u * t->ptrsize;
}

/* Entry pc and _func offset of function i (i == nfunc gives the end pc). */
static bool ftab(const struct ember_gopclntab *t, uint64_t i, uint64_t *entry, uint64_t *funcoff)
{
	unsigned int es = ftab_entry_size(t), half = es / 2;
	uint64_t off = t->functab + i * es, e;

	if (!tab_rd(t, off, half, &e) || !tab_rd(t, off + half, half, funcoff))
		return false;
	*entry = t->version >= 118 ? t->text_start + e : e;
	return true;
}

/* Offset of a table at vaddr found by the caller: a header that checks out. */
static int try_at(struct ember_gopclntab *t, uint64_t file_off, uint64_t len)
{
	uint64_t e0, e1, f0;

	if (file_off >= t->file_len)
		return -ENOENT;
	if (len > t->file_len - file_off)
		len = t->file_len - file_off;
	t->tab = t->file + file_off;
	t->tab_len = len;
	if (parse_header(t))
		return -EBADMSG;
	/* The first two functions must be ordered and their _func inside the table. */
	if (!ftab(t, 0, &e0, &f0) || !ftab(t, t->nfunc > 1 ? 1 : 0, &e1, &f0) || e1 < e0 ||
	    f0 >= t->functab_len)
		return -EBADMSG;
	return 0;
}

static uint64_t vaddr_of_offset(const struct ember_elf_syms *elf, uint64_t off)
{
	uint64_t v;

	return ember_elf_offset_to_vaddr(elf, off, &v) ? 0 : v;
}

/* Bytes from file offset off to the end of the loadable segment holding it. */
static uint64_t segment_rest(const struct ember_elf_syms *elf, uint64_t off)
{
	for (size_t i = 0; i < elf->nsegments; i++) {
		const struct ember_elf_segment *s = &elf->segments[i];

		if (off >= s->offset && off - s->offset < s->filesz)
			return s->filesz - (off - s->offset);
	}
	return 0;
}

/* Bytes the segment scans may cover: overlapping segments must not multiply the work. */
static uint64_t scan_budget(const struct ember_gopclntab *t)
{
	return 2 * (uint64_t)t->file_len + (64u << 10);
}

static int scan_segments(struct ember_gopclntab *t)
{
	uint64_t budget = scan_budget(t);

	/* Read-only data first: that is where the linker puts the table. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < t->elf->nsegments; i++) {
			const struct ember_elf_segment *s = &t->elf->segments[i];
			uint64_t end;

			if (((s->flags & 1 /* PF_X */) != 0) != (pass == 1))
				continue;
			if (s->offset >= t->file_len)
				continue;
			end = s->filesz < t->file_len - s->offset ? s->offset + s->filesz
			                                          : t->file_len;
			if (end - s->offset > budget)
				return -ENOENT;
			budget -= end - s->offset;
			for (uint64_t off = (s->offset + 3) & ~3ull; off + 16 <= end; off += 4) {
				const uint8_t *b = t->file + off;

				if (b[1] != 0xff || b[2] != 0xff || b[3] != 0xff || b[4] || b[5] ||
				    (b[0] != 0xfa && b[0] != 0xf0 && b[0] != 0xf1))
					continue;
				if (!try_at(t, off, end - off)) {
					t->tab_vaddr = s->vaddr + (off - s->offset);
					return 0;
				}
			}
		}
	}
	return -ENOENT;
}

static int locate(struct ember_gopclntab *t)
{
	const struct ember_elf_go *go = &t->elf->go;
	uint64_t off;

	if (go->pclntab_offset && !try_at(t, go->pclntab_offset, go->pclntab_size)) {
		t->tab_vaddr = vaddr_of_offset(t->elf, go->pclntab_offset);
		return 0;
	}
	if (go->pclntab_sym && !ember_elf_vaddr_to_offset(t->elf, go->pclntab_sym, 16, &off) &&
	    !try_at(t, off, segment_rest(t->elf, off))) {
		t->tab_vaddr = go->pclntab_sym;
		return 0;
	}
	return scan_segments(t);
}

/* Reads word i of the moduledata at vaddr md. */
static bool md_word(const struct ember_gopclntab *t, uint64_t md, unsigned int i, uint64_t *v)
{
	const uint8_t *b = at_vaddr(t, md + (uint64_t)i * t->ptrsize, t->ptrsize);

	if (!b)
		return false;
	*v = ember_le(b, t->ptrsize);
	return true;
}

static bool md_matches(const struct ember_gopclntab *t, uint64_t md)
{
	uint64_t hdr, names;

	return md_word(t, md, MD_PCHEADER, &hdr) && hdr == t->tab_vaddr &&
	       md_word(t, md, MD_FUNCNAMETAB, &names) && names == t->tab_vaddr + t->funcnames;
}

/*
 * runtime.firstmoduledata: from its symbol or .go.module section, else by
 * scanning the writable segments for a word pointing at the pclntab followed
 * by the funcnametab pointer. Returns its address or 0.
 */
static uint64_t find_moduledata(const struct ember_gopclntab *t)
{
	const struct ember_elf_syms *elf = t->elf;
	unsigned int p = t->ptrsize;
	uint64_t budget = scan_budget(t);

	if (!t->tab_vaddr)
		return 0;
	if (elf->go.moduledata_sym && md_matches(t, elf->go.moduledata_sym))
		return elf->go.moduledata_sym;
	for (size_t i = 0; i < elf->nsegments; i++) {
		const struct ember_elf_segment *s = &elf->segments[i];
		uint64_t end;

		if (!(s->flags & 2 /* PF_W */) || s->offset >= t->file_len)
			continue;
		end = s->filesz < t->file_len - s->offset ? s->offset + s->filesz : t->file_len;
		if (end - s->offset > budget)
			return 0;
		budget -= end - s->offset;
		for (uint64_t off = (s->offset + p - 1) & ~(uint64_t)(p - 1); off + 2 * p <= end;
		     off += p)
			if (ember_le(t->file + off, p) == t->tab_vaddr &&
			    ember_le(t->file + off + p, p) == t->tab_vaddr + t->funcnames)
				return s->vaddr + (off - s->offset);
	}
	return 0;
}

static void find_text_and_gofunc(struct ember_gopclntab *t)
{
	const struct ember_elf_go *go = &t->elf->go;
	uint64_t md = 0, v;
	bool md_tried = false;

	if (t->version >= 118 && !t->text_start) {
		/* Go 1.26 stopped writing textStart: moduledata.text has it. */
		md = find_moduledata(t);
		md_tried = true;
		if (md && md_word(t, md, MD_TEXT, &v))
			t->text_start = v;
		else
			t->text_start = go->text_sym;
	}
	if (t->version < 118)
		return; /* inline trees are found by absolute pointer */
	if (go->gofunc_sym) {
		t->gofunc = go->gofunc_sym;
		return;
	}
	if (!md_tried)
		md = find_moduledata(t);
	if (md && md_word(t, md, t->version >= 120 ? MD_GOFUNC_120 : MD_GOFUNC_118, &v))
		t->gofunc = v;
}

int ember_gopclntab_open(const uint8_t *file, size_t len, const struct ember_elf_syms *elf,
                         struct ember_gopclntab *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	out->file = file;
	out->file_len = len;
	out->elf = elf;
	err = locate(out);
	if (err)
		return err;
	find_text_and_gofunc(out);
	return 0;
}

/* The fixed part of _func, as far as it is read here. */
struct func {
	uint64_t entry;
	uint64_t off; /* of the _func in tab */
	uint32_t nameoff;
	uint32_t pcfile, pcln;
	uint32_t npcdata;
	uint32_t cu;
	uint32_t start_line;
	uint8_t nfuncdata;
	uint32_t fixed; /* size of the fixed part */
};

static bool read_func(const struct ember_gopclntab *t, uint64_t entry, uint64_t funcoff,
                      struct func *f)
{
	unsigned int p = t->version >= 118 ? 4 : t->ptrsize;
	uint64_t base = t->functab + funcoff;
	const uint8_t *b;

	memset(f, 0, sizeof(*f));
	f->entry = entry;
	f->off = base;
	f->fixed = p + (t->version >= 120 ? 40 : 36);
	if (funcoff >= t->functab_len || f->fixed > t->functab_len - funcoff)
		return false;
	b = t->tab + base + p; /* the fixed part lies inside the table: checked above */
	f->nameoff = (uint32_t)ember_le(b, 4);
	f->pcfile = (uint32_t)ember_le(b + 16, 4);
	f->pcln = (uint32_t)ember_le(b + 20, 4);
	f->npcdata = (uint32_t)ember_le(b + 24, 4);
	f->cu = (uint32_t)ember_le(b + 28, 4);
	if (t->version >= 120)
		f->start_line = (uint32_t)ember_le(b + 32, 4);
	f->nfuncdata = t->tab[base + f->fixed - 1];
	return true;
}

static bool read_uvarint(const uint8_t **p, const uint8_t *end, uint32_t *out)
{
	uint32_t v = 0;

	for (unsigned int shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*p >= end)
			return false;
		b = *(*p)++;
		v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return true;
		}
	}
	return false;
}

/* The value of the pc-value table at off for target; false when none. */
static bool pcvalue(const struct ember_gopclntab *t, uint32_t off, uint64_t entry, uint64_t target,
                    int32_t *out)
{
	const uint8_t *p, *end = t->tab + t->pctab + t->pctab_len;
	uint64_t pc = entry;
	int32_t val = -1;

	if (!off || off >= t->pctab_len)
		return false;
	p = t->tab + t->pctab + off;
	for (uint32_t step = 0; step < EMBER_GO_MAX_PCSTEPS; step++) {
		uint32_t uv, pcdelta;

		if (!read_uvarint(&p, end, &uv) || (uv == 0 && step))
			return false;
		/* Wrapping arithmetic: a hostile table must not overflow a signed int. */
		val = (int32_t)((uint32_t)val + ((uv & 1) ? ~(uv >> 1) : (uv >> 1)));
		if (!read_uvarint(&p, end, &pcdelta))
			return false;
		pc += (uint64_t)pcdelta * t->quantum;
		if (target < pc) {
			*out = val;
			return true;
		}
	}
	return false;
}

static const char *file_name(const struct ember_gopclntab *t, const struct func *f, int32_t fno)
{
	uint64_t idx, off;

	if (fno < 0)
		return NULL;
	idx = ((uint64_t)f->cu + (uint64_t)fno) * 4;
	if (!ember_le_at(t->tab + t->cutab, t->cutab_len, idx, 4, &off) || off == 0xffffffffu)
		return NULL;
	return str_at(t, t->filetab, t->filetab_len, off);
}

static void position(const struct ember_gopclntab *t, const struct func *f, uint64_t pc,
                     struct ember_sym_frame *fr)
{
	int32_t v;

	fr->file = pcvalue(t, f->pcfile, f->entry, pc, &v) ? file_name(t, f, v) : NULL;
	fr->line = pcvalue(t, f->pcln, f->entry, pc, &v) && v > 0 ? (uint32_t)v : 0;
}

/* pcdata table i of f, or 0. */
static uint32_t pcdata_off(const struct ember_gopclntab *t, const struct func *f, uint32_t i)
{
	uint64_t v;

	if (i >= f->npcdata || !tab_rd(t, f->off + f->fixed + 4ull * i, 4, &v))
		return 0;
	return (uint32_t)v;
}

/* Address of f's inline tree, or 0. */
static uint64_t inltree_addr(const struct ember_gopclntab *t, const struct func *f)
{
	uint64_t at = f->off + f->fixed + 4ull * f->npcdata, v;

	if (f->nfuncdata <= FUNCDATA_INL_TREE)
		return 0;
	if (t->version >= 118) {
		if (!t->gofunc || !tab_rd(t, at + 4 * FUNCDATA_INL_TREE, 4, &v) || v == 0xffffffffu)
			return 0;
		return t->gofunc + v;
	}
	/* Before 1.18: pointers, aligned to the pointer size. */
	at = f->off + ((at - f->off + t->ptrsize - 1) & ~(uint64_t)(t->ptrsize - 1));
	if (!tab_rd(t, at + (uint64_t)t->ptrsize * FUNCDATA_INL_TREE, t->ptrsize, &v))
		return 0;
	return v;
}

struct inlined_call {
	uint32_t nameoff;
	int32_t parent_pc;
	uint32_t start_line;
};

static bool read_inlined_call(const struct ember_gopclntab *t, uint64_t tree, int32_t ix,
                              struct inlined_call *c)
{
	unsigned int size = t->version >= 120 ? 16 : 20;
	const uint8_t *b;

	if (ix < 0 || !(b = at_vaddr(t, tree + (uint64_t)ix * size, size)))
		return false;
	if (t->version >= 120) {
		c->nameoff = (uint32_t)ember_le(b + 4, 4);
		c->parent_pc = (int32_t)ember_le(b + 8, 4);
		c->start_line = (uint32_t)ember_le(b + 12, 4);
	} else {
		c->nameoff = (uint32_t)ember_le(b + 12, 4);
		c->parent_pc = (int32_t)ember_le(b + 16, 4);
		c->start_line = 0;
	}
	return true;
}

/* The function containing pc, and where the next one begins. */
static bool find_func(const struct ember_gopclntab *t, uint64_t pc, struct func *f, uint64_t *end)
{
	uint64_t lo = 0, hi = t->nfunc, entry, funcoff, next;

	if (!ftab(t, 0, &entry, &funcoff) || pc < entry || !ftab(t, t->nfunc, &next, &funcoff) ||
	    pc >= next)
		return false;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (!ftab(t, mid, &entry, &funcoff))
			return false;
		if (entry <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (!ftab(t, lo + 1, end, &next) || !ftab(t, lo, &entry, &funcoff) || entry > pc)
		return false;
	return read_func(t, entry, funcoff, f);
}

int ember_gopclntab_lookup(struct ember_gopclntab *t, uint64_t pc, struct ember_sym_frames *out)
{
	struct ember_sym_frame *fr;
	struct func f;
	uint64_t tree, here = pc, end;
	uint32_t inl;
	int32_t ix;

	out->n = 0;
	if (!find_func(t, pc, &f, &end))
		return -ENOENT;
	tree = inltree_addr(t, &f);
	inl = tree ? pcdata_off(t, &f, PCDATA_INL_TREE_INDEX) : 0;
	while (inl && out->n < EMBER_GO_MAX_INLINE - 1 && pcvalue(t, inl, f.entry, here, &ix) &&
	       ix >= 0) {
		struct inlined_call c;

		if (!read_inlined_call(t, tree, ix, &c)) {
			t->errors++;
			break;
		}
		fr = &out->f[out->n++];
		memset(fr, 0, sizeof(*fr));
		fr->name = str_at(t, t->funcnames, t->funcnames_len, c.nameoff);
		position(t, &f, here, fr);
		fr->decl_file = fr->file;
		fr->decl_line = c.start_line;
		if (c.parent_pc < 0 || f.entry + (uint64_t)c.parent_pc >= end) {
			t->errors++;
			break;
		}
		here = f.entry + (uint64_t)c.parent_pc;
	}
	fr = &out->f[out->n++];
	memset(fr, 0, sizeof(*fr));
	fr->name = str_at(t, t->funcnames, t->funcnames_len, f.nameoff);
	position(t, &f, here, fr);
	fr->decl_line = f.start_line;
	{
		struct ember_sym_frame at_entry = {0};

		position(t, &f, f.entry, &at_entry);
		fr->decl_file = at_entry.file;
		if (!fr->decl_line)
			fr->decl_line = at_entry.line;
	}
	if (!fr->name)
		t->errors++;
	return 0;
}
