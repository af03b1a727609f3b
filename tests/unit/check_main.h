/* SPDX-License-Identifier: Apache-2.0 */
/* The main() every Check program shares: run one suite, exit non-zero on failure. */
#ifndef EMBER_TESTS_CHECK_MAIN_H
#define EMBER_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>
#include <sys/resource.h>

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
