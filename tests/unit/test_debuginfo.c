// SPDX-License-Identifier: Apache-2.0
/*
 * Separate debug files (debuginfo.c) with small libraries the build makes
 * (tests/unit/CMakeLists.txt, libdbg*): found by build id, by debug link
 * (the CRC deciding), in MiniDebugInfo; a candidate that does not belong to
 * the binary is refused and counted; a decompression bomb and a truncated
 * stream in .gnu_debugdata are refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/symbols/debuginfo.h"

#ifdef EMBER_ELF_FIXTURES

static int open_fixture(const char *name)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", EMBER_ELF_FIXTURES, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "%s is missing: build the elf_fixtures target", path);
	return fd;
}

/* What the broker would hand over: a fixture for any build id, one for one debug link. */
struct fake_broker {
	const char *by_build_id;  /* NULL: none */
	const char *link_name;    /* the only name served */
	const char *by_debuglink; /* its file */
	unsigned int build_id_asks, debuglink_asks;
	char last_build_id[2 * EMBER_BUILD_ID_MAX + 1];
};

static int open_by_build_id(void *ctx, const char *hex)
{
	struct fake_broker *b = ctx;

	b->build_id_asks++;
	snprintf(b->last_build_id, sizeof(b->last_build_id), "%s", hex);
	return b->by_build_id ? open_fixture(b->by_build_id) : -ENOENT;
}

static int open_by_debuglink(void *ctx, const char *name)
{
	struct fake_broker *b = ctx;

	b->debuglink_asks++;
	if (!b->link_name || strcmp(name, b->link_name))
		return -ENOENT;
	return open_fixture(b->by_debuglink);
}

struct binary {
	int fd;
	Elf *elf;
	struct ember_elf_syms syms;
};

static void binary_open(struct binary *bin, const char *name)
{
	elf_version(EV_CURRENT);
	bin->fd = open_fixture(name);
	bin->elf = elf_begin(bin->fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(bin->elf);
	ck_assert_int_eq(ember_elf_syms_load_elf(bin->elf, &bin->syms), 0);
}

static void binary_close(struct binary *bin)
{
	ember_elf_syms_free(&bin->syms);
	elf_end(bin->elf);
	close(bin->fd);
}

static bool has_symbol(const struct ember_elf_syms *s, const char *name)
{
	for (size_t i = 0; i < s->nsyms; i++)
		if (!strcmp(ember_elf_sym_name(s, &s->syms[i]), name))
			return true;
	return false;
}

/* Finds bin's debug file through b; returns ember_debugfile_find's result. */
static int find(struct binary *bin, struct fake_broker *b, struct ember_debugfile *d)
{
	struct ember_debug_opener op = {b, open_by_build_id, open_by_debuglink};

	return ember_debugfile_find(bin->elf, &bin->syms, &op, d);
}

START_TEST(by_build_id)
{
	struct fake_broker b = {.by_build_id = "libdbg.debug"};
	struct ember_debugfile d;
	struct binary bin;

	binary_open(&bin, "libdbg-stripped.so");
	ck_assert(!bin.syms.has_symtab); /* stripped: .dynsym only */
	ck_assert_uint_gt(bin.syms.build_id_len, 0);
	ck_assert_int_eq(find(&bin, &b, &d), 0);
	ck_assert_int_eq(d.source, EMBER_DEBUG_BUILD_ID);
	ck_assert_str_eq(b.last_build_id, bin.syms.build_id_hex);
	ck_assert_ptr_nonnull(d.elf);
	ck_assert(has_symbol(&d.syms, "relative_name_function"));
	ck_assert(d.syms.has_symtab && d.syms.has_debug_info);
	ck_assert_uint_eq(d.rejected, 0);
	ck_assert_uint_eq(b.debuglink_asks, 0); /* found first: nothing else asked */
	ember_debugfile_close(&d);
	binary_close(&bin);
}
END_TEST

START_TEST(another_files_debug_file_is_refused)
{
	/* The broker hands over a debug file of another build: its build id differs. */
	struct fake_broker b = {.by_build_id = "libdbg-nobid.debug"};
	struct ember_debugfile d;
	struct binary bin;

	binary_open(&bin, "libdbg-stripped.so");
	ck_assert_int_eq(find(&bin, &b, &d), -ENOENT);
	ck_assert_uint_eq(d.rejected, 1);
	ck_assert_ptr_null(d.elf);
	ck_assert_int_eq(d.source, EMBER_DEBUG_NONE);
	ember_debugfile_close(&d);
	binary_close(&bin);
}
END_TEST

START_TEST(by_debuglink_and_its_crc)
{
	struct fake_broker b = {.link_name = "libdbg-nobid.debug",
	                        .by_debuglink = "libdbg-nobid.debug"};
	struct ember_debugfile d;
	struct binary bin;

	binary_open(&bin, "libdbg-link.so");
	ck_assert_uint_eq(bin.syms.build_id_len, 0);
	ck_assert_str_eq(bin.syms.debuglink, "libdbg-nobid.debug");
	ck_assert_int_eq(find(&bin, &b, &d), 0);
	ck_assert_int_eq(d.source, EMBER_DEBUG_DEBUGLINK);
	ck_assert(has_symbol(&d.syms, "relative_name_function"));
	ck_assert_uint_eq(b.build_id_asks, 0); /* no build id to ask with */
	ember_debugfile_close(&d);
	/* A file of that name with other bytes: the CRC refuses it. */
	b.by_debuglink = "libdbg.debug";
	ck_assert_int_eq(find(&bin, &b, &d), -ENOENT);
	ck_assert_uint_eq(d.rejected, 1);
	ember_debugfile_close(&d);
	binary_close(&bin);
}
END_TEST

START_TEST(minidebuginfo)
{
	struct fake_broker b = {0};
	struct ember_debugfile d;
	struct binary bin;
	void *mem;
	size_t len;

	binary_open(&bin, "libdbg-mini.so");
	ck_assert_int_eq(ember_minidebuginfo_extract(bin.elf, &mem, &len), 0);
	ck_assert_uint_gt(len, 64);
	ck_assert(!memcmp(mem, ELFMAG, SELFMAG));
	free(mem);
	/* Asked by build id first (nothing there), then found in .gnu_debugdata. */
	ck_assert_int_eq(find(&bin, &b, &d), 0);
	ck_assert_uint_eq(b.build_id_asks, 1);
	ck_assert_int_eq(d.source, EMBER_DEBUG_MINIDEBUGINFO);
	ck_assert_ptr_nonnull(d.mem);
	ck_assert(has_symbol(&d.syms, "relative_name_function"));
	ember_debugfile_close(&d);
	binary_close(&bin);
	/* A binary without any: none found, nothing left open. */
	binary_open(&bin, "libdbg-stripped.so");
	ck_assert_int_eq(ember_minidebuginfo_extract(bin.elf, &mem, &len), -ENOENT);
	ck_assert_int_eq(find(&bin, &b, &d), -ENOENT);
	ck_assert_ptr_null(d.elf);
	ck_assert_ptr_null(d.mem);
	ember_debugfile_close(&d);
	binary_close(&bin);
}
END_TEST

START_TEST(minidebuginfo_bomb_and_truncation)
{
	struct fake_broker b = {0};
	struct ember_debugfile d;
	struct binary bin;
	void *mem = NULL;
	size_t len = 1;

	/* 70 MB of zeros in a few kilobytes: more than EMBER_MINIDEBUG_MAX_BYTES. */
	binary_open(&bin, "libdbg-bomb.so");
	ck_assert_int_eq(ember_minidebuginfo_extract(bin.elf, &mem, &len), -E2BIG);
	ck_assert_ptr_null(mem);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(find(&bin, &b, &d), -ENOENT);
	ember_debugfile_close(&d);
	binary_close(&bin);
	binary_open(&bin, "libdbg-trunc.so");
	ck_assert_int_eq(ember_minidebuginfo_extract(bin.elf, &mem, &len), -EBADMSG);
	ck_assert_ptr_null(mem);
	binary_close(&bin);
}
END_TEST

#endif

START_TEST(source_names)
{
	ck_assert_str_eq(ember_debug_source_name(EMBER_DEBUG_BUILD_ID), "build-id");
	ck_assert_str_eq(ember_debug_source_name(EMBER_DEBUG_DEBUGLINK), "debuglink");
	ck_assert_str_eq(ember_debug_source_name(EMBER_DEBUG_MINIDEBUGINFO), "minidebuginfo");
	ck_assert_str_eq(ember_debug_source_name(EMBER_DEBUG_SELF), "self");
}
END_TEST

static Suite *debuginfo_suite(void)
{
	Suite *s = suite_create("debuginfo");
	TCase *tc = tcase_create("debuginfo");

#ifdef EMBER_ELF_FIXTURES
	tcase_add_test(tc, by_build_id);
	tcase_add_test(tc, another_files_debug_file_is_refused);
	tcase_add_test(tc, by_debuglink_and_its_crc);
	tcase_add_test(tc, minidebuginfo);
	tcase_add_test(tc, minidebuginfo_bomb_and_truncation);
#endif
	tcase_add_test(tc, source_names);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(debuginfo_suite)
