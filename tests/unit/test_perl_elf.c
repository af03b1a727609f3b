// SPDX-License-Identifier: Apache-2.0
/*
 * What ember reads from a Perl interpreter's files: the layout table, files
 * that are not ELF, and the whole of Debian 12's perl 5.36 (the executable,
 * which holds the interpreter, and libperl.so) and glibc (the key slots)
 * when they are installed (scripts/install-deps.sh installs them).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/interp/perl_elf.h"

#define DEBIAN_PERL    "/usr/bin/perl"
#define DEBIAN_LIBPERL "/usr/lib/x86_64-linux-gnu/libperl.so.5.36"
#define DEBIAN_LIBC    "/lib/x86_64-linux-gnu/libc.so.6"

START_TEST(test_layout)
{
	struct ember_perl_layout l;

	ck_assert_int_eq(ember_perl_layout_for(36, &l), 0);
	ck_assert_uint_eq(l.i_curstackinfo, 0xe0);
	ck_assert_uint_eq(l.cx_size, 104);
	/* Every field the walker reads lies in its window. */
	ck_assert_uint_le(l.si_read, EMBER_PERL_WINDOW);
	ck_assert_uint_le(l.cx_read, EMBER_PERL_WINDOW);
	ck_assert_uint_le(l.cop_read, EMBER_PERL_WINDOW);
	ck_assert_uint_le(l.cv_read, EMBER_PERL_WINDOW);
	ck_assert_uint_le(l.si_cxsubix + 4u, l.si_read);
	ck_assert_uint_le(l.cx_cv + 8u, l.cx_read);
	ck_assert_uint_le(l.cop_file + 8u, l.cop_read);
	ck_assert_uint_le(l.cv_flags + 4u, l.cv_read);
	ck_assert_int_eq(ember_perl_layout_for(38, &l), -ENOTSUP);
	ck_assert_int_eq(ember_perl_layout_for(0, &l), -ENOTSUP);
}
END_TEST

START_TEST(test_not_elf)
{
	static const uint8_t junk[64] = {0x7f, 'E', 'L', 'F'};
	struct ember_perl_elf out;

	ck_assert_int_lt(ember_perl_elf_read_mem(junk, sizeof(junk), &out), 0);
	ck_assert_uint_eq(out.kind, EMBER_PERL_ELF_OTHER);
	ck_assert(!out.has_tsd);
}
END_TEST

/* The facts of the file at path; false when it is not installed. */
static bool read_file(const char *path, struct ember_perl_elf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	ck_assert_int_eq(ember_perl_elf_read(fd, out), 0);
	close(fd);
	return true;
}

START_TEST(test_debian_perl)
{
	const char *const paths[] = {DEBIAN_PERL, DEBIAN_LIBPERL};
	struct ember_perl_elf out;

	for (size_t i = 0; i < 2; i++) {
		if (!read_file(paths[i], &out))
			continue; /* not installed: scripts/install-deps.sh installs it */
		ck_assert_msg(out.kind == EMBER_PERL_ELF_PERL, "%s: %s", paths[i],
		              out.why ? out.why : "");
		ck_assert_uint_eq(out.version[0], 5);
		ck_assert_uint_eq(out.version[1], 36);
		ck_assert_uint_eq(out.layout.version, 36);
		/* Debian 12's 5.36.0: Perl_runops_standard is 76 bytes (0x11a0d0 in perl). */
		ck_assert_uint_eq(out.loop[1] - out.loop[0], 76);
		ck_assert_uint_ne(out.thr_key, 0);
		ck_assert(!out.has_tsd);
	}
}
END_TEST

START_TEST(test_debian_libc)
{
	struct ember_perl_elf out;

	if (!read_file(DEBIAN_LIBC, &out))
		return;
	ck_assert_uint_eq(out.kind, EMBER_PERL_ELF_OTHER);
	ck_assert(out.has_tsd);
	/* glibc 2.36: key 0's value is 0x318 past the thread pointer (specific_1stblock). */
	ck_assert_uint_eq(out.tsd_offset, 0x318);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("perl_elf");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_not_elf);
	tcase_add_test(tc, test_debian_perl);
	tcase_add_test(tc, test_debian_libc);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
