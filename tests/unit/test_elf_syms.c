// SPDX-License-Identifier: Apache-2.0
/*
 * ELF symbol lookup against this test program itself, hostile inputs, and
 * the corners: small files the build makes (fixtures/corners.S) with nested,
 * sizeless and untyped symbols, a PLT, and their section headers removed.
 */
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "mini_elf.h"
#include "self_elf.h"
#include "symbolizer/symbols/elf_syms.h"
#include "symbolizer/symbols/plt.h"
#include "symbolizer/symbols/sym_frame.h"
#include "symbolizer/process/maps_parser.h"

__attribute__((noinline)) int ember_test_marker_function(int x)
{
	return x * 3 + 1;
}

static struct ember_elf_syms self_syms;

static void load_self(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ember_elf_syms_load(fd, &self_syms), 0);
	close(fd);
}

static void free_self(void)
{
	ember_elf_syms_free(&self_syms);
}

static uint64_t elf_addr_of(const void *fn)
{
	return self_elf_addr_of(&self_syms, fn);
}

START_TEST(finds_own_functions)
{
	const struct ember_elf_sym *sym;
	uint64_t a = elf_addr_of((const void *)ember_test_marker_function);

	ck_assert(self_syms.has_symtab);
	ck_assert_uint_gt(self_syms.nsyms, 10);
	sym = ember_elf_syms_lookup(&self_syms, a);
	ck_assert_ptr_nonnull(sym);
	ck_assert_str_eq(ember_elf_sym_name(&self_syms, sym), "ember_test_marker_function");
	/* An address inside the function, not only its start. */
	sym = ember_elf_syms_lookup(&self_syms, a + 3);
	ck_assert_str_eq(ember_elf_sym_name(&self_syms, sym), "ember_test_marker_function");
	a = elf_addr_of((const void *)ember_elf_syms_lookup);
	ck_assert_str_eq(ember_elf_sym_name(&self_syms, ember_elf_syms_lookup(&self_syms, a)),
	                 "ember_elf_syms_lookup");
	ck_assert_ptr_null(ember_elf_syms_lookup(&self_syms, 0));
}
END_TEST

START_TEST(reads_build_id)
{
	ck_assert_uint_eq(self_syms.build_id_len, 20);
	ck_assert_uint_eq(strlen(self_syms.build_id_hex), 40);
	ck_assert_uint_gt(self_syms.nsegments, 1);
	ck_assert(self_syms.e_type == 2 || self_syms.e_type == 3);
}
END_TEST

START_TEST(offsets_outside_segments)
{
	uint64_t v;

	ck_assert_int_eq(ember_elf_offset_to_vaddr(&self_syms, UINT64_MAX - 5, &v), -ENOENT);
}
END_TEST

START_TEST(not_elf_is_enoexec)
{
	struct ember_elf_syms s;
	static const char junk[] = "this is not an ELF file at all, not even close";

	ck_assert_int_eq(ember_elf_syms_load_mem(junk, sizeof(junk), &s), -ENOEXEC);
	ck_assert_int_eq(ember_elf_syms_load_mem(junk, 0, &s), -ENOEXEC);
}
END_TEST

/* Truncations and bit flips of a real ELF file must never crash. */
START_TEST(mangled_copies_of_self_are_survived)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	struct stat st;
	unsigned char *orig, *copy;
	size_t len;

	ck_assert_int_eq(fstat(fd, &st), 0);
	len = (size_t)st.st_size;
	orig = malloc(len);
	copy = malloc(len);
	ck_assert_int_eq(pread(fd, orig, len, 0), (ssize_t)len);
	close(fd);
	srand(7);
	for (int round = 0; round < 300; round++) {
		struct ember_elf_syms s;
		size_t cut = round < 100 ? (size_t)rand() % len : len;

		memcpy(copy, orig, len);
		if (round >= 100)
			for (int k = 0; k < 1 + rand() % 16; k++)
				/* Mostly the headers, where offsets and counts live. */
				copy[(size_t)rand() % (rand() % 2 ? 512 : len)] ^=
				    (unsigned char)(1u << (rand() % 8));
		if (ember_elf_syms_load_mem(copy, cut, &s) == 0) {
			/* Disjoint ranges in order, none empty. */
			for (size_t i = 0; i < s.nsyms; i++) {
				ck_assert_uint_gt(s.syms[i].size, 0);
				if (i)
					ck_assert_uint_ge(s.syms[i].addr - s.syms[i - 1].addr,
					                  s.syms[i - 1].size);
			}
			ember_elf_syms_free(&s);
		}
	}
	free(orig);
	free(copy);
}
END_TEST

/*
 * 60,000 PT_NOTE headers, each over most of a 1 MB run of empty notes:
 * reading them all walked 60,000 x 87,000 notes (and, big-endian, libelf
 * copied each to convert it). Only the first few are read.
 */
START_TEST(many_note_segments_are_capped)
{
	enum { NPH = 60000, NOTES = 1u << 20 };
	Elf64_Phdr *ph = calloc(NPH, sizeof(*ph));
	uint8_t *notes = calloc(1, NOTES), *img,
		gnu[16 + 20] = {4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0, 0xab};
	struct mini_section sec = {".notes", SHT_PROGBITS, 0, 0, notes, NOTES, 0, 0, 0};
	struct ember_elf_syms s;
	Elf64_Shdr sh;
	Elf64_Ehdr eh;
	size_t len;

	ck_assert_ptr_nonnull(ph);
	ck_assert_ptr_nonnull(notes);
	memcpy(notes, gnu, sizeof(gnu)); /* a build id first, so a read note is seen */
	for (size_t i = 0; i < NPH; i++) {
		ph[i].p_type = PT_NOTE;
		ph[i].p_align = 4;
		ph[i].p_filesz = NOTES - 4 * (i % 1000); /* distinct chunks: no cache helps */
	}
	mini_elf(&sec, 1, ph, NPH, &img, &len);
	memcpy(&eh, img, sizeof(eh));
	memcpy(&sh, img + eh.e_shoff + sizeof(sh), sizeof(sh));
	for (size_t i = 0; i < NPH; i++) {
		Elf64_Phdr *p = (Elf64_Phdr *)(img + eh.e_phoff) + i;

		p->p_offset = sh.sh_offset + 4 * (i % 1000);
	}
	/* Small notes are still read: the first header covers the build id alone. */
	((Elf64_Phdr *)(img + eh.e_phoff))->p_filesz = sizeof(gnu);
	ck_assert_int_eq(ember_elf_syms_load_mem(img, len, &s), 0);
	ck_assert_uint_eq(s.build_id_len, 20);
	ck_assert_str_eq(s.build_id_hex, "ab00000000000000000000000000000000000000");
	ember_elf_syms_free(&s);
	free(img);
	free(notes);
	free(ph);
}
END_TEST

/* A PLT the test writes itself, for a machine no toolchain here builds for. */
static uint32_t a64_adrp_x16(uint64_t pc, uint64_t target)
{
	uint64_t pages = ((target & ~0xfffull) - (pc & ~0xfffull)) >> 12;

	return 0x90000010u | (uint32_t)(pages & 3) << 29 | (uint32_t)((pages >> 2) & 0x7ffff) << 5;
}

static uint32_t a64_ldr_x17(uint64_t target)
{
	return 0xf9400211u | (uint32_t)((target & 0xfff) / 8) << 10;
}

START_TEST(aarch64_plt_entries_are_named_from_adrp_and_ldr)
{
	enum { PLT = 0x10000, IPLT = 0x10100, GAMMA = 0x11000, GOT = 0x20000 };
	static const char dynstr[] = "\0alpha\0beta\0gamma";
	Elf64_Sym dynsym[4] = {{0}};
	Elf64_Rela rela[2], irela;
	uint32_t plt[8 + 2 * 4], iplt[4];
	struct mini_section secs[] = {
	    {".dynsym", SHT_DYNSYM, SHF_ALLOC, 0x400, dynsym, sizeof(dynsym), 2, 1,
	     sizeof(Elf64_Sym)},
	    {".dynstr", SHT_STRTAB, SHF_ALLOC, 0x500, dynstr, sizeof(dynstr), 0, 0, 0},
	    {".rela.plt", SHT_RELA, SHF_ALLOC, 0x600, rela, sizeof(rela), 1, 0, sizeof(Elf64_Rela)},
	    {".plt", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, PLT, plt, sizeof(plt), 0, 0, 16},
	    /* As lld lays out an IFUNC called through the PLT: its entry in .iplt,
	     * its IRELATIVE relocation in .rela.dyn. */
	    {".rela.dyn", SHT_RELA, SHF_ALLOC, 0x700, &irela, sizeof(irela), 1, 0,
	     sizeof(Elf64_Rela)},
	    {".iplt", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, IPLT, iplt, sizeof(iplt), 0, 0, 16},
	};
	Elf64_Phdr ph = {
	    .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_memsz = 0x30000, .p_filesz = 0x30000};
	struct ember_elf_syms s;
	const struct ember_elf_sym *sym;
	uint8_t *img;
	size_t len;

	dynsym[1].st_name = 1;
	dynsym[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	dynsym[2].st_name = 7;
	dynsym[2].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	dynsym[3].st_name = 12; /* an IFUNC: gamma's resolver is at GAMMA */
	dynsym[3].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_GNU_IFUNC);
	dynsym[3].st_shndx = 4;
	dynsym[3].st_value = GAMMA;
	dynsym[3].st_size = 8;
	irela = (Elf64_Rela){GOT + 0x28, ELF64_R_INFO(0, 1032 /* IRELATIVE */), GAMMA};
	iplt[0] = a64_adrp_x16(IPLT, GOT + 0x28);
	iplt[1] = a64_ldr_x17(GOT + 0x28);
	iplt[2] = 0x91000210u | (uint32_t)((GOT + 0x28) & 0xfff) << 10;
	iplt[3] = 0xd61f0220u;
	/* beta's slot first: the entries are found by their slot, not their order. */
	rela[0] = (Elf64_Rela){GOT + 0x18, ELF64_R_INFO(2, 1026 /* JUMP_SLOT */), 0};
	rela[1] = (Elf64_Rela){GOT + 0x20, ELF64_R_INFO(1, 1026), 0};
	/* The header: stp x16, x30, [sp, #-16]!; adrp x16, GOT+16; ldr x17; add; br x17; nops. */
	plt[0] = 0xa9bf7bf0u;
	plt[1] = a64_adrp_x16(PLT + 4, GOT + 0x10);
	plt[2] = a64_ldr_x17(GOT + 0x10);
	for (int i = 3; i < 8; i++)
		plt[i] = 0xd503201fu;
	for (int e = 0; e < 2; e++) {
		uint64_t pc = PLT + 32 + 16 * (uint64_t)e, slot = GOT + 0x20 - 8 * (uint64_t)e;

		plt[8 + 4 * e] = a64_adrp_x16(pc, slot);
		plt[9 + 4 * e] = a64_ldr_x17(slot);
		plt[10 + 4 * e] = 0x91000210u | (uint32_t)(slot & 0xfff) << 10; /* add x16 */
		plt[11 + 4 * e] = 0xd61f0220u;                                  /* br x17 */
	}
	mini_elf(secs, 6, &ph, 1, &img, &len);
	((Elf64_Ehdr *)img)->e_machine = EM_AARCH64;
	ck_assert_int_eq(ember_elf_syms_load_mem(img, len, &s), 0);
	sym = ember_elf_syms_lookup(&s, PLT + 8);
	ck_assert_ptr_nonnull(sym);
	ck_assert_str_eq(ember_elf_sym_name(&s, sym), "[plt]");
	sym = ember_elf_syms_lookup(&s, PLT + 32 + 4);
	ck_assert_ptr_nonnull(sym);
	ck_assert_str_eq(ember_elf_sym_name(&s, sym), "alpha@plt");
	ck_assert_uint_eq(sym->addr, PLT + 32);
	ck_assert_uint_eq(sym->size, 16);
	sym = ember_elf_syms_lookup(&s, PLT + 48 + 12);
	ck_assert_ptr_nonnull(sym);
	ck_assert_str_eq(ember_elf_sym_name(&s, sym), "beta@plt");
	ck_assert(sym->flags & EMBER_ELF_SYM_PLT);
	ck_assert_ptr_null(ember_elf_syms_lookup(&s, PLT + 64));
	sym = ember_elf_syms_lookup(&s, IPLT + 8);
	ck_assert_ptr_nonnull(sym);
	ck_assert_str_eq(ember_elf_sym_name(&s, sym), "gamma@plt");
	ck_assert_uint_eq(sym->addr, IPLT);
	ember_elf_syms_free(&s);
	free(img);
}
END_TEST

/*
 * 400 functions nested in one another, each one byte inside the last: deeper
 * than EMBER_ELF_MAX_NESTING. The ranges stay disjoint, every address inside
 * the outermost is named, and the deepest kept names the middle.
 */
START_TEST(deep_nesting_is_capped)
{
	enum { N = 400, TEXT = 0x1000, LEN = 2 * N };
	Elf64_Sym *syms = calloc(N + 1, sizeof(*syms));
	char *strs = calloc(1, 8 * N + 1),
	     *text = calloc(1, LEN); /* "" at 0, then 8 bytes a name */
	struct mini_section secs[] = {
	    {".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, TEXT, text, LEN, 0, 0, 0},
	    {".symtab", SHT_SYMTAB, 0, 0, syms, (N + 1) * sizeof(*syms), 3, 1, sizeof(*syms)},
	    {".strtab", SHT_STRTAB, 0, 0, strs, 8 * N + 1, 0, 0, 0},
	};
	Elf64_Phdr ph = {.p_type = PT_LOAD,
	                 .p_flags = PF_R | PF_X,
	                 .p_vaddr = TEXT,
	                 .p_filesz = LEN,
	                 .p_memsz = LEN};
	struct ember_elf_syms s;
	const struct ember_elf_sym *sym;
	uint8_t *img;
	size_t len;

	for (int i = 0; i < N; i++) {
		snprintf(strs + 1 + 8 * i, 8, "n%d", i);
		syms[i + 1].st_name = (uint32_t)(1 + 8 * i);
		syms[i + 1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		syms[i + 1].st_shndx = 1;
		syms[i + 1].st_value = TEXT + (uint64_t)i;
		syms[i + 1].st_size = LEN - 2 * (uint64_t)i;
	}
	mini_elf(secs, 3, &ph, 1, &img, &len);
	ck_assert_int_eq(ember_elf_syms_load_mem(img, len, &s), 0);
	for (size_t i = 1; i < s.nsyms; i++)
		ck_assert_uint_ge(s.syms[i].addr - s.syms[i - 1].addr, s.syms[i - 1].size);
	for (uint64_t a = TEXT; a < TEXT + LEN; a++)
		ck_assert_ptr_nonnull(ember_elf_syms_lookup(&s, a));
	sym = ember_elf_syms_lookup(&s, TEXT + N);
	ck_assert_str_eq(ember_elf_sym_name(&s, sym), "n255");
	ck_assert_str_eq(ember_elf_sym_name(&s, ember_elf_syms_lookup(&s, TEXT)), "n0");
	ck_assert_str_eq(ember_elf_sym_name(&s, ember_elf_syms_lookup(&s, TEXT + LEN - 1)), "n0");
	ember_elf_syms_free(&s);
	free(img);
	free(syms);
	free(strs);
	free(text);
}
END_TEST

/*
 * Names left in the file (ember_elf_syms_load_mapped): the same ranges and names as
 * copied ones, all but a few pointing into the file's own string table, for a
 * fraction of the memory; moved to a new handle of the same file with rebind (the
 * first handle's mapping then gone), refused for another file.
 */
START_TEST(mapped_names_stay_in_the_file)
{
	int fd = open("/proc/self/exe", O_RDONLY), other = open("/bin/sh", O_RDONLY);
	Elf *elf, *again, *sh;
	struct ember_elf_syms s;
	size_t in_file = 0, raw_len;
	const char *raw;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(other, 0);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ck_assert_int_eq(ember_elf_syms_load_mapped(elf, &s), 0);
	ck_assert_uint_eq(s.nsyms, self_syms.nsyms);
	raw = elf_rawfile(elf, &raw_len);
	for (size_t i = 0; i < s.nsyms; i++) {
		const char *name = ember_elf_sym_name(&s, &s.syms[i]);

		ck_assert_uint_eq(s.syms[i].addr, self_syms.syms[i].addr);
		ck_assert_uint_eq(s.syms[i].size, self_syms.syms[i].size);
		ck_assert_str_eq(name, ember_elf_sym_name(&self_syms, &self_syms.syms[i]));
		/* Only the PLT's names are made here. */
		ck_assert(s.syms[i].flags & (EMBER_ELF_SYM_IN_FILE | EMBER_ELF_SYM_PLT));
		if (s.syms[i].flags & EMBER_ELF_SYM_IN_FILE) {
			in_file++;
			ck_assert(name >= raw && name < raw + raw_len);
		}
	}
	ck_assert_uint_gt(in_file, s.nsyms / 2);
	ck_assert_uint_lt(s.names.len, self_syms.names.len / 2);
	ck_assert_uint_lt(s.bytes, self_syms.bytes);
	again = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ck_assert_int_eq(ember_elf_syms_rebind(&s, again), 0);
	elf_end(elf);
	for (size_t i = 0; i < s.nsyms; i++)
		ck_assert_str_eq(ember_elf_sym_name(&s, &s.syms[i]),
		                 ember_elf_sym_name(&self_syms, &self_syms.syms[i]));
	sh = elf_begin(other, ELF_C_READ_MMAP, NULL);
	ck_assert_int_eq(ember_elf_syms_rebind(&s, sh), -ESTALE);
	ck_assert_str_eq(
	    ember_elf_sym_name(&s, ember_elf_syms_lookup(&s, elf_addr_of((const void *)load_self))),
	    "load_self");
	ember_elf_syms_free(&s);
	elf_end(sh);
	elf_end(again);
	close(other);
	close(fd);
}
END_TEST

/*
 * A name longer than the limit is copied, cut there; one whose end lies past the
 * string table's (the last bytes of the section, no NUL) is not read at all.
 */
START_TEST(long_and_unterminated_names_are_not_left_in_the_file)
{
	enum { TEXT = 0x1000, LEN = 0x40, LONG = 5000 };
	Elf64_Sym syms[4] = {0};
	char *strs = calloc(1, LONG + 64), text[LEN] = {0};
	size_t strs_len;
	struct mini_section secs[] = {
	    {".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, TEXT, text, LEN, 0, 0, 0},
	    {".symtab", SHT_SYMTAB, 0, 0, syms, sizeof(syms), 3, 1, sizeof(*syms)},
	    {".strtab", SHT_STRTAB, 0, 0, strs, 0, 0, 0, 0},
	};
	Elf64_Phdr ph = {.p_type = PT_LOAD,
	                 .p_flags = PF_R | PF_X,
	                 .p_vaddr = TEXT,
	                 .p_filesz = LEN,
	                 .p_memsz = LEN};
	const struct ember_elf_sym *sym;
	struct ember_elf_syms s;
	uint8_t *img;
	size_t len;
	Elf *elf;

	strcpy(strs + 1, "short_one");
	memset(strs + 11, 'x', LONG);
	strs_len = 11 + LONG + 1;
	memcpy(strs + strs_len, "unterminated", 12); /* the section ends here */
	strs_len += 12;
	secs[2].len = strs_len;
	for (int i = 1; i < 4; i++) {
		syms[i].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		syms[i].st_shndx = 1;
		syms[i].st_value = TEXT + 0x10 * (uint64_t)(i - 1);
		syms[i].st_size = 0x10;
	}
	syms[1].st_name = 1;
	syms[2].st_name = 11;
	syms[3].st_name = (uint32_t)(strs_len - 12);
	mini_elf(secs, 3, &ph, 1, &img, &len);
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)img, len);
	ck_assert_int_eq(ember_elf_syms_load_mapped(elf, &s), 0);
	sym = ember_elf_syms_lookup(&s, TEXT);
	ck_assert_str_eq(ember_elf_sym_name(&s, sym), "short_one");
	ck_assert(sym->flags & EMBER_ELF_SYM_IN_FILE);
	sym = ember_elf_syms_lookup(&s, TEXT + 0x10);
	ck_assert(!(sym->flags & EMBER_ELF_SYM_IN_FILE));
	ck_assert_uint_eq(strlen(ember_elf_sym_name(&s, sym)), 4096);
	ck_assert_ptr_null(ember_elf_syms_lookup(&s, TEXT + 0x20));
	ember_elf_syms_free(&s);
	elf_end(elf);
	free(img);
	free(strs);
}
END_TEST

/*
 * A file rewritten in place while it is mapped (its owner may): the string section
 * loses every NUL. A name read then is cut at the section's end, never read past it
 * into what follows in the file.
 */
START_TEST(names_of_a_file_rewritten_in_place_stay_in_their_section)
{
	enum { TEXT = 0x1000, LEN = 0x20 };
	Elf64_Sym syms[2] = {0};
	char strs[] = "\0alpha_function\0beta", text[LEN] = {0},
	     path[] = "/tmp/ember-rewrite-XXXXXX";
	struct mini_section secs[] = {
	    {".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, TEXT, text, LEN, 0, 0, 0},
	    {".symtab", SHT_SYMTAB, 0, 0, syms, sizeof(syms), 3, 1, sizeof(*syms)},
	    {".strtab", SHT_STRTAB, 0, 0, strs, sizeof(strs), 0, 0, 0},
	};
	Elf64_Phdr ph = {.p_type = PT_LOAD,
	                 .p_flags = PF_R | PF_X,
	                 .p_vaddr = TEXT,
	                 .p_filesz = LEN,
	                 .p_memsz = LEN};
	char buf[EMBER_SYM_NAME_COPY], junk[sizeof(strs) + 40];
	const struct ember_elf_sym *sym;
	struct ember_elf_syms s;
	uint8_t *img;
	size_t len, off;
	int fd = mkstemp(path);
	Elf *elf;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	syms[1] = (Elf64_Sym){.st_name = 1,
	                      .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
	                      .st_shndx = 1,
	                      .st_value = TEXT,
	                      .st_size = LEN};
	mini_elf(secs, 3, &ph, 1, &img, &len);
	ck_assert_int_eq(write(fd, img, len), (ssize_t)len);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ck_assert_int_eq(ember_elf_syms_load_mapped(elf, &s), 0);
	sym = ember_elf_syms_lookup(&s, TEXT);
	ck_assert(sym->flags & EMBER_ELF_SYM_IN_FILE);
	ck_assert_str_eq(ember_elf_sym_name_copy(&s, sym, buf, sizeof(buf)), "alpha_function");
	/* Every byte of the string section and of what follows it becomes 'x' (the mapping
	 * sees the file's pages). */
	off = (size_t)(s.file_names - elf_rawfile(elf, NULL));
	memset(junk, 'x', sizeof(junk));
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), (off_t)off), (ssize_t)sizeof(junk));
	ck_assert_uint_eq(strlen(ember_elf_sym_name_copy(&s, sym, buf, sizeof(buf))),
	                  sizeof(strs) - 1);
	ck_assert_uint_eq(strlen(ember_elf_sym_name_copy(&s, sym, buf, 4)), 3);
	ember_elf_syms_free(&s);
	elf_end(elf);
	close(fd);
	free(img);
}
END_TEST

#ifdef EMBER_ELF_FIXTURES
/* Files made by tests/unit/CMakeLists.txt from fixtures/corners.S. */
static uint8_t *read_fixture(const char *name, size_t *len)
{
	char path[512];
	struct stat st;
	uint8_t *buf;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", EMBER_ELF_FIXTURES, name);
	fd = open(path, O_RDONLY);
	ck_assert_msg(fd >= 0, "%s is missing: build the elf_fixtures target", path);
	ck_assert_int_eq(fstat(fd, &st), 0);
	*len = (size_t)st.st_size;
	buf = malloc(*len);
	ck_assert_int_eq(pread(fd, buf, *len, 0), (ssize_t)*len);
	close(fd);
	return buf;
}

/* The first range of the symbol called name (not a resumed rest), or NULL. */
static const struct ember_elf_sym *first_range(const struct ember_elf_syms *s, const char *name)
{
	for (size_t i = 0; i < s->nsyms; i++)
		if (!(s->syms[i].flags & EMBER_ELF_SYM_RESUMED) &&
		    !strcmp(ember_elf_sym_name(s, &s->syms[i]), name))
			return &s->syms[i];
	return NULL;
}

static const char *name_at(const struct ember_elf_syms *s, uint64_t addr)
{
	const struct ember_elf_sym *sym = ember_elf_syms_lookup(s, addr);

	return sym ? ember_elf_sym_name(s, sym) : "(none)";
}

static uint64_t addr_of(const struct ember_elf_syms *s, const char *name)
{
	const struct ember_elf_sym *sym = first_range(s, name);

	ck_assert_msg(sym != NULL, "no symbol %s", name);
	return sym->addr;
}

static void load_fixture(const char *name, struct ember_elf_syms *s, uint8_t **img)
{
	size_t len;

	*img = read_fixture(name, &len);
	ck_assert_int_eq(ember_elf_syms_load_mem(*img, len, s), 0);
}

/* corners.S lays sized_outer out as 0x40 bytes with three symbols inside. */
static void check_nesting(const struct ember_elf_syms *s)
{
	uint64_t a = addr_of(s, "sized_outer");

	ck_assert_str_eq(name_at(s, a), "sized_outer");
	ck_assert_str_eq(name_at(s, a + 0xf), "sized_outer");
	ck_assert_str_eq(name_at(s, a + 0x10), "nested_inner");
	ck_assert_str_eq(name_at(s, a + 0x1f), "nested_inner");
	/* After the nested function the enclosing one resumes: the sizeless
	 * function and the untyped label inside it swallow nothing. */
	ck_assert_str_eq(name_at(s, a + 0x20), "sized_outer");
	ck_assert_str_eq(name_at(s, a + 0x30), "sized_outer");
	ck_assert_str_eq(name_at(s, a + 0x3f), "sized_outer");
	ck_assert_ptr_null(first_range(s, "sizeless_inside"));
	ck_assert_ptr_null(first_range(s, "label_inside"));
	ck_assert_str_eq(name_at(s, a + 0x40), "untyped_code");
}

START_TEST(nested_symbols_resume_their_enclosing_one)
{
	struct ember_elf_syms s;
	uint8_t *img;

	load_fixture("libcorners.so", &s, &img);
	ck_assert(s.has_symtab);
	check_nesting(&s);
	ck_assert(ember_elf_syms_lookup(&s, addr_of(&s, "sized_outer") + 0x20)->flags &
	          EMBER_ELF_SYM_RESUMED);
	ember_elf_syms_free(&s);
	free(img);
}
END_TEST

START_TEST(untyped_and_sizeless_symbols_name_what_nothing_else_covers)
{
	struct ember_elf_syms s;
	const struct ember_elf_sym *sym;
	uint64_t untyped, sizeless;
	uint8_t *img;

	load_fixture("libcorners.so", &s, &img);
	untyped = addr_of(&s, "untyped_code");
	sizeless = addr_of(&s, "sizeless_func");
	ck_assert_uint_eq(sizeless - untyped, 0x20);
	sym = ember_elf_syms_lookup(&s, untyped + 0x1f);
	ck_assert_str_eq(ember_elf_sym_name(&s, sym), "untyped_code");
	ck_assert(sym->flags & EMBER_ELF_SYM_NOTYPE);
	/* A sizeless function runs to the next symbol, no further. */
	sym = ember_elf_syms_lookup(&s, sizeless + 0x1f);
	ck_assert_str_eq(ember_elf_sym_name(&s, sym), "sizeless_func");
	ck_assert(sym->flags & EMBER_ELF_SYM_SIZELESS);
	ck_assert_uint_eq(sym->size, 0x20);
	ck_assert_str_eq(name_at(&s, sizeless + 0x20), "calls_plt");
	ember_elf_syms_free(&s);
	free(img);
}
END_TEST

/* The calls in calls_plt, decoded from the file: the PLT entries they reach. */
static void plt_call_targets(const struct ember_elf_syms *s, const uint8_t *img, uint64_t t[3])
{
	uint64_t at = addr_of(s, "calls_plt"), off;

	ck_assert_int_eq(ember_elf_vaddr_to_offset(s, at, 15, &off), 0);
	for (int i = 0; i < 3; i++) {
		const uint8_t *c = img + off + 5 * (size_t)i;
		int32_t rel;

		ck_assert_uint_eq(c[0], 0xe8); /* call rel32 */
		memcpy(&rel, c + 1, 4);
		t[i] = at + 5 * (uint64_t)(i + 1) + (uint64_t)(int64_t)rel;
	}
}

static void check_plt(const char *fixture)
{
	static const char *const want[3] = {"ext_alpha@plt", "ext_beta@plt", "ext_gamma@plt"};
	struct ember_elf_syms s;
	uint64_t t[3];
	uint8_t *img;

	load_fixture(fixture, &s, &img);
	plt_call_targets(&s, img, t);
	for (int i = 0; i < 3; i++) {
		const struct ember_elf_sym *sym = ember_elf_syms_lookup(&s, t[i]);

		ck_assert_msg(sym != NULL, "%s: nothing at %#lx", fixture, (unsigned long)t[i]);
		ck_assert_str_eq(ember_elf_sym_name(&s, sym), want[i]);
		ck_assert(sym->flags & EMBER_ELF_SYM_PLT);
		ck_assert_uint_eq(sym->addr, t[i]);
		ck_assert_str_eq(name_at(&s, t[i] + sym->size - 1), want[i]);
	}
	/* The PLT header resolves nothing: it is [plt], not the symbol before it. */
	ck_assert_str_eq(name_at(&s, addr_of(&s, "_init") + 0x20), "[plt]");
	ember_elf_syms_free(&s);
	free(img);
}

START_TEST(plt_entries_are_named_after_their_targets)
{
	check_plt("libcorners.so");
}
END_TEST

START_TEST(ibt_plt_entries_are_named_after_their_targets)
{
	check_plt("libcorners-ibt.so");
}
END_TEST

/*
 * An IFUNC called through the PLT (fixtures/src/ifunc_plt.c): the slot's
 * IRELATIVE relocation names no symbol, its addend is the resolver, where
 * the IFUNC symbol says what the program calls.
 */
START_TEST(ifunc_plt_entry_is_named_after_the_ifunc)
{
	struct ember_elf_syms s;
	const struct ember_elf_sym *plt = NULL;
	uint8_t *img;

	load_fixture("libifunc-plt.so", &s, &img);
	for (size_t i = 0; i < s.nsyms; i++)
		if ((s.syms[i].flags & EMBER_ELF_SYM_PLT) &&
		    strcmp(ember_elf_sym_name(&s, &s.syms[i]), EMBER_PLT_UNKNOWN)) {
			ck_assert_msg(plt == NULL, "two named PLT entries");
			plt = &s.syms[i];
		}
	ck_assert_ptr_nonnull(plt);
	ck_assert_str_eq(ember_elf_sym_name(&s, plt), "picked@plt");
	/* The code at the resolver is the resolver. */
	ck_assert_str_eq(name_at(&s, addr_of(&s, "resolve_picked")), "resolve_picked");
	ember_elf_syms_free(&s);
	free(img);
}
END_TEST

/* A sink whose names move when it grows, as a string table's storage does. */
struct moving_sink {
	char name[32];
	char got[8][64];
	size_t n;
};

static int moving_add(void *ctx, uint64_t addr, uint64_t size, const char *name)
{
	struct moving_sink *m = ctx;

	(void)addr;
	(void)size;
	memset(m->name, 0, sizeof(m->name)); /* what name_at gave is gone */
	if (m->n < 8)
		snprintf(m->got[m->n++], sizeof(m->got[0]), "%s", name);
	return 0;
}

static const char *moving_name_at(void *ctx, uint64_t addr)
{
	struct moving_sink *m = ctx;

	(void)addr;
	snprintf(m->name, sizeof(m->name), "picked");
	return m->name;
}

START_TEST(ifunc_target_name_is_copied_before_the_sink_grows)
{
	struct moving_sink m = {0};
	struct ember_plt_sink sink = {&m, moving_add, moving_name_at};
	size_t len;
	uint8_t *img = read_fixture("libifunc-plt.so", &len);
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)img, len);
	ck_assert_ptr_nonnull(elf);
	ck_assert_int_eq(ember_plt_entries(elf, EM_X86_64, &sink), 0);
	/* The header first (added just before the entry is), then the entry. */
	ck_assert_uint_eq(m.n, 2);
	ck_assert_str_eq(m.got[0], EMBER_PLT_UNKNOWN);
	ck_assert_str_eq(m.got[1], "picked@plt");
	elf_end(elf);
	free(img);
}
END_TEST

START_TEST(sizeless_symbol_stops_at_the_end_of_its_section)
{
	struct ember_elf_syms s;
	const struct ember_elf_sym *sym;
	uint8_t *img;

	/* A debug file: .init and .plt are NOBITS, so nothing names the PLT here
	 * and the sizeless _init (0x17 bytes of .init) must not claim it. */
	load_fixture("libcorners.debug", &s, &img);
	sym = first_range(&s, "_init");
	ck_assert_ptr_nonnull(sym);
	ck_assert_uint_eq(sym->size, 0x17);
	ck_assert(sym->flags & EMBER_ELF_SYM_SIZELESS);
	ck_assert_str_eq(name_at(&s, sym->addr + 0x16), "_init");
	ck_assert_str_eq(name_at(&s, sym->addr + 0x17), "(none)");
	ck_assert_str_eq(name_at(&s, sym->addr + 0x30), "(none)");
	check_nesting(&s);
	ember_elf_syms_free(&s);
	free(img);
}
END_TEST

/* What sstrip does: no section header table at all. */
static void drop_section_headers(uint8_t *img)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;

	eh->e_shoff = 0;
	eh->e_shnum = 0;
	eh->e_shstrndx = 0;
}

static void check_without_sections(const char *fixture)
{
	struct ember_elf_syms s;
	uint8_t *img;
	size_t len;

	img = read_fixture(fixture, &len);
	drop_section_headers(img);
	ck_assert_int_eq(ember_elf_syms_load_mem(img, len, &s), 0);
	ck_assert(s.from_dynamic);
	ck_assert(!s.has_symtab);
	ck_assert_uint_eq(s.build_id_len, 20); /* the note segment still says it */
	check_nesting(&s);
	ck_assert_str_eq(name_at(&s, addr_of(&s, "sizeless_func") + 0x1f), "sizeless_func");
	ck_assert_str_eq(name_at(&s, addr_of(&s, "calls_plt") + 3), "calls_plt");
	ember_elf_syms_free(&s);
	free(img);
}

START_TEST(files_without_section_headers_read_dynsym_through_gnu_hash)
{
	check_without_sections("libcorners.so");
}
END_TEST

START_TEST(files_without_section_headers_read_dynsym_through_sysv_hash)
{
	check_without_sections("libcorners-sysv.so");
}
END_TEST

START_TEST(dynamic_tables_out_of_bounds_are_refused)
{
	struct ember_elf_syms s;
	uint8_t *img;
	size_t len;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;

	img = read_fixture("libcorners.so", &len);
	drop_section_headers(img);
	eh = (Elf64_Ehdr *)img;
	ph = (Elf64_Phdr *)(img + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++) {
		Elf64_Dyn *d;

		if (ph[i].p_type != PT_DYNAMIC)
			continue;
		/* Every pointer far outside the file: no symbols, no crash. */
		for (d = (Elf64_Dyn *)(img + ph[i].p_offset); d->d_tag != DT_NULL; d++)
			if (d->d_tag == DT_SYMTAB || d->d_tag == DT_STRTAB ||
			    d->d_tag == DT_GNU_HASH)
				d->d_un.d_ptr += 1ull << 40;
	}
	ck_assert_int_eq(ember_elf_syms_load_mem(img, len, &s), 0);
	ck_assert_uint_eq(s.nsyms, 0);
	ck_assert(!s.from_dynamic);
	ember_elf_syms_free(&s);
	free(img);
}
END_TEST
#endif

static Suite *elf_suite(void)
{
	Suite *s = suite_create("elf_syms");
	TCase *tc = tcase_create("elf_syms");

	tcase_add_checked_fixture(tc, load_self, free_self);
	tcase_add_test(tc, finds_own_functions);
	tcase_add_test(tc, reads_build_id);
	tcase_add_test(tc, offsets_outside_segments);
	tcase_add_test(tc, not_elf_is_enoexec);
	tcase_add_test(tc, mangled_copies_of_self_are_survived);
	tcase_add_test(tc, mapped_names_stay_in_the_file);
	tcase_add_test(tc, names_of_a_file_rewritten_in_place_stay_in_their_section);
	suite_add_tcase(s, tc);
	tc = tcase_create("bounded");
	ember_tcase_cpu_bound(tc);
	tcase_add_test(tc, many_note_segments_are_capped);
	suite_add_tcase(s, tc);
	tc = tcase_create("corners");
	tcase_add_test(tc, aarch64_plt_entries_are_named_from_adrp_and_ldr);
	tcase_add_test(tc, deep_nesting_is_capped);
	tcase_add_test(tc, long_and_unterminated_names_are_not_left_in_the_file);
#ifdef EMBER_ELF_FIXTURES
	tcase_add_test(tc, nested_symbols_resume_their_enclosing_one);
	tcase_add_test(tc, untyped_and_sizeless_symbols_name_what_nothing_else_covers);
	tcase_add_test(tc, plt_entries_are_named_after_their_targets);
	tcase_add_test(tc, ibt_plt_entries_are_named_after_their_targets);
	tcase_add_test(tc, ifunc_plt_entry_is_named_after_the_ifunc);
	tcase_add_test(tc, ifunc_target_name_is_copied_before_the_sink_grows);
	tcase_add_test(tc, sizeless_symbol_stops_at_the_end_of_its_section);
	tcase_add_test(tc, files_without_section_headers_read_dynsym_through_gnu_hash);
	tcase_add_test(tc, files_without_section_headers_read_dynsym_through_sysv_hash);
	tcase_add_test(tc, dynamic_tables_out_of_bounds_are_refused);
#endif
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(elf_suite)
