/* SPDX-License-Identifier: Apache-2.0 */
/* The main() every Check program shares: run one suite, exit non-zero on failure. */
#ifndef EMBER_TESTS_CHECK_MAIN_H
#define EMBER_TESTS_CHECK_MAIN_H

#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/*
 * A test that cannot run on this host (no root, no Landlock, a tool missing): outside CI it
 * says so, one line per test on stderr ("SKIP program test: reason", which scripts/test.sh
 * lists after the run), and ends as a pass; under CI=true it fails, since a CI host has what
 * every test needs. Use: if (!have) EMBER_SKIP("needs %s", what);
 */
static inline void ember_skip_report(const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void ember_skip_report(const char *fn, const char *fmt, ...)
{
	const char *ci = getenv("CI");
	size_t n = strlen(fn);
	char why[512];
	va_list ap;

	/* START_TEST(name) defines name_fn. */
	if (n > 3 && !strcmp(fn + n - 3, "_fn"))
		n -= 3;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	ck_assert_msg(!ci || strcmp(ci, "true"), "%.*s cannot be skipped under CI=true: %s",
	              (int)n, fn, why);
	fprintf(stderr, "SKIP %s %.*s: %s\n", program_invocation_short_name, (int)n, fn, why);
}

#define EMBER_SKIP(...)                                                                            \
	do {                                                                                       \
		ember_skip_report(__func__, __VA_ARGS__);                                          \
		return;                                                                            \
	} while (0)

/* CPU seconds a test of hostile input may use (see ember_tcase_cpu_bound). */
#define EMBER_TEST_CPU_SECONDS 10

static inline void ember_cpu_bound_setup(void)
{
	struct rusage ru;
	struct rlimit rl;

	/* From what this process used so far, so that it holds without fork too. */
	if (getrusage(RUSAGE_SELF, &ru) || getrlimit(RLIMIT_CPU, &rl))
		return;
	rl.rlim_cur =
	    (rlim_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1 + EMBER_TEST_CPU_SECONDS;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_cur > rl.rlim_max)
		rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_CPU, &rl);
}

/*
 * A tight clock for the tests of tc (hostile input that once took minutes):
 * each may use EMBER_TEST_CPU_SECONDS of CPU, past which the kernel ends it
 * with SIGXCPU, a failure. CPU time, not wall-clock time: on a machine shared
 * by other builds a test waits for a CPU far longer than it runs, and a
 * 10-second wall-clock timeout failed tests that used 2 seconds of CPU. The
 * wall-clock timeout stays, generous, for a test that hangs without running.
 */
static inline void ember_tcase_cpu_bound(TCase *tc)
{
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, ember_cpu_bound_setup, NULL);
}

#define EMBER_CHECK_MAIN(suite_fn)                                                                 \
	int main(void)                                                                             \
	{                                                                                          \
		SRunner *sr = srunner_create(suite_fn());                                          \
		int failed;                                                                        \
		srunner_run_all(sr, CK_NORMAL);                                                    \
		failed = srunner_ntests_failed(sr);                                                \
		srunner_free(sr);                                                                  \
		return failed ? EXIT_FAILURE : EXIT_SUCCESS;                                       \
	}

#endif
