// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>

#include "check_main.h"
#include "shared/cleanup.h"

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Opens /dev/null; fails after the open when fail is set (the descriptor must not leak). */
static int open_null(bool fail, int *seen)
{
	_cleanup_close_ int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	*seen = fd;
	if (fd < 0)
		return -errno;
	if (fail) {
		errno = EPERM;
		return -EPERM;
	}
	return TAKE_FD(fd);
}

START_TEST(close_on_every_way_out)
{
	int seen, fd;

	ck_assert_int_eq(open_null(true, &seen), -EPERM);
	ck_assert_int_ge(seen, 0);
	ck_assert(!fd_open(seen));
	fd = open_null(false, &seen);
	ck_assert_int_eq(fd, seen);
	ck_assert(fd_open(fd)); /* taken: not closed */
	close(fd);
}
END_TEST

START_TEST(close_keeps_errno)
{
	int seen;

	errno = 0;
	ck_assert_int_eq(open_null(true, &seen), -EPERM);
	ck_assert_int_eq(errno, EPERM);
}
END_TEST

static char *dup_or_fail(const char *s, bool fail)
{
	_cleanup_free_ char *copy = strdup(s);

	if (!copy || fail)
		return NULL;
	return TAKE_PTR(copy);
}

START_TEST(free_and_take_ptr)
{
	char *p = dup_or_fail("kept", false);
	char *q = p;

	ck_assert_str_eq(p, "kept");
	ck_assert_ptr_eq(TAKE_PTR(q), p);
	ck_assert_ptr_null(q);
	free(p);
	/* Under ASan a leak of the failed copy fails the run. */
	ck_assert_ptr_null(dup_or_fail("dropped", true));
}
END_TEST

START_TEST(fclose_at_scope_end)
{
	int fd;

	{
		_cleanup_fclose_ FILE *f = fopen("/dev/null", "re");

		ck_assert_ptr_nonnull(f);
		fd = fileno(f);
		ck_assert(fd_open(fd));
	}
	ck_assert(!fd_open(fd));
	{
		_cleanup_fclose_ FILE *none = NULL;

		(void)none;
	}
}
END_TEST

static Suite *cleanup_suite(void)
{
	Suite *s = suite_create("cleanup");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, close_on_every_way_out);
	tcase_add_test(tc, close_keeps_errno);
	tcase_add_test(tc, free_and_take_ptr);
	tcase_add_test(tc, fclose_at_scope_end);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(cleanup_suite)
