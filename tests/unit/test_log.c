// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "shared/log.h"

/* What one call to fn wrote to stderr. */
static void capture(void (*fn)(void), char *out, size_t size)
{
	int pipefd[2], saved = dup(STDERR_FILENO);
	ssize_t n;

	ck_assert_int_eq(pipe(pipefd), 0);
	dup2(pipefd[1], STDERR_FILENO);
	fn();
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(pipefd[1]);
	n = read(pipefd[0], out, size - 1);
	close(pipefd[0]);
	out[n > 0 ? n : 0] = '\0';
}

static int returned;

static void log_enoent(void)
{
	errno = EINTR;
	returned = log_error_errno(-ENOENT, "cannot open %s: %m", "x.txt");
	ck_assert_int_eq(errno, EINTR); /* the caller's errno is left alone */
}

static void log_positive(void)
{
	returned = log_warn_errno(EACCES, "no access: %m");
}

static void log_filtered(void)
{
	returned = log_debug_errno(-EPERM, "not shown: %m");
}

START_TEST(errno_is_formatted_and_returned)
{
	char out[256];

	ember_log_init("ember-test", EMBER_LOG_INFO);
	capture(log_enoent, out, sizeof(out));
	ck_assert_int_eq(returned, -ENOENT);
	ck_assert_str_eq(out, "ember-test: error: cannot open x.txt: No such file or directory\n");
	capture(log_positive, out, sizeof(out));
	ck_assert_int_eq(returned, -EACCES);
	ck_assert_str_eq(out, "ember-test: warning: no access: Permission denied\n");
	/* Below the level: nothing written, the error still returned. */
	capture(log_filtered, out, sizeof(out));
	ck_assert_int_eq(returned, -EPERM);
	ck_assert_str_eq(out, "");
}
END_TEST

static void log_plain(void)
{
	log_info("%d samples", 42);
}

START_TEST(plain_lines)
{
	char out[256];

	ember_log_init("ember-test", EMBER_LOG_INFO);
	capture(log_plain, out, sizeof(out));
	ck_assert_str_eq(out, "ember-test: 42 samples\n");
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, errno_is_formatted_and_returned);
	tcase_add_test(tc, plain_lines);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(log_suite)
