// SPDX-License-Identifier: Apache-2.0
/*
 * DWARF lines and inline frames, read from this test program itself (built
 * with -O2 -g): a function inlined into another must come back as its own
 * frame with the right lines, the caller last.
 */
#include <dwarf.h>
#include <fcntl.h>
#include <libelf.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/param.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check_main.h"
#include "mini_elf.h"
#include "self_elf.h"
#include "symbolizer/symbols/debug_image.h"
#include "symbolizer/symbols/dwarf.h"
#include "symbolizer/symbols/objfile.h"
#include "symbolizer/process/maps_parser.h"

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
	return self_elf_addr_of(&self.syms, fn);
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

static size_t heap_in_use(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}

START_TEST(a_unit_expands_only_within_its_limit)
{
	uint64_t a = elf_addr_of((const void *)setup);
	size_t cost = ember_objfile_expand_cost(&self, a), bytes = ember_objfile_bytes(&self), heap;
	struct ember_sym_frames fr;

	/* Estimated from the unit's size: this file's unit is not empty. */
	ck_assert_uint_gt(cost, 16 * EMBER_DWARF_UNIT_BYTES);
	/* Over the limit: named by the symbol table, nothing expanded. */
	ck_assert_int_eq(ember_objfile_lookup_within(&self, a, cost - 1, &fr), EMBER_SYM_SYMTAB);
	ck_assert_str_eq(fr.f[0].name, "setup");
	ck_assert_uint_eq(ember_objfile_bytes(&self), bytes);
	ck_assert_uint_eq(ember_objfile_expand_cost(&self, a), cost);
	/* Within it: lines and the unit expanded, taking no more heap than estimated. */
	heap = heap_in_use();
	ck_assert_int_eq(ember_objfile_lookup_within(&self, a, cost, &fr), EMBER_SYM_DWARF);
	ck_assert_uint_le(heap_in_use() - MIN(heap, heap_in_use()), cost);
	ck_assert_uint_gt(ember_objfile_bytes(&self), bytes);
	ck_assert_uint_gt(fr.f[fr.n - 1].line, 0);
	/* Expanded: nothing more to estimate, no limit applies. */
	ck_assert_uint_eq(ember_objfile_expand_cost(&self, a), 0);
	ck_assert_int_eq(ember_objfile_lookup_within(&self, a, 0, &fr), EMBER_SYM_DWARF);
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

/*
 * The process's peak resident size. The bounds on it hold in the shipped build only: in a
 * sanitized one AddressSanitizer's quarantine keeps freed blocks resident by design (the
 * capped unit ranges peak at 2.1 GiB with it, 104 MiB with quarantine_size_mb=0).
 */
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

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/*
 * Compressed debug sections (objcopy --compress-debug-sections=zlib of this test's own
 * binary) name every address as the plain ones do, read through the image of the
 * sections lookups read.
 */
#ifdef EMBER_SANITIZERS
#define STEP 29 /* a tenth of the lookups: each is ten times slower */
#else
#define STEP 3
#endif
START_TEST(compressed_sections_name_what_plain_ones_do)
{
	char path[] = "/tmp/ember-zdwarf-XXXXXX", cmd[512];
	struct ember_sym_frames want, got;
	struct ember_objfile z;
	uint64_t compared = 0, inlined = 0;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s --compress-debug-sections=zlib /proc/%d/exe %s",
	         EMBER_OBJCOPY, (int)getpid(), path);
	ck_assert_int_eq(system(cmd), 0);
	fd = open(path, O_RDONLY);
	unlink(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ember_objfile_open(fd, NULL, &z), 0);
	close(fd);
	ck_assert_ptr_nonnull(z.dwarf);
	ck_assert_uint_gt(ember_dwarf_image_bytes(z.dwarf), 0);
	ck_assert_uint_eq(ember_dwarf_image_bytes(self.dwarf), 0);
	for (size_t i = 0; i < self.syms.nsyms; i++) {
		const struct ember_elf_sym *sym = &self.syms.syms[i];

		for (uint64_t pc = sym->addr; pc < sym->addr + sym->size; pc += STEP) {
			int r = ember_objfile_lookup(&self, pc, &want);

			ck_assert_int_eq(ember_objfile_lookup(&z, pc, &got), r);
			ck_assert_uint_eq(got.n, want.n);
			for (uint32_t k = 0; k < want.n; k++) {
				ck_assert(same_text(got.f[k].name, want.f[k].name));
				ck_assert(same_text(got.f[k].file, want.f[k].file));
				ck_assert(same_text(got.f[k].decl_file, want.f[k].decl_file));
				ck_assert_uint_eq(got.f[k].line, want.f[k].line);
				ck_assert_uint_eq(got.f[k].decl_line, want.f[k].decl_line);
			}
			compared++;
			inlined += want.n > 1;
		}
	}
	/* The whole of the test's text, inline chains among it. */
	ck_assert_uint_gt(compared, 30000 / STEP);
	ck_assert_uint_gt(inlined, 1500 / STEP);
	ember_objfile_close(&z);
}
END_TEST

/* A section that does not inflate to the size its header gives, or is not zlib: refused. */
START_TEST(debug_image_refuses_lying_sections)
{
	size_t zlen, len;
	uint8_t *z = mini_zlib_zeros(4096, &zlen), *img;
	struct mini_section secs[] = {
	    {".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1000, "\xc3", 1, 0, 0, 0},
	    {".debug_info", SHT_PROGBITS, SHF_COMPRESSED, 0, z, zlen, 0, 0, 0},
	    {".debug_loclists", SHT_PROGBITS, 0, 0, "\1\2\3\4", 4, 0, 0, 0},
	};
	Elf64_Phdr ph = {.p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_vaddr = 0x1000};
	struct ember_debug_image di;
	Elf64_Chdr *ch = (Elf64_Chdr *)z;
	Elf *elf;

	elf_version(EV_CURRENT);
	mini_elf(secs, 3, &ph, 1, &img, &len);
	ck_assert_ptr_nonnull(elf = elf_memory((char *)img, len));
	/* As it is: an image of .debug_info alone (4 KiB inflated), location lists left out. */
	ck_assert_int_eq(ember_debug_image_open(elf, 1u << 20, &di), 0);
	ck_assert_uint_lt(di.len, 4096 + 1024);
	ck_assert_uint_gt(di.len, 4096);
	ember_debug_image_close(&di);
	ck_assert_int_eq(ember_debug_image_open(elf, 2048, &di), -E2BIG);
	elf_end(elf);
	free(img);
	/* The header says more than the stream holds, then less. */
	for (uint64_t size = 4095; size <= 4097; size += 2) {
		ch->ch_size = size;
		mini_elf(secs, 3, &ph, 1, &img, &len);
		ck_assert_ptr_nonnull(elf = elf_memory((char *)img, len));
		ck_assert_int_eq(ember_debug_image_open(elf, 1u << 20, &di), -EINVAL);
		ck_assert_ptr_null(di.data);
		elf_end(elf);
		free(img);
	}
	/* zstd: left to libdw. */
	ch->ch_size = 4096;
	ch->ch_type = 2;
	mini_elf(secs, 3, &ph, 1, &img, &len);
	ck_assert_ptr_nonnull(elf = elf_memory((char *)img, len));
	ck_assert_int_eq(ember_debug_image_open(elf, 1u << 20, &di), -ENOTSUP);
	elf_end(elf);
	free(img);
	free(z);
}
END_TEST

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

/* A growing byte buffer for hand-made DWARF. */
struct bytes {
	uint8_t *p;
	size_t n;
};

static void put(struct bytes *b, const void *p, size_t n)
{
	b->p = realloc(b->p, b->n + n);
	ck_assert_ptr_nonnull(b->p);
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void put_u8(struct bytes *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put_u32(struct bytes *b, uint32_t v)
{
	put(b, &v, 4);
}

static void put_u64(struct bytes *b, uint64_t v)
{
	put(b, &v, 8);
}

/*
 * DWARF 4 abbreviations: 1 a unit with DW_AT_ranges and DW_AT_stmt_list
 * (children as asked), 2 a function with DW_AT_ranges, 3 a lexical block
 * with children and nothing else.
 */
static void abbrevs(struct bytes *b, bool unit_children)
{
	const uint8_t a[] = {1,
	                     DW_TAG_compile_unit,
	                     unit_children,
	                     DW_AT_ranges,
	                     0x17,
	                     DW_AT_stmt_list,
	                     0x17,
	                     0,
	                     0,
	                     2,
	                     DW_TAG_subprogram,
	                     0,
	                     DW_AT_ranges,
	                     0x17,
	                     0,
	                     0,
	                     3,
	                     DW_TAG_lexical_block,
	                     1,
	                     0,
	                     0,
	                     0};

	put(b, a, sizeof(a));
}

/* An empty DWARF 4 line program: units need one to be read. */
static void line_program(struct bytes *b)
{
	const uint8_t hdr[] = {4, 0, 0, 0, 0, 0, 1, 1, 0xfb, 14, 13, 0, 1,
	                       1, 1, 1, 0, 0, 0, 1, 0, 0,    1,  0,  0};

	put_u32(b, sizeof(hdr));
	put(b, hdr, sizeof(hdr));
	memcpy(b->p + 4 + 2, &(uint32_t){sizeof(hdr) - 6}, 4); /* header_length */
}

/* One .debug_ranges list of n ranges of 16 bytes every 32 from 0x1000. */
static void range_list(struct bytes *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		put_u64(b, 0x1000 + 32 * i);
		put_u64(b, 0x1000 + 32 * i + 16);
	}
	put_u64(b, 0);
	put_u64(b, 0);
}

/* Opens the image of .debug_info info (with abbrev, ranges, line) and looks up each unit range. */
static void open_dwarf_image(const struct bytes *info, const struct bytes *abbrev,
                             const struct bytes *ranges, uint64_t text_len, struct ember_objfile *o,
                             uint8_t **img)
{
	struct bytes line = {0};
	size_t len;
	struct mini_section secs[] = {
	    {".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1000, "\xc3", 1, 0, 0, 0},
	    {".debug_info", SHT_PROGBITS, 0, 0, info->p, info->n, 0, 0, 0},
	    {".debug_abbrev", SHT_PROGBITS, 0, 0, abbrev->p, abbrev->n, 0, 0, 0},
	    {".debug_ranges", SHT_PROGBITS, 0, 0, ranges->p, ranges->n, 0, 0, 0},
	    {".debug_line", SHT_PROGBITS, 0, 0, NULL, 0, 0, 0, 0},
	};
	Elf64_Phdr ph = {.p_type = PT_LOAD,
	                 .p_flags = PF_R | PF_X,
	                 .p_vaddr = 0x1000,
	                 .p_filesz = 1,
	                 .p_memsz = text_len};

	line_program(&line);
	secs[4].data = line.p;
	secs[4].len = line.n;
	mini_elf(secs, 5, &ph, 1, img, &len);
	ck_assert_int_eq(ember_objfile_open_mem(*img, len, o), 0);
	free(line.p);
}

/* A unit header (DWARF 4, 8-byte addresses) around die. */
static void unit(struct bytes *info, const struct bytes *die)
{
	put_u32(info, (uint32_t)(2 + 4 + 1 + die->n));
	put(info, &(uint16_t){4}, 2);
	put_u32(info, 0);
	put_u8(info, 8);
	put(info, die->p, die->n);
}

/*
 * 10,000 units sharing one list of 4,096 ranges: 41 million unit ranges
 * (1.9 GB) from a 266 KB file, when only the list was capped.
 */
START_TEST(unit_ranges_are_capped_per_file)
{
	struct bytes info = {0}, abbrev = {0}, ranges = {0}, die = {0};
	struct ember_objfile o;
	struct ember_sym_frames fr;
	uint8_t *img;

	abbrevs(&abbrev, false);
	range_list(&ranges, 4096);
	put_u8(&die, 1);
	put_u32(&die, 0); /* DW_AT_ranges */
	put_u32(&die, 0); /* DW_AT_stmt_list */
	for (int i = 0; i < 10000; i++)
		unit(&info, &die);
	open_dwarf_image(&info, &abbrev, &ranges, 32 * 4096, &o, &img);
	ck_assert_ptr_nonnull(o.dwarf);
	ck_assert_uint_gt(ember_objfile_errors(&o), 0);
	ck_assert_uint_lt(ember_objfile_bytes(&o), 64u << 20);
	ember_objfile_lookup(&o, 0x1000, &fr);
	ember_objfile_close(&o);
#ifndef EMBER_SANITIZERS /* see max_rss_kib */
	ck_assert_int_lt(max_rss_kib(), 300 * 1024);
#endif
	free(img);
	free(info.p);
	free(abbrev.p);
	free(ranges.p);
	free(die.p);
}
END_TEST

/*
 * One unit of 2,000 functions each over the same 4,096 ranges: 8 million
 * spans to sort (379 MB) for one lookup; and any number of such units.
 */
START_TEST(function_ranges_are_capped)
{
	struct bytes info = {0}, abbrev = {0}, ranges = {0}, die = {0};
	struct ember_objfile o;
	struct ember_sym_frames fr;
	uint8_t *img;

	abbrevs(&abbrev, true);
	range_list(&ranges, 4096);
	put_u8(&die, 1);
	put_u32(&die, 0);
	put_u32(&die, 0);
	for (int i = 0; i < 2000; i++) {
		put_u8(&die, 2);
		put_u32(&die, 0);
	}
	put_u8(&die, 0);
	unit(&info, &die);
	open_dwarf_image(&info, &abbrev, &ranges, 32 * 4096, &o, &img);
	ck_assert_ptr_nonnull(o.dwarf);
	for (uint64_t pc = 0x1000; pc < 0x1000 + 32 * 4096; pc += 32 * 64)
		ember_objfile_lookup(&o, pc, &fr);
	ck_assert_uint_gt(ember_objfile_errors(&o), 0);
	ember_objfile_close(&o);
#ifndef EMBER_SANITIZERS /* see max_rss_kib */
	ck_assert_int_lt(max_rss_kib(), 200 * 1024);
#endif
	free(img);
	free(info.p);
	free(abbrev.p);
	free(ranges.p);
	free(die.p);
}
END_TEST

/*
 * A function holding 3 million nested lexical blocks: libdw finds a DIE's
 * sibling by walking its subtree, and asking for it at each of the 256
 * levels the walk descends made 256 walks of the whole chain (20 s).
 */
START_TEST(deep_nesting_is_walked_once)
{
	enum { DEPTH = 3000000 };
	struct bytes info = {0}, abbrev = {0}, ranges = {0}, die = {0};
	struct ember_objfile o;
	struct ember_sym_frames fr;
	uint8_t *img;

	abbrevs(&abbrev, true);
	range_list(&ranges, 1);
	put_u8(&die, 1);
	put_u32(&die, 0);
	put_u32(&die, 0);
	/* A function with children: abbreviation 2's has_children byte is patched below. */
	put_u8(&die, 4);
	put_u32(&die, 0);
	put(&die, "f", 2);
	die.p = realloc(die.p, die.n + 2 * DEPTH + 2);
	ck_assert_ptr_nonnull(die.p);
	memset(die.p + die.n, 3, DEPTH);
	memset(die.p + die.n + DEPTH, 0, DEPTH + 2);
	die.n += 2 * DEPTH + 2;
	unit(&info, &die);
	abbrev.n--; /* a fourth abbreviation: a function with children */
	put(&abbrev,
	    (const uint8_t[]){4, DW_TAG_subprogram, 1, DW_AT_ranges, 0x17, DW_AT_name, 0x08, 0, 0,
	                      0},
	    10);
	open_dwarf_image(&info, &abbrev, &ranges, 32, &o, &img);
	ck_assert_ptr_nonnull(o.dwarf);
	ck_assert_int_eq(ember_objfile_lookup(&o, 0x1004, &fr), EMBER_SYM_DWARF);
	ck_assert_str_eq(fr.f[0].name, "f");
	ember_objfile_close(&o);
	free(img);
	free(info.p);
	free(abbrev.p);
	free(ranges.p);
	free(die.p);
}
END_TEST

#ifdef EMBER_ELF_FIXTURES
static int open_fixture(const char *name)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", EMBER_ELF_FIXTURES, name);
	fd = open(path, O_RDONLY);
	ck_assert_msg(fd >= 0, "%s is missing: build the elf_fixtures target", path);
	return fd;
}

static uint64_t fixture_symbol(const struct ember_objfile *o, const char *name)
{
	for (size_t i = 0; i < o->syms.nsyms; i++)
		if (!strcmp(ember_elf_sym_name(&o->syms, &o->syms.syms[i]), name))
			return o->syms.syms[i].addr;
	ck_abort_msg("no symbol %s", name);
	return 0;
}

/*
 * The path DWARF gives relative_name_function of the fixture: want, which can
 * be opened from the directory root.
 */
static void check_relative_name_as(const char *fixture, const char *root, const char *want)
{
	char path[1024];
	struct ember_objfile o;
	struct ember_sym_frames fr;
	int fd = open_fixture(fixture);

	ck_assert_int_eq(ember_objfile_open(fd, NULL, &o), 0);
	close(fd);
	ck_assert_int_eq(
	    ember_objfile_lookup(&o, fixture_symbol(&o, "relative_name_function"), &fr),
	    EMBER_SYM_DWARF);
	ck_assert_str_eq(fr.f[fr.n - 1].name, "relative_name_function");
	ck_assert_str_eq(fr.f[fr.n - 1].file, want);
	ck_assert_str_eq(fr.f[fr.n - 1].decl_file, want);
	snprintf(path, sizeof(path), "%s%s", root, fr.f[fr.n - 1].file);
	ck_assert_msg(access(path, R_OK) == 0, "%s cannot be opened", path);
	ember_objfile_close(&o);
}

/* Compiled as "src/relative_name.c" in fixtures/: the path must come back whole. */
static void check_relative_name(const char *fixture)
{
	check_relative_name_as(fixture, "", EMBER_FIXTURES_SRC "/src/relative_name.c");
}

START_TEST(relative_file_names_are_joined_with_comp_dir)
{
	check_relative_name("librelname.so");
}
END_TEST

START_TEST(relative_file_names_are_joined_with_comp_dir_dwarf4)
{
	check_relative_name("librelname4.so");
}
END_TEST

/* clang's DWARF 5: DW_AT_decl_file 0 is the unit's own file, not "none" as in DWARF 4. */
START_TEST(clang_dwarf5_file_zero_is_the_primary_file)
{
	check_relative_name("librelname-clang.so");
}
END_TEST

/*
 * comp_dir "./src" (-ffile-prefix-map=fixtures=.), as in Debian's libraries:
 * paths relative to the source tree, as eu-addr2line and llvm-symbolizer
 * print them, except that a file of comp_dir itself is not put under it
 * twice ("./src/./src/relative_name.c", which they print, does not exist).
 */
START_TEST(relative_comp_dir_names_files_from_the_source_tree)
{
	check_relative_name_as("librelname-prefix.so", EMBER_FIXTURES_SRC "/",
	                       "./src/relative_name.c");
	check_relative_name_as("librelname-up.so", EMBER_FIXTURES_SRC "/",
	                       "./src/../src/relative_name.c");
}
END_TEST

static int open_corners_debug(void *ctx, const char *build_id_hex)
{
	(void)ctx;
	(void)build_id_hex;
	return open_fixture("libcorners.debug");
}

/*
 * A stripped library with a separate debug file, like Debian's libpython3.11
 * with its -dbgsym package: _init comes from the debug file, sizeless; the
 * PLT after it from the library's relocations, not from _init.
 */
START_TEST(stripped_file_with_debug_file_names_its_plt)
{
	struct ember_debug_opener op = {NULL, open_corners_debug, NULL};
	struct ember_objfile o;
	struct ember_sym_frames fr;
	const struct ember_elf_sym *init;
	int fd = open_fixture("libcorners-stripped.so");
	bool plt_named = false;

	ck_assert_int_eq(ember_objfile_open(fd, &op, &o), 0);
	close(fd);
	ck_assert_int_eq(o.debug.source, EMBER_DEBUG_BUILD_ID);
	ck_assert(!o.syms.has_symtab);
	init = ember_elf_syms_lookup(&o.debug.syms, fixture_symbol(&o, "sized_outer") - 0x58);
	ck_assert_ptr_nonnull(init);
	ck_assert_str_eq(ember_elf_sym_name(&o.debug.syms, init), "_init");
	ck_assert_int_eq(ember_objfile_lookup(&o, init->addr + 3, &fr), EMBER_SYM_SYMTAB);
	ck_assert_str_eq(fr.f[0].name, "_init");
	/* From the end of .init to sized_outer: padding, then the PLT; none is _init. */
	for (uint64_t a = init->addr + init->size; a < fixture_symbol(&o, "sized_outer"); a++) {
		if (ember_objfile_lookup(&o, a, &fr) == EMBER_SYM_NONE)
			continue;
		ck_assert_str_ne(fr.f[0].name, "_init");
		plt_named |= strstr(fr.f[0].name, "@plt") != NULL;
	}
	ck_assert(plt_named);
	ember_objfile_close(&o);
}
END_TEST
#endif

static Suite *dwarf_suite(void)
{
	Suite *s = suite_create("dwarf");
	TCase *tc = tcase_create("dwarf");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, inlined_function_is_a_frame_of_its_own);
	tcase_add_test(tc, plain_function_has_file_and_line);
	tcase_add_test(tc, a_unit_expands_only_within_its_limit);
	tcase_add_test(tc, file_without_debug_info_falls_back_to_symbols);
	suite_add_tcase(s, tc);
	/* Hostile DWARF that once took minutes or gigabytes: a tight CPU clock. */
	tc = tcase_create("bounded");
	ember_tcase_cpu_bound(tc);
	tcase_add_test(tc, compressed_debug_bomb_is_refused);
	tcase_add_test(tc, debug_image_refuses_lying_sections);
	tcase_add_test(tc, zdebug_bomb_is_refused);
	tcase_add_test(tc, unit_ranges_are_capped_per_file);
	tcase_add_test(tc, function_ranges_are_capped);
	tcase_add_test(tc, deep_nesting_is_walked_once);
	suite_add_tcase(s, tc);
	/* After "bounded", whose peaks of resident memory it would raise where tests share a
	 * process (the sanitized build): it expands every unit of the test's own DWARF. */
	tc = tcase_create("compressed");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, compressed_sections_name_what_plain_ones_do);
	suite_add_tcase(s, tc);
#ifdef EMBER_ELF_FIXTURES
	tc = tcase_create("corners");
	tcase_add_test(tc, relative_file_names_are_joined_with_comp_dir);
	tcase_add_test(tc, relative_file_names_are_joined_with_comp_dir_dwarf4);
	tcase_add_test(tc, clang_dwarf5_file_zero_is_the_primary_file);
	tcase_add_test(tc, relative_comp_dir_names_files_from_the_source_tree);
	tcase_add_test(tc, stripped_file_with_debug_file_names_its_plt);
	suite_add_tcase(s, tc);
#endif
	return s;
}

EMBER_CHECK_MAIN(dwarf_suite)
