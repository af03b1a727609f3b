// SPDX-License-Identifier: Apache-2.0
/*
 * What ember reads from a PHP interpreter's files: the version string's
 * parser on good and hostile bytes, and the whole of Debian 12's php8.2 when
 * it is installed (scripts/install-deps.sh installs it for the tests).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/interp/php_elf.h"

#define DEBIAN_PHP "/usr/bin/php8.2"

static int parse(const char *s, unsigned int v[3])
{
	return ember_php_parse_version((const uint8_t *)s, strlen(s), v);
}

START_TEST(test_parse_version)
{
	unsigned int v[3] = {0};

	ck_assert_int_eq(parse("\0junk X-Powered-By: PHP/8.2.36\0more", v), -ENOENT); /* strlen */
	ck_assert_int_eq(
	    ember_php_parse_version((const uint8_t *)"ab\0X-Powered-By: PHP/8.2.36\0", 28, v), 0);
	ck_assert_uint_eq(v[0], 8);
	ck_assert_uint_eq(v[1], 2);
	ck_assert_uint_eq(v[2], 36);
	ck_assert_int_eq(parse("X-Powered-By: PHP/7.4.3-4ubuntu2", v), 0);
	ck_assert_uint_eq(v[2], 3);
	/* Cut short, missing parts, numbers too long: refused. */
	ck_assert_int_eq(parse("X-Powered-By: PHP/8.2.", v), -ENOENT);
	ck_assert_int_eq(parse("X-Powered-By: PHP/8.2", v), -ENOENT);
	ck_assert_int_eq(parse("X-Powered-By: PHP/8", v), -ENOENT);
	ck_assert_int_eq(parse("X-Powered-By: PHP/", v), -ENOENT);
	ck_assert_int_eq(parse("X-Powered-By: PHP/8.2222.1", v), -ENOENT);
	ck_assert_int_eq(parse("X-Powered-By: PHP/x.2.1", v), -ENOENT);
	ck_assert_int_eq(parse("X-Powered-By: PH", v), -ENOENT);
}
END_TEST

START_TEST(test_layout)
{
	struct ember_php_layout l;

	ck_assert_int_eq(ember_php_layout_for(8, 2, &l), 0);
	ck_assert_uint_eq(l.eg_current_ex, 0x1e8);
	ck_assert_uint_le(l.ex_read, EMBER_PHP_WINDOW);
	ck_assert_uint_le(l.fn_read, EMBER_PHP_WINDOW);
	ck_assert_uint_le(l.fn_lines + 8u, l.fn_read);
	ck_assert_int_eq(ember_php_layout_for(8, 3, &l), -ENOTSUP);
	ck_assert_int_eq(ember_php_layout_for(7, 4, &l), -ENOTSUP);
}
END_TEST

START_TEST(test_not_elf)
{
	static const uint8_t junk[64] = {0x7f, 'E', 'L', 'F'};
	struct ember_php_elf out;

	ck_assert_int_lt(ember_php_elf_read_mem(junk, sizeof(junk), &out), 0);
	ck_assert_uint_eq(out.kind, EMBER_PHP_ELF_OTHER);
}
END_TEST

START_TEST(test_debian_php)
{
	struct ember_php_elf out;
	int fd = open(DEBIAN_PHP, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return; /* not installed: scripts/install-deps.sh installs it */
	ck_assert_int_eq(ember_php_elf_read(fd, &out), 0);
	close(fd);
	ck_assert_msg(out.kind == EMBER_PHP_ELF_PHP, "%s", out.why ? out.why : "");
	ck_assert_uint_eq(out.layout.major, 8);
	ck_assert_uint_eq(out.layout.minor, 2);
	/* Debian 12's 8.2.36: execute_ex at 0x36cbe0, 37,662 bytes; executor_globals at
	 * 0x58ae60 (other point releases move them). */
	ck_assert_uint_gt(out.loop[1] - out.loop[0], 4096);
	ck_assert_uint_ne(out.executor_globals, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("php_elf");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_parse_version);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_not_elf);
	tcase_add_test(tc, test_debian_php);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
