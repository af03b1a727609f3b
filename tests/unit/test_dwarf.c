// SPDX-License-Identifier: Apache-2.0
/*
 * DWARF lines and inline frames, read from this test program itself (built
 * with -O2 -g): a function inlined into another must come back as its own
 * frame with the right lines, the caller last.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check_main.h"
#include "mini_elf.h"
#include "symbolizer/objfile.h"
#include "symbolizer/procmaps.h"

volatile unsigned long dwarf_test_sink;
static int inner_line, call_line;

static inline __attribute__((always_inline)) void dwarf_test_inner(long n)
{
	for (long i = 0; i < n; i++) {
		inner_line = __LINE__ + 1;
		dwarf_test_sink =
		    (dwarf_test_sink ^ (dwarf_test_sink >> 7)) * 0x9e3779b97f4a7c15ul +
		    (unsigned long)i;
	}
}

__attribute__((noinline)) void dwarf_test_outer(long n)
{
	call_line = __LINE__ + 1;
	dwarf_test_inner(n);
	__asm__ volatile("" ::: "memory");
}

static struct ember_objfile self;

static uint64_t elf_addr_of(const void *fn)
{
	int fd = open("/proc/self/maps", O_RDONLY);
	struct ember_maps m;
	const struct ember_map_entry *e;
	char *text;
	long len = ember_maps_read_fd(fd, &text);
	uint64_t vaddr = 0;

	close(fd);
	ck_assert_int_eq(ember_maps_parse(text, (size_t)len, &m), 0);
	e = ember_maps_find(&m, (uint64_t)(uintptr_t)fn);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(ember_elf_offset_to_vaddr(
			     &self.syms, (uint64_t)(uintptr_t)fn - e->start + e->offset, &vaddr),
	                 0);
	ember_maps_free(&m);
	free(text);
	return vaddr;
}

static void setup(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ember_objfile_open(fd, NULL, &self), 0);
	close(fd);
	dwarf_test_outer(3);
}

static void teardown(void)
{
	ember_objfile_close(&self);
}

START_TEST(inlined_function_is_a_frame_of_its_own)
{
	uint64_t a = elf_addr_of((const void *)dwarf_test_outer);
	const struct ember_elf_sym *sym = ember_elf_syms_lookup(&self.syms, a);
	struct ember_sym_frames fr;
	unsigned found = 0;

	ck_assert_ptr_nonnull(self.dwarf);
	ck_assert_int_eq(self.dwarf_source, EMBER_DEBUG_SELF);
	ck_assert_ptr_nonnull(sym);
	ck_assert_uint_gt(sym->size, 0);
	/* Some instruction of the outer function carries the inlined loop. */
	for (uint64_t pc = a; pc < a + sym->size; pc++) {
		ck_assert_int_eq(ember_objfile_lookup(&self, pc, &fr), EMBER_SYM_DWARF);
		ck_assert_str_eq(fr.f[fr.n - 1].name, "dwarf_test_outer");
		ck_assert(strstr(fr.f[fr.n - 1].decl_file, "test_dwarf.c"));
		if (fr.n != 2 || fr.f[0].line != (uint32_t)inner_line)
			continue;
		ck_assert_str_eq(fr.f[0].name, "dwarf_test_inner");
		ck_assert(strstr(fr.f[0].file, "test_dwarf.c"));
		/* The caller's line is where it calls the inlined function. */
		ck_assert_uint_eq(fr.f[1].line, (uint32_t)call_line);
		ck_assert(strstr(fr.f[1].file, "test_dwarf.c"));
		found++;
	}
	ck_assert_uint_gt(found, 0);
}
END_TEST

START_TEST(plain_function_has_file_and_line)
{
	uint64_t a = elf_addr_of((const void *)setup);
	struct ember_sym_frames fr;

	ck_assert_int_eq(ember_objfile_lookup(&self, a, &fr), EMBER_SYM_DWARF);
	ck_assert_str_eq(fr.f[fr.n - 1].name, "setup");
	ck_assert(strstr(fr.f[fr.n - 1].file, "test_dwarf.c"));
	ck_assert_uint_gt(fr.f[fr.n - 1].line, 0);
	ck_assert_uint_gt(ember_objfile_bytes(&self), 0);
	/* Outside every function: nothing, and no crash. */
	ck_assert_int_eq(ember_objfile_lookup(&self, 0x10, &fr), EMBER_SYM_NONE);
	ck_assert_int_eq(ember_objfile_lookup(&self, UINT64_MAX - 1, &fr), EMBER_SYM_NONE);
}
END_TEST

START_TEST(file_without_debug_info_falls_back_to_symbols)
{
	/* /bin/true: stripped, .dynsym only (or nothing): no DWARF, no crash. */
	struct ember_objfile o;
	struct ember_sym_frames fr;
	int fd = open("/bin/true", O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ember_objfile_open(fd, NULL, &o), 0);
	close(fd);
	ck_assert_ptr_null(o.dwarf);
	ck_assert(o.has_id);
	ck_assert_uint_eq(strlen(o.id.hash_hex), 32);
	for (uint64_t pc = 0; pc < 0x10000; pc += 0x101)
		ember_objfile_lookup(&o, pc, &fr);
	ember_objfile_close(&o);
}
END_TEST

static long max_rss_kib(void)
{
	struct rusage ru;

	ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

/* A file whose .debug_info is a zlib bomb, as SHF_COMPRESSED or as GNU .zdebug_info. */
static void open_bomb(bool gnu)
{
	size_t zlen, len;
	uint8_t *z = mini_zlib_zeros(600u << 20, &zlen), *img;
	struct mini_section secs[] = {
	    {".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1000, "\xc3", 1, 0, 0, 0},
	    {".debug_info", SHT_PROGBITS, SHF_COMPRESSED, 0, z, zlen, 0, 0, 0},
	};
	Elf64_Phdr ph = {.p_type = PT_LOAD,
	                 .p_flags = PF_R | PF_X,
	                 .p_vaddr = 0x1000,
	                 .p_filesz = 1,
	                 .p_memsz = 1};
	struct ember_objfile o;
	struct ember_sym_frames fr;

	if (gnu) {
		/* "ZLIB", the size in big-endian, then the zlib stream after the Chdr. */
		memcpy(z + sizeof(Elf64_Chdr) - 12, "ZLIB\0\0\0\0\x25\x80\0\0", 12);
		secs[1] = (struct mini_section){".zdebug_info",
		                                SHT_PROGBITS,
		                                0,
		                                0,
		                                z + sizeof(Elf64_Chdr) - 12,
		                                zlen - sizeof(Elf64_Chdr) + 12,
		                                0,
		                                0,
		                                0};
	}
	mini_elf(secs, 2, &ph, 1, &img, &len);
	ck_assert_int_eq(ember_objfile_open_mem(img, len, &o), 0);
	ck_assert_ptr_null(o.dwarf);
	ck_assert_uint_eq(ember_objfile_errors(&o), 1);
	ember_objfile_lookup(&o, 0x1000, &fr);
	ember_objfile_close(&o);
	ck_assert_int_lt(max_rss_kib(), 200 * 1024); /* the 600 MiB were never inflated */
	free(img);
	free(z);
}

START_TEST(compressed_debug_bomb_is_refused)
{
	open_bomb(false);
}
END_TEST

START_TEST(zdebug_bomb_is_refused)
{
	open_bomb(true);
}
END_TEST

static Suite *dwarf_suite(void)
{
	Suite *s = suite_create("dwarf");
	TCase *tc = tcase_create("dwarf");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, inlined_function_is_a_frame_of_its_own);
	tcase_add_test(tc, plain_function_has_file_and_line);
	tcase_add_test(tc, file_without_debug_info_falls_back_to_symbols);
	suite_add_tcase(s, tc);
	/* Hostile DWARF that once took minutes or gigabytes: a tight clock. */
	tc = tcase_create("bounded");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, compressed_debug_bomb_is_refused);
	tcase_add_test(tc, zdebug_bomb_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(dwarf_suite)
