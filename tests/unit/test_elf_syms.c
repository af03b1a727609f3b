// SPDX-License-Identifier: Apache-2.0
/* ELF symbol lookup against this test program itself, and hostile inputs. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "mini_elf.h"
#include "self_elf.h"
#include "symbolizer/symbols/elf_syms.h"
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
			for (size_t i = 1; i < s.nsyms; i++)
				ck_assert_uint_gt(s.syms[i].addr, s.syms[i - 1].addr);
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
	suite_add_tcase(s, tc);
	tc = tcase_create("bounded");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, many_note_segments_are_capped);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(elf_suite)
