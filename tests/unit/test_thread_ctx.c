// SPDX-License-Identifier: Apache-2.0
/*
 * How ember finds a process's otel_thread_ctx_v1 (OTEP 4947) from its files: the way each
 * library built by the toolchain reaches it (TLS descriptor, GD pair, IE slot), checked
 * against the relocation binutils' readelf lists; the static offset in programs of each
 * shape, checked against the offset each program prints of itself when run; the row built
 * from them, and what is refused.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/interp/thread_ctx.h"

#define DEBIAN_LD "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"

static void read_path(const char *path, struct ember_tctx_elf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(ember_tctx_elf_read(fd, out), 0);
	close(fd);
}

static void read_fixture(const char *name, struct ember_tctx_elf *out)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", EMBER_ELF_FIXTURES, name);
	read_path(path, out);
}

/* The offset of the relocation of type `type` naming otel_thread_ctx_v1, from readelf. */
static uint64_t readelf_slot(const char *name, const char *type)
{
	char cmd[640], line[512];
	uint64_t slot = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -rW %s/%s", EMBER_ELF_FIXTURES, name);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, type) && strstr(line, EMBER_TCTX_SYMBOL))
			slot = strtoull(line, NULL, 16);
	pclose(f);
	ck_assert_msg(slot, "readelf lists no %s of %s in %s", type, EMBER_TCTX_SYMBOL, name);
	return slot;
}

START_TEST(libraries_reach_it_by_their_relocation)
{
	static const struct {
		const char *file, *reloc;
		uint8_t mode;
	} libs[] = {
	    {"libtctx-desc.so", "R_X86_64_TLSDESC", EMBER_TCTX_DESC},
	    {"libtctx-gd.so", "R_X86_64_DTPMOD64", EMBER_TCTX_GD},
	    {"libtctx-ie.so", "R_X86_64_TPOFF64", EMBER_TCTX_IE},
	};
	struct ember_tctx_elf ld, e;
	struct ember_tctx_proc row;
	const char *why;

	read_path(DEBIAN_LD, &ld);
	ck_assert(ld.has_dtv);
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		read_fixture(libs[i].file, &e);
		ck_assert_msg(e.defines && e.reachable, "%s", libs[i].file);
		ck_assert(!e.executable);
		ck_assert_uint_eq(e.ref.mode, libs[i].mode);
		ck_assert_uint_eq(e.ref.slot, readelf_slot(libs[i].file, libs[i].reloc));
		ck_assert_int_eq(e.ref.offset, 0);
		/* The row: the slot where the library is mapped, the vector from ld.so. */
		ck_assert_int_eq(ember_tctx_row(&e, 0x7f0000000000, &ld, &row, &why), 0);
		ck_assert_uint_eq(row.mode, libs[i].mode);
		ck_assert_uint_eq(row.slot, 0x7f0000000000 + e.ref.slot);
		ck_assert_uint_eq(row.dtv_offset, 8);
		ck_assert_uint_eq(row.dtv_shift, 4);
		/* Without glibc's dynamic linker, only the IE slot can be read. */
		ck_assert_int_eq(ember_tctx_row(&e, 0x7f0000000000, NULL, &row, &why),
		                 libs[i].mode == EMBER_TCTX_IE ? 0 : -ENOENT);
		if (libs[i].mode != EMBER_TCTX_IE)
			ck_assert_ptr_nonnull(strstr(why, "glibc"));
	}
}
END_TEST

/* What the program prints of itself: the variable's offset from its thread pointer. */
static long printed_offset(const char *name)
{
	char cmd[600], line[64] = "";
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s/%s", EMBER_ELF_FIXTURES, name);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	ck_assert_int_eq(pclose(f), 0);
	return strtol(line, NULL, 10);
}

START_TEST(programs_hold_it_at_their_static_offset)
{
	static const char *const programs[] = {"tls-pie", "tls-nopie", "tls-aligned", "tls-tdata",
	                                       "tls-static"};
	struct ember_tctx_elf e;
	struct ember_tctx_proc row;
	const char *why;

	for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++) {
		long truth = printed_offset(programs[i]);

		read_fixture(programs[i], &e);
		ck_assert_msg(e.defines && e.reachable && e.executable, "%s", programs[i]);
		ck_assert_uint_eq(e.ref.mode, EMBER_TCTX_LE);
		ck_assert_msg(e.ref.offset == truth, "%s: ember %lld, the program %ld", programs[i],
		              (long long)e.ref.offset, truth);
		/* No dynamic linker needed, no slot. */
		ck_assert_int_eq(ember_tctx_row(&e, 0x555500000000, NULL, &row, &why), 0);
		ck_assert_uint_eq(row.slot, 0);
		ck_assert_int_eq(row.offset, truth);
	}
}
END_TEST

START_TEST(what_is_not_the_otep_variable_is_refused)
{
	static const uint8_t junk[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
	struct ember_tctx_elf e;
	struct ember_tctx_proc row;
	const char *why;

	/* 4 bytes: not the OTEP's pointer. */
	read_fixture("libtctx-int.so", &e);
	ck_assert(!e.defines);
	/* ld.so itself defines no such variable. */
	read_path(DEBIAN_LD, &e);
	ck_assert(!e.defines);
	ck_assert_int_eq(ember_tctx_elf_read_mem(junk, sizeof(junk), &e), -ENOEXEC);
	/* Defined but reached no way ember reads (no relocation, not a program). */
	memset(&e, 0, sizeof(e));
	e.defines = true;
	ck_assert_int_eq(ember_tctx_row(&e, 0, NULL, &row, &why), -ENOENT);
	ck_assert_ptr_nonnull(strstr(why, "local dynamic"));
}
END_TEST

START_TEST(record_attributes_are_bounded)
{
	/* route (key 0) twice: the last wins; key 2 unnamed ("" in the map); key 9 past it;
	 * a value with a line break and a NUL; then an entry longer than what is left. */
	static const uint8_t data[] = {0,   2,   '/', 'a', 1,   3, 'x', '\n', 0, 0,   3,  '/',
	                               'b', 'c', 2,   1,   'z', 9, 1,   'q',  1, 200, 'y'};
	char out[256];
	uint64_t unnamed = 0;

	ember_tctx_attr_lines(data, sizeof(data), "http.route\nworker\n\n", out, sizeof(out),
	                      &unnamed);
	ck_assert_str_eq(out, "http.route=/bc\nworker=x  \n");
	ck_assert_uint_eq(unnamed, 2); /* key 2 has no name, key 9 none in the map */
	/* Without a key map nothing is named; a line that does not fit is left out. */
	unnamed = 0;
	ember_tctx_attr_lines(data, sizeof(data), NULL, out, sizeof(out), &unnamed);
	ck_assert_str_eq(out, "");
	ember_tctx_attr_lines(data, sizeof(data), "http.route\nworker\n", out, 16, &unnamed);
	ck_assert_str_eq(out, "http.route=/bc\n");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("thread_ctx");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, libraries_reach_it_by_their_relocation);
	tcase_add_test(tc, programs_hold_it_at_their_static_offset);
	tcase_add_test(tc, what_is_not_the_otep_variable_is_refused);
	tcase_add_test(tc, record_attributes_are_bounded);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
