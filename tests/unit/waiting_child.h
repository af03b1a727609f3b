/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A forked child that only waits (until killed): a living process of this
 * program, mapping the same binary and libraries, for tests that need a PID
 * other than their own.
 */
#ifndef EMBER_TESTS_WAITING_CHILD_H
#define EMBER_TESTS_WAITING_CHILD_H

#include <check.h>
#include <sys/types.h>
#include <unistd.h>

static inline pid_t ember_waiting_child(void)
{
	pid_t pid = fork();

	/* The child asserts nothing: a passing ck_assert writes Check's location message, and
	 * 513 children writing into the test's message file garbled it ("Bad message type"). */
	if (pid == 0) {
		pause();
		_exit(0);
	}
	ck_assert_int_ge(pid, 0);
	return pid;
}

#endif
