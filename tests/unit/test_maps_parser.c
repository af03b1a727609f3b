// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/process/maps_parser.h"

static const char sample_maps[] =
    "55d1c0a00000-55d1c0a02000 r--p 00000000 fd:01 1234567                    /usr/bin/cat\n"
    "55d1c0a02000-55d1c0a07000 r-xp 00002000 fd:01 1234567                    /usr/bin/cat\n"
    "55d1c1e4e000-55d1c1e6f000 rw-p 00000000 00:00 0                          [heap]\n"
    "7f0a1c000000-7f0a1c021000 rw-p 00000000 00:00 0 \n"
    "7f0a1d228000-7f0a1d3bd000 r-xp 00028000 103:02 2621 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7f0a1d500000-7f0a1d501000 r-xp 00000000 08:01 99 /tmp/has space (deleted)\n"
    "7ffd5a7f0000-7ffd5a7f2000 r-xp 00000000 00:00 0                          [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

START_TEST(parses_kernel_format)
{
	struct ember_maps m;
	const struct ember_map_entry *e;

	ck_assert_int_eq(ember_maps_parse(sample_maps, strlen(sample_maps), &m), 0);
	ck_assert_uint_eq(m.count, 8);
	ck_assert_uint_eq(m.bad_lines, 0);

	e = ember_maps_find(&m, 0x55d1c0a03000);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->start, 0x55d1c0a02000);
	ck_assert_uint_eq(e->offset, 0x2000);
	ck_assert_uint_eq(e->inode, 1234567);
	ck_assert_uint_eq(e->dev_major, 0xfd);
	ck_assert_uint_eq(e->perms, EMBER_MAP_R | EMBER_MAP_X | EMBER_MAP_P);
	ck_assert_int_eq(e->kind, EMBER_MAP_FILE);
	ck_assert_str_eq(ember_maps_path(&m, e), "/usr/bin/cat");

	e = ember_maps_find(&m, 0x7f0a1d228000);
	ck_assert_uint_eq(e->dev_major, 0x103);
	ck_assert_str_eq(ember_maps_path(&m, e), "/usr/lib/x86_64-linux-gnu/libc.so.6");

	e = ember_maps_find(&m, 0x7f0a1d500010);
	ck_assert(e->deleted);
	ck_assert_str_eq(ember_maps_path(&m, e), "/tmp/has space");

	ck_assert_int_eq(ember_maps_find(&m, 0x7f0a1c000100)->kind, EMBER_MAP_ANON);
	ck_assert_int_eq(ember_maps_find(&m, 0x55d1c1e4e000)->kind, EMBER_MAP_OTHER);
	ck_assert_int_eq(ember_maps_find(&m, 0x7ffd5a7f1000)->kind, EMBER_MAP_VDSO);
	ck_assert_int_eq(ember_maps_find(&m, 0xffffffffff600000)->kind, EMBER_MAP_VSYSCALL);
	/* Boundaries: end is exclusive; gaps find nothing. */
	ck_assert_ptr_null(ember_maps_find(&m, 0x55d1c0a07000));
	ck_assert_ptr_null(ember_maps_find(&m, 0x1000));
	ember_maps_free(&m);
}
END_TEST

START_TEST(skips_and_counts_bad_lines)
{
	static const char text[] =
	    "garbage\n"
	    "1000-0 r-xp 0 0:0 0 /backwards\n"
	    "zzzz-2000 r-xp 00000000 00:00 0 /bad-hex\n"
	    "1000-2000 r-xp 00000000 00:00 0 /ok\n"
	    "1800-2800 r-xp 00000000 00:00 0 /overlaps\n"
	    "11111111111111111-2000 r-xp 0 0:0 0 /too-many-digits\n"
	    "3000-4000 r-xp 00000000 00:00 99999999999999999999 /huge-inode\n"
	    "5000-6000 rwx\n"
	    "\n";
	struct ember_maps m;

	ck_assert_int_eq(ember_maps_parse(text, strlen(text), &m), 0);
	ck_assert_uint_eq(m.count, 1);
	ck_assert_str_eq(ember_maps_path(&m, &m.entries[0]), "/ok");
	ck_assert_uint_eq(m.bad_lines, 7);
	ember_maps_free(&m);
}
END_TEST

START_TEST(no_trailing_newline_and_embedded_nul)
{
	static const char text[] =
	    "1000-2000 r-xp 00000000 00:00 5 /a\n3000-4000 r-xp 0 00:00 6 /b\0c";
	struct ember_maps m;

	ck_assert_int_eq(ember_maps_parse(text, sizeof(text) - 1, &m), 0);
	ck_assert_uint_eq(m.count, 1);
	ck_assert_uint_eq(m.bad_lines, 1);
	ember_maps_free(&m);
}
END_TEST

START_TEST(reads_own_maps)
{
	int fd = open("/proc/self/maps", O_RDONLY);
	struct ember_maps m;
	char *text;
	long len = ember_maps_read_fd(fd, &text);
	const struct ember_map_entry *e;

	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(ember_maps_parse(text, (size_t)len, &m), 0);
	e = ember_maps_find(&m, (uint64_t)(uintptr_t)&ember_maps_parse);
	ck_assert_ptr_nonnull(e);
	ck_assert(e->perms & EMBER_MAP_X);
	ck_assert_int_eq(e->kind, EMBER_MAP_FILE);
	ember_maps_free(&m);
	free(text);
	close(fd);
}
END_TEST

START_TEST(random_bytes_never_crash)
{
	char buf[4096];

	srand(42);
	for (int round = 0; round < 2000; round++) {
		struct ember_maps m;
		size_t len = (size_t)rand() % sizeof(buf);

		for (size_t i = 0; i < len; i++)
			buf[i] = "0123456789abcdef- :/\n[]rwxp"[rand() % 27];
		if (ember_maps_parse(buf, len, &m) == 0) {
			for (size_t i = 1; i < m.count; i++)
				ck_assert_uint_ge(m.entries[i].start, m.entries[i - 1].end);
			ember_maps_free(&m);
		}
	}
}
END_TEST

static Suite *procmaps_suite(void)
{
	Suite *s = suite_create("procmaps");
	TCase *tc = tcase_create("procmaps");

	tcase_add_test(tc, parses_kernel_format);
	tcase_add_test(tc, skips_and_counts_bad_lines);
	tcase_add_test(tc, no_trailing_newline_and_embedded_nul);
	tcase_add_test(tc, reads_own_maps);
	tcase_add_test(tc, random_bytes_never_crash);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(procmaps_suite)
