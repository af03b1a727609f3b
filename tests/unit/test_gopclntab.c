// SPDX-License-Identifier: Apache-2.0
/*
 * The .gopclntab reader against real Go binaries of many releases
 * (../shared/testdata/go-binaries, or EMBER_GO_BINARIES): every address ->
 * function pair and every inline example PROVENANCE.md lists is checked, so
 * adding a fixture with its facts adds a test. Those third-party binaries are
 * beside the repository, not in it: a clone without them skips these tests
 * (saying so; CI has them and runs them). gopclntab_toolchains.py checks Go
 * programs built at test time by current toolchains.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/symbols/gopclntab.h"

static char dir[4096];

/* Whether the third-party Go binaries are here (their PROVENANCE.md readable). */
static bool find_dir(void)
{
	const char *src = getenv("EMBER_SOURCE_DIR"), *given = getenv("EMBER_GO_BINARIES");
	char path[sizeof(dir) + 32];

	if (given)
		snprintf(dir, sizeof(dir), "%s", given);
	else
		snprintf(dir, sizeof(dir), "%s/../shared/testdata/go-binaries", src ? src : ".");
	snprintf(path, sizeof(path), "%s/PROVENANCE.md", dir);
	return access(path, R_OK) == 0;
}

#define NEEDS_GO_BINARIES()                                                                        \
	do {                                                                                       \
		if (!find_dir())                                                                   \
			EMBER_SKIP("the third-party Go binaries are not at %s (beside the "        \
			           "repository, not in it; set EMBER_GO_BINARIES)",                \
			           dir);                                                           \
	} while (0)

struct go_file {
	int fd;
	uint8_t *map;
	size_t len;
	struct ember_elf_syms syms;
	struct ember_gopclntab tab;
	int open_err;
};

static void go_open(struct go_file *g, const char *name)
{
	char path[8192];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	g->fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(g->fd >= 0, "cannot open %s", path);
	ck_assert_int_eq(fstat(g->fd, &st), 0);
	g->len = (size_t)st.st_size;
	g->map = mmap(NULL, g->len, PROT_READ, MAP_PRIVATE, g->fd, 0);
	ck_assert_ptr_ne(g->map, MAP_FAILED);
	ck_assert_int_eq(ember_elf_syms_load(g->fd, &g->syms), 0);
	g->open_err = ember_gopclntab_open(g->map, g->len, &g->syms, &g->tab);
}

static void go_close(struct go_file *g)
{
	ember_elf_syms_free(&g->syms);
	munmap(g->map, g->len);
	close(g->fd);
}

/* Splits "path:line" at the last colon. */
static void split_pos(const char *pos, char *file, size_t size, unsigned *line)
{
	const char *colon = strrchr(pos, ':');

	ck_assert_ptr_nonnull(colon);
	snprintf(file, size, "%.*s", (int)(colon - pos), pos);
	*line = (unsigned)atoi(colon + 1);
}

static const char *no_dot(const char *path)
{
	return strncmp(path, "./", 2) ? path : path + 2;
}

static bool is_old_layout(const char *file)
{
	/* Magic 0xfffffffb (Go 1.2-1.15) is out of scope. */
	return strstr(file, "go1.12") || strstr(file, "go1.13") || strstr(file, "go1.15");
}

/* Text between the first backquote pair at or after p, copied to out. */
static const char *quoted(const char *p, char *out, size_t size)
{
	const char *a = strchr(p, '`'), *b;

	if (!a || !(b = strchr(a + 1, '`')))
		return NULL;
	snprintf(out, size, "%.*s", (int)(b - a - 1), a + 1);
	return b + 1;
}

START_TEST(provenance_pairs_and_inline_examples)
{
	char path[8192], line[16384], file[256] = "", want_fn[512], pos[4096], addr[64];
	FILE *f;
	struct go_file g = {.fd = -1};
	unsigned pairs = 0, inlines = 0, files = 0, old = 0;

	NEEDS_GO_BINARIES();
	snprintf(path, sizeof(path), "%s/PROVENANCE.md", dir);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "no %s", path);
	while (fgets(line, sizeof(line), f)) {
		struct ember_sym_frames fr;
		const char *p;
		char want_file[4096];
		unsigned want_line;
		uint64_t pc;

		if (!strncmp(line, "### `", 5)) {
			if (g.fd >= 0)
				go_close(&g);
			g.fd = -1;
			quoted(line, file, sizeof(file));
			if (is_old_layout(file)) {
				go_open(&g, file);
				ck_assert_int_eq(g.open_err, -ENOENT);
				old++;
				continue;
			}
			go_open(&g, file);
			ck_assert_msg(!g.open_err, "%s: open %d", file, g.open_err);
			files++;
			continue;
		}
		if (g.fd < 0 || g.open_err)
			continue;
		if (!strncmp(line, "  * `0x", 7) && strstr(line, "(entry; pclntab file:line")) {
			p = quoted(line, addr, sizeof(addr));
			p = quoted(p, want_fn, sizeof(want_fn));
			quoted(strstr(p, "file:line"), pos, sizeof(pos));
			pc = strtoull(addr, NULL, 16);
			ck_assert_msg(!ember_gopclntab_lookup(&g.tab, pc, &fr), "%s %s", file,
			              addr);
			ck_assert_str_eq(fr.f[fr.n - 1].name, want_fn);
			split_pos(pos, want_file, sizeof(want_file), &want_line);
			ck_assert_str_eq(fr.f[0].file, want_file);
			ck_assert_uint_eq(fr.f[0].line, want_line);
			/* The byte before an entry belongs to another function. */
			if (!ember_gopclntab_lookup(&g.tab, pc - 1, &fr))
				ck_assert_str_ne(fr.f[fr.n - 1].name, want_fn);
			pairs++;
		} else if (strstr(line, "inline example (DWARF oracle): pc `")) {
			/* chain: `inner` file:line <- ... <- `outer` file:line */
			char names[8][512], poss[8][4096];
			int n = 0;

			p = quoted(line, addr, sizeof(addr));
			p = strstr(p, "(innermost first):");
			ck_assert_ptr_nonnull(p);
			while (n < 8 && (p = quoted(p, names[n], sizeof(names[n])))) {
				sscanf(p, " %4095s", poss[n]);
				n++;
			}
			pc = strtoull(addr, NULL, 16);
			ck_assert_int_eq(ember_gopclntab_lookup(&g.tab, pc, &fr), 0);
			ck_assert_msg((int)fr.n == n, "%s %s: %u frames, want %d", file, addr, fr.n,
			              n);
			for (int i = 0; i < n; i++) {
				ck_assert_str_eq(fr.f[i].name, names[i]);
				split_pos(poss[i], want_file, sizeof(want_file), &want_line);
				/* DWARF joins a "." compilation directory; the pclntab may not. */
				ck_assert_str_eq(no_dot(fr.f[i].file), no_dot(want_file));
				ck_assert_uint_eq(fr.f[i].line, want_line);
			}
			inlines++;
		} else if (strstr(line, "inlining example (pclntab only")) {
			p = quoted(line, addr, sizeof(addr));
			p = quoted(p, want_fn, sizeof(want_fn));
			p = quoted(p, pos, sizeof(pos)); /* declared in */
			quoted(p, pos, sizeof(pos));
			pc = strtoull(addr, NULL, 16);
			ck_assert_int_eq(ember_gopclntab_lookup(&g.tab, pc, &fr), 0);
			ck_assert_uint_ge(fr.n, 2);
			ck_assert_str_eq(fr.f[fr.n - 1].name, want_fn);
			split_pos(pos, want_file, sizeof(want_file), &want_line);
			ck_assert_str_eq(fr.f[0].file, want_file);
			ck_assert_uint_eq(fr.f[0].line, want_line);
			inlines++;
		}
	}
	if (g.fd >= 0)
		go_close(&g);
	fclose(f);
	fprintf(stderr,
	        "gopclntab: %u files, %u pairs, %u inline examples, %u old layouts refused\n",
	        files, pairs, inlines, old);
	ck_assert_uint_ge(files, 19);
	ck_assert_uint_ge(pairs, 3 * 19);
	ck_assert_uint_ge(inlines, 19);
}
END_TEST

START_TEST(truncated_and_garbled_tables_fail_cleanly)
{
	struct go_file g;
	uint8_t *copy;

	NEEDS_GO_BINARIES();
	go_open(&g, "go1.20-amd64-stripped.elf");
	ck_assert_int_eq(g.open_err, 0);
	copy = malloc(g.len);
	memcpy(copy, g.map, g.len);
	/* Garble the pclntab's header and tables in many places: no crash, bounded answers. */
	for (uint64_t step = 0; step < 64; step++) {
		struct ember_gopclntab t;
		struct ember_sym_frames fr;
		size_t at = (size_t)(g.tab.tab - g.map) + step * 977;

		if (at + 8 > g.len)
			break;
		memcpy(copy, g.map, g.len);
		memset(copy + at, 0xff, 8);
		if (ember_gopclntab_open(copy, g.len, &g.syms, &t))
			continue;
		for (uint64_t pc = 0x401000; pc < 0x482000; pc += 0x1001)
			ember_gopclntab_lookup(&t, pc, &fr);
	}
	/* A table cut short is refused or answers within what is left. */
	for (size_t cut = 16; cut < 4096; cut *= 2) {
		struct ember_gopclntab t;

		if (!ember_gopclntab_open(g.map, (size_t)(g.tab.tab - g.map) + cut, &g.syms, &t)) {
			struct ember_sym_frames fr;

			ember_gopclntab_lookup(&t, 0x481e20, &fr);
		}
	}
	free(copy);
	go_close(&g);
}
END_TEST

static void put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * A Go 1.20 table of one function whose name and file tables hold 32 MiB
 * each without a NUL: every lookup searched both to their ends (three
 * times 32 MiB) before the search was bounded.
 */
START_TEST(names_without_end_are_bounded)
{
	enum { HDR = 72, NAMES = 32u << 20, FILES = 32u << 20 };
	size_t cutab = HDR + NAMES, filetab = cutab + 4, pctab = filetab + FILES;
	size_t functab = pctab + 16, len = functab + 16 + 44;
	uint8_t *tab = calloc(1, len);
	struct ember_elf_syms elf = {0};
	struct ember_gopclntab t;
	struct ember_sym_frames fr;

	ck_assert_ptr_nonnull(tab);
	put_le(tab, 0xfffffff1, 4);
	tab[6] = 1, tab[7] = 8; /* quantum, pointer size */
	put_le(tab + 8, 1, 8);  /* one function */
	put_le(tab + 24, 0x500000, 8);
	put_le(tab + 32, HDR, 8);
	put_le(tab + 40, cutab, 8);
	put_le(tab + 48, filetab, 8);
	put_le(tab + 56, pctab, 8);
	put_le(tab + 64, functab, 8);
	memset(tab + HDR, 'A', NAMES);
	memset(tab + filetab, 'B', FILES);
	/* pctab: a 0 first (offset 0 is "none"), then file 0 and line 10 over 0x100 bytes. */
	memcpy(tab + pctab + 1, (const uint8_t[]){2, 0x80, 2, 0, 22, 0x80, 2, 0}, 8);
	put_le(tab + functab + 4, 16, 4);          /* the _func right after the table */
	put_le(tab + functab + 8, 0x100, 4);       /* where the text ends */
	put_le(tab + functab + 16 + 4 + 16, 1, 4); /* pcfile */
	put_le(tab + functab + 16 + 4 + 20, 5, 4); /* pcln */
	elf.nsegments = 1;
	elf.segments[0] = (struct ember_elf_segment){0, 0x400000, len, len, 4};
	elf.go.is_go = true;
	elf.go.pclntab_sym = 0x400000;
	ck_assert_int_eq(ember_gopclntab_open(tab, len, &elf, &t), 0);
	for (int i = 0; i < 10000; i++) {
		ck_assert_int_eq(ember_gopclntab_lookup(&t, 0x500000 + (uint64_t)i % 0x100, &fr),
		                 0);
		ck_assert_ptr_null(fr.f[0].name);
		ck_assert_ptr_null(fr.f[0].file);
		ck_assert_uint_eq(fr.f[0].line, 10);
	}
	ck_assert_uint_eq(t.errors, 10000);
	free(tab);
}
END_TEST

/*
 * 64 loadable segments that all cover one 192 MiB file of would-be headers:
 * the search for a table without a section or symbol scanned it 64 times.
 */
START_TEST(overlapping_segments_are_scanned_once)
{
	enum { LEN = 192u << 20 };
	uint8_t *file = malloc(LEN);
	struct ember_elf_syms elf = {0};
	struct ember_gopclntab t;

	ck_assert_ptr_nonnull(file);
	for (size_t off = 0; off < LEN; off += 8)
		memcpy(file + off, (const uint8_t[]){0xf1, 0xff, 0xff, 0xff, 0, 0, 3, 8}, 8);
	elf.nsegments = EMBER_ELF_MAX_SEGMENTS;
	for (size_t i = 0; i < elf.nsegments; i++)
		elf.segments[i] = (struct ember_elf_segment){0, 0x400000, LEN, LEN, 4 | 2};
	elf.go.is_go = true;
	ck_assert_int_eq(ember_gopclntab_open(file, LEN, &elf, &t), -ENOENT);
	free(file);
}
END_TEST

static Suite *gopclntab_suite(void)
{
	Suite *s = suite_create("gopclntab");
	TCase *tc = tcase_create("gopclntab");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, provenance_pairs_and_inline_examples);
	tcase_add_test(tc, truncated_and_garbled_tables_fail_cleanly);
	suite_add_tcase(s, tc);
	/* Hostile tables that once took minutes: a tight CPU clock. */
	tc = tcase_create("bounded");
	ember_tcase_cpu_bound(tc);
	tcase_add_test(tc, names_without_end_are_bounded);
	tcase_add_test(tc, overlapping_segments_are_scanned_once);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(gopclntab_suite)
