// SPDX-License-Identifier: Apache-2.0
/* The collector's table of sampled processes: only seen, living, same processes pass. */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "collector/seen_pids.h"

#define SEC 1000000000ull

START_TEST(seen_living_processes_pass)
{
	struct ember_procs t;

	ck_assert_int_eq(ember_procs_init(&t, 16), 0);
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)getpid(), 0, SEC), -EPERM);
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)getpid(), 0), 0);
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)getpid(), SEC / 2, SEC), 0);
	/* Noted after the clock the broker read in the same round: fresh, not ancient. */
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)getpid(), SEC), 0);
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)getpid(), SEC - 1, SEC), 0);
	/* Not seen recently enough. */
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)getpid(), 5 * SEC, SEC), -EPERM);
	ember_procs_forget(&t, (uint32_t)getpid());
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)getpid(), 0, SEC), -EPERM);
	ember_procs_free(&t);
}
END_TEST

START_TEST(exited_process_is_refused)
{
	struct ember_procs t;
	pid_t child = fork();
	int status;

	if (child == 0) {
		pause();
		_exit(0);
	}
	ck_assert_int_eq(ember_procs_init(&t, 16), 0);
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)child, 0), 0);
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)child, 0, SEC), 0);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	/* Its PID may be reused from now on: the pidfd says it is gone. */
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)child, 0, SEC), -ESRCH);
	ember_procs_free(&t);
}
END_TEST

START_TEST(full_table_evicts_oldest)
{
	struct ember_procs t;
	pid_t kids[4];

	ck_assert_int_eq(ember_procs_init(&t, 3), 0);
	for (int i = 0; i < 4; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			pause();
			_exit(0);
		}
		ck_assert_int_eq(ember_procs_note(&t, (uint32_t)kids[i], (uint64_t)i), 0);
	}
	ck_assert_uint_eq(t.evictions, 1);
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)kids[0], 4, SEC), -EPERM);
	for (int i = 1; i < 4; i++)
		ck_assert_int_eq(ember_procs_check(&t, (uint32_t)kids[i], 4, SEC), 0);
	for (int i = 0; i < 4; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	ck_assert_int_eq(ember_procs_note(&t, 0x3fffff, 0), -ESRCH);
	ember_procs_free(&t);
}
END_TEST

static Suite *procs_suite(void)
{
	Suite *s = suite_create("procs");
	TCase *tc = tcase_create("procs");

	tcase_add_test(tc, seen_living_processes_pass);
	tcase_add_test(tc, exited_process_is_refused);
	tcase_add_test(tc, full_table_evicts_oldest);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(procs_suite)
