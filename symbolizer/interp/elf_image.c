// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/elf_image.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Whether the dynamic section says DF_1_PIE (a static PIE has no PT_INTERP). */
static bool is_pie(Elf *elf, const GElf_Phdr *dyn)
{
	Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)dyn->p_offset, dyn->p_filesz, ELF_T_DYN);
	GElf_Dyn e;

	for (size_t i = 0; d && i < dyn->p_filesz / sizeof(Elf64_Dyn) && i < 4096; i++)
		if (!gelf_getdyn(d, (int)i, &e) || e.d_tag == DT_NULL)
			break;
		else if (e.d_tag == DT_FLAGS_1 && (e.d_un.d_val & DF_1_PIE))
			return true;
	return false;
}

int ember_elf_image_open(Elf *elf, struct ember_elf_image *f)
{
	GElf_Ehdr eh;
	size_t nph;

	memset(f, 0, sizeof(*f));
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    gelf_getclass(elf) != ELFCLASS64 || eh.e_machine != EM_X86_64 ||
	    elf_getphdrnum(elf, &nph))
		return -ENOEXEC;
	f->elf = elf;
	f->image = (const uint8_t *)elf_rawfile(elf, &f->len);
	f->executable = eh.e_type == ET_EXEC;
	for (size_t i = 0; f->image && i < nph && f->nloads < EMBER_ELF_IMAGE_MAX_SEGMENTS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD)
			f->loads[f->nloads++] = ph;
		else if (ph.p_type == PT_GNU_EH_FRAME) {
			f->eh_frame_hdr = ph.p_vaddr;
			f->eh_frame_hdr_size = ph.p_filesz;
		} else if (ph.p_type == PT_TLS)
			f->tls = ph;
		else if (ph.p_type == PT_INTERP)
			f->executable = true;
		else if (ph.p_type == PT_DYNAMIC && !f->executable)
			f->executable = is_pie(elf, &ph);
	}
	return f->image && f->nloads ? 0 : -ENOEXEC;
}

uint32_t ember_elf_image_segments(const struct ember_elf_image *f, struct ember_elf_segment *out)
{
	for (size_t i = 0; i < f->nloads; i++)
		out[i] = (struct ember_elf_segment){f->loads[i].p_offset, f->loads[i].p_vaddr,
		                                    f->loads[i].p_filesz};
	return (uint32_t)f->nloads;
}

int ember_elf_image_start(Elf *elf, struct ember_elf_image *f, struct ember_elf_segment *segs,
                          uint32_t *nsegs, const char *const *names, size_t n,
                          struct ember_elf_sym *syms)
{
	int err = ember_elf_image_open(elf, f);

	if (err)
		return err;
	*nsegs = ember_elf_image_segments(f, segs);
	ember_elf_image_symbols(f, names, n, syms);
	return 0;
}

int ember_elf_image_read(const struct ember_elf_image *f, uint64_t vaddr, void *buf, size_t len)
{
	for (size_t i = 0; i < f->nloads; i++) {
		const GElf_Phdr *p = &f->loads[i];

		if (vaddr < p->p_vaddr || vaddr - p->p_vaddr > p->p_filesz ||
		    len > p->p_filesz - (vaddr - p->p_vaddr))
			continue;
		if (p->p_offset > f->len || vaddr - p->p_vaddr + len > f->len - p->p_offset)
			return -EBADMSG;
		memcpy(buf, f->image + p->p_offset + (vaddr - p->p_vaddr), len);
		return 0;
	}
	return -ENOENT;
}

bool ember_elf_image_in_segment(const struct ember_elf_image *f, uint64_t vaddr, uint32_t flag)
{
	for (size_t i = 0; i < f->nloads; i++)
		if ((f->loads[i].p_flags & flag) && vaddr >= f->loads[i].p_vaddr &&
		    vaddr - f->loads[i].p_vaddr < f->loads[i].p_memsz)
			return true;
	return false;
}

void ember_elf_image_symbols(const struct ember_elf_image *f, const char *const *names, size_t n,
                             struct ember_elf_sym *syms)
{
	size_t seen = 0;

	memset(syms, 0, n * sizeof(*syms));
	for (Elf_Scn *scn = elf_nextscn(f->elf, NULL); scn; scn = elf_nextscn(f->elf, scn)) {
		Elf_Data *d;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0;
		     i < sh.sh_size / sh.sh_entsize && seen < EMBER_ELF_IMAGE_MAX_SYMBOLS;
		     i++, seen++) {
			const char *name;
			GElf_Sym s;

			/* A thread-local variable's value is its offset in the TLS block: 0 is one.
			 */
			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
			    (!s.st_value && GELF_ST_TYPE(s.st_info) != STT_TLS) ||
			    !(name = elf_strptr(f->elf, sh.sh_link, s.st_name)))
				continue;
			for (size_t w = 0; w < n; w++)
				if (!syms[w].type && !syms[w].addr && !strcmp(name, names[w]))
					syms[w] = (struct ember_elf_sym){
					    s.st_value, s.st_size,
					    (uint8_t)GELF_ST_TYPE(s.st_info)};
		}
	}
}

int ember_elf_fde_range(Dwarf_CFI *cfi, uint64_t addr, uint64_t *start, uint64_t *end)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr s, e;
	int ok;

	if (!cfi || dwarf_cfi_addrframe(cfi, addr, &frame))
		return -ENOENT;
	ok = dwarf_frame_info(frame, &s, &e, NULL) >= 0 && s <= addr && addr < e;
	free(frame);
	if (!ok)
		return -ENOENT;
	*start = s;
	*end = e;
	return 0;
}

int32_t ember_elf_disp32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

bool ember_elf_bias(const struct ember_elf_segment *segs, size_t n, uint64_t map_offset,
                    uint64_t start, uint64_t *bias)
{
	for (size_t i = 0; i < n; i++) {
		const struct ember_elf_segment *s = &segs[i];

		if (map_offset >= (s->offset & ~(uint64_t)4095) &&
		    map_offset < s->offset + s->filesz) {
			*bias = start - (s->vaddr + (map_offset - s->offset));
			return true;
		}
	}
	return false;
}

/* The .eh_frame_hdr search table's entry i: {initial location, FDE address}. */
static int hdr_entry(const struct ember_elf_image *f, uint64_t table, uint64_t i, uint64_t out[2])
{
	uint8_t pair[8];
	int err = ember_elf_image_read(f, table + 8 * i, pair, sizeof(pair));

	if (err)
		return err;
	out[0] = f->eh_frame_hdr + (int64_t)ember_elf_disp32(pair);
	out[1] = f->eh_frame_hdr + (int64_t)ember_elf_disp32(pair + 4);
	return 0;
}

/* The .eh_frame_hdr search table (GNU's usual encodings): its address and entry count. */
static int fde_table(const struct ember_elf_image *f, uint64_t *table, uint32_t *count)
{
	/* version 1, eh_frame_ptr pcrel sdata4, fde_count udata4, table datarel sdata4 */
	static const uint8_t gnu[4] = {1, 0x1b, 0x03, 0x3b};
	uint8_t hdr[12];

	if (!f->eh_frame_hdr || ember_elf_image_read(f, f->eh_frame_hdr, hdr, sizeof(hdr)) ||
	    memcmp(hdr, gnu, sizeof(gnu)))
		return -ENOENT;
	memcpy(count, hdr + 8, sizeof(*count));
	if (!*count || *count > (f->eh_frame_hdr_size - 12) / 8)
		return -ENOENT;
	*table = f->eh_frame_hdr + 12;
	return 0;
}

/* Entry i's function, [start, end), from its FDE (whose start must be the table's). */
static int fde_entry(const struct ember_elf_image *f, uint64_t table, uint64_t i, uint64_t *start,
                     uint64_t *end)
{
	uint64_t e[2];
	uint8_t fde[16];
	uint32_t range;

	if (hdr_entry(f, table, i, e) || ember_elf_image_read(f, e[1], fde, sizeof(fde)))
		return -ENOENT;
	memcpy(&range, fde + 12, sizeof(range));
	if (e[1] + 8 + (int64_t)ember_elf_disp32(fde + 8) != e[0])
		return -ENOENT;
	*start = e[0];
	*end = e[0] + range;
	return 0;
}

/* The last entry whose start is at or below addr (entry 0 if none is). */
static int fde_find(const struct ember_elf_image *f, uint64_t table, uint32_t count, uint64_t addr,
                    uint64_t *index)
{
	uint64_t lo = 0, hi = count, e[2];

	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (hdr_entry(f, table, mid, e))
			return -ENOENT;
		if (e[0] <= addr)
			lo = mid;
		else
			hi = mid;
	}
	*index = lo;
	return 0;
}

int ember_elf_fde_bounds(const struct ember_elf_image *f, uint64_t addr, uint64_t *start,
                         uint64_t *end)
{
	uint64_t table, i, s, e;
	uint32_t count;

	if (fde_table(f, &table, &count) || fde_find(f, table, count, addr, &i) ||
	    fde_entry(f, table, i, &s, &e) || addr < s || addr >= e)
		return -ENOENT;
	*start = s;
	*end = e;
	return 0;
}

int ember_elf_fde_gap(const struct ember_elf_image *f, uint64_t after, uint64_t within,
                      uint64_t min_gap, uint64_t *start, uint64_t *end)
{
	uint64_t table, i, s, e, next, next_end;
	uint32_t count;

	if (fde_table(f, &table, &count) || fde_find(f, table, count, after, &i) ||
	    fde_entry(f, table, i, &s, &e))
		return -ENOENT;
	for (uint32_t step = 0; step < 4096 && i + 1 < count && e <= after + within; step++, i++) {
		if (fde_entry(f, table, i + 1, &next, &next_end) || next < s)
			return -ENOENT;
		if (next > e && next - e >= min_gap) {
			*start = e;
			*end = next;
			return 0;
		}
		s = next;
		e = next_end > e ? next_end : e;
	}
	return -ENOENT;
}

int ember_elf_glibc_tsd(const uint8_t *code, size_t len, uint16_t *offset)
{
	/* glibc: add $k0, %rax; shl $4, %rax; add %fs:0x10, %rax; mov 8(%rax), %reg:
	 * key k's slot is thread pointer + (k + k0) * 16, its value 8 bytes in. */
	static const uint8_t shl[] = {0x48, 0xc1, 0xe0, 0x04, 0x64, 0x48, 0x03,
	                              0x04, 0x25, 0x10, 0x00, 0x00, 0x00};

	for (size_t i = 0; i + 4 + sizeof(shl) + 4 <= len; i++) {
		const uint8_t *p = code + i, *load = p + 4 + sizeof(shl);

		if (p[0] == 0x48 && p[1] == 0x83 && p[2] == 0xc0 && p[3] < 0x80 &&
		    !memcmp(p + 4, shl, sizeof(shl)) && load[0] == 0x48 && load[1] == 0x8b &&
		    (load[2] & 0xc7) == 0x40) {
			*offset = (uint16_t)(p[3] * 16 + load[3]);
			return 0;
		}
	}
	return -ENOENT;
}

int ember_elf_read_fd(int fd, ember_elf_reader read, void *out)
{
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = read(elf, out);
	elf_end(elf);
	return err;
}

int ember_elf_read_memory(const void *image, size_t len, ember_elf_reader read, void *out)
{
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, len);
	err = read(elf, out);
	elf_end(elf);
	return err;
}

int ember_elf_function_range(const struct ember_elf_image *f, const struct ember_elf_sym *sym,
                             uint64_t max, uint64_t out[2])
{
	out[0] = sym->addr;
	out[1] = sym->addr + sym->size;
	if (!sym->size &&
	    (ember_elf_fde_bounds(f, sym->addr, &out[0], &out[1]) || out[0] != sym->addr))
		out[1] = 0;
	if (sym->type != STT_FUNC || out[1] <= out[0] || out[1] - out[0] > max ||
	    !ember_elf_image_in_segment(f, sym->addr, PF_X))
		return -ENOENT;
	return 0;
}

int ember_elf_decode_dtv(const uint8_t *code, size_t len, uint16_t *offset, uint8_t *shift)
{
	bool have_offset = false;

	for (size_t i = 0; i + 9 <= len; i++) {
		const uint8_t *p = code + i;

		/* mov %fs:disp32, r64: 64 48 8b modrm(00 reg 100) sib(0x25) disp32 */
		if (!have_offset && p[0] == 0x64 && (p[1] & 0xfb) == 0x48 && p[2] == 0x8b &&
		    (p[3] & 0xc7) == 0x04 && p[4] == 0x25) {
			int32_t d = ember_elf_disp32(p + 5);

			if (d < 0 || d >= EMBER_ELF_MAX_DTV_OFFSET)
				return -ENOENT;
			*offset = (uint16_t)d;
			have_offset = true;
		}
		/* shl $n, %rax: the vector's entry size, after the vector is loaded */
		if (have_offset && p[0] == 0x48 && p[1] == 0xc1 && p[2] == 0xe0 && p[3] &&
		    p[3] < 8) {
			*shift = p[3];
			return 0;
		}
	}
	return -ENOENT;
}

#define MAX_RELOCATIONS (1u << 20)
#define R_DTPMOD64      16 /* R_X86_64_DTPMOD64 */
#define R_TPOFF64       18 /* R_X86_64_TPOFF64 */
#define R_TLSDESC       36 /* R_X86_64_TLSDESC */

int ember_elf_relocations(const struct ember_elf_image *f, const char *sym,
                          ember_elf_relocation_fn fn, void *ctx)
{
	size_t seen = 0;

	for (Elf_Scn *scn = elf_nextscn(f->elf, NULL); scn; scn = elf_nextscn(f->elf, scn)) {
		Elf_Scn *symscn;
		Elf_Data *d, *sd;
		GElf_Shdr sh, ssh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)) || !(symscn = elf_getscn(f->elf, sh.sh_link)) ||
		    !gelf_getshdr(symscn, &ssh) || !(sd = elf_getdata(symscn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && seen < MAX_RELOCATIONS;
		     i++, seen++) {
			const char *name;
			GElf_Rela r;
			GElf_Sym s;

			if (!gelf_getrela(d, (int)i, &r) || !GELF_R_SYM(r.r_info) ||
			    !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &s) ||
			    !(name = elf_strptr(f->elf, ssh.sh_link, s.st_name)) ||
			    strcmp(name, sym))
				continue;
			if (fn(ctx, (uint32_t)GELF_R_TYPE(r.r_info), r.r_offset,
			       s.st_value + (uint64_t)r.r_addend))
				return 1;
		}
	}
	return 0;
}

/* Keeps the best relocation (rank: TLSDESC 3, DTPMOD64 2, TPOFF64 1) in the ref at ctx. */
static int best_tls_relocation(void *ctx, uint32_t type, uint64_t offset, uint64_t value)
{
	static const uint8_t modes[] = {0, EMBER_ELF_TLS_IE, EMBER_ELF_TLS_GD, EMBER_ELF_TLS_DESC};
	struct ember_elf_tls_ref *out = ctx;
	int rank = type == R_TLSDESC ? 3 : type == R_DTPMOD64 ? 2 : type == R_TPOFF64;

	(void)value;
	/* The slot holds what the dynamic linker computed for the symbol and this addend:
	 * nothing more is added. */
	if (rank && (!out->mode || rank > (out->mode == EMBER_ELF_TLS_DESC ? 3
	                                   : out->mode == EMBER_ELF_TLS_GD ? 2
	                                                                   : 1)))
		*out = (struct ember_elf_tls_ref){modes[rank], offset, 0};
	return 0;
}

int ember_elf_tls_static(const struct ember_elf_image *f, uint64_t st_value, int64_t *offset)
{
	uint64_t align = f->tls.p_align ? f->tls.p_align : 1, firstbyte, tlsoff;

	/*
	 * The program's own block is the first one below the thread pointer (TLS variant II),
	 * placed as glibc's _dl_determine_tlsoffset places it: its size rounded up to its
	 * alignment, keeping the segment's offset within that alignment.
	 */
	if (!f->executable || f->tls.p_type != PT_TLS || (align & (align - 1)) ||
	    align > (1u << 20) || f->tls.p_memsz > (1u << 20) || st_value >= f->tls.p_memsz)
		return -ENOENT;
	firstbyte = (0 - f->tls.p_vaddr) & (align - 1);
	tlsoff = ((f->tls.p_memsz - firstbyte + align - 1) & ~(align - 1)) + firstbyte;
	*offset = (int64_t)st_value - (int64_t)tlsoff;
	return *offset < 0 ? 0 : -ENOENT;
}

int ember_elf_tls_ref(const struct ember_elf_image *f, const char *sym, uint64_t st_value,
                      struct ember_elf_tls_ref *out)
{
	memset(out, 0, sizeof(*out));
	ember_elf_relocations(f, sym, best_tls_relocation, out);
	if (out->mode)
		return ember_elf_image_in_segment(f, out->slot, PF_W) ? 0 : -ENOENT;
	out->mode = EMBER_ELF_TLS_LE;
	return ember_elf_tls_static(f, st_value, &out->offset);
}

int ember_elf_image_section(const struct ember_elf_image *f, const char *name, const uint8_t **data,
                            size_t *len)
{
	size_t shstrndx;

	if (elf_getshdrstrndx(f->elf, &shstrndx))
		return -ENOENT;
	for (Elf_Scn *scn = elf_nextscn(f->elf, NULL); scn; scn = elf_nextscn(f->elf, scn)) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(f->elf, shstrndx, sh.sh_name)) ||
		    strcmp(n, name))
			continue;
		if (sh.sh_type == SHT_NOBITS || sh.sh_offset > f->len ||
		    sh.sh_size > f->len - sh.sh_offset)
			return -ENOENT;
		*data = f->image + sh.sh_offset;
		*len = sh.sh_size;
		return 0;
	}
	return -ENOENT;
}

bool ember_elf_image_dtv(const struct ember_elf_image *f, const struct ember_elf_sym *tls_get_addr,
                         uint16_t *offset, uint8_t *shift)
{
	uint8_t code[128];

	return tls_get_addr->addr && tls_get_addr->type == STT_FUNC &&
	       !ember_elf_image_read(f, tls_get_addr->addr, code, sizeof(code)) &&
	       !ember_elf_decode_dtv(code, sizeof(code), offset, shift);
}
