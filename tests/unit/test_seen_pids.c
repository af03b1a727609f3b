// SPDX-License-Identifier: Apache-2.0
/* The collector's table of sampled processes: only seen, living, same processes pass; the
 * snapshots of their maps are bounded and served only for the process they were made of. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "waiting_child.h"
#include "collector/broker.h"
#include "collector/ring_drain.h"
#include "collector/seen_pids.h"
#include "shared/clock.h"

#define SEC 1000000000ull

START_TEST(seen_living_processes_pass)
{
	struct ember_procs t;

	ck_assert_int_eq(ember_procs_init(&t, 16), 0);
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)getpid(), 0, SEC), -EPERM);
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)getpid(), 0, false), 0);
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)getpid(), SEC / 2, SEC), 0);
	/* Noted after the clock the broker read in the same round: fresh, not ancient. */
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)getpid(), SEC, false), 0);
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)getpid(), SEC - 1, SEC), 0);
	/* Not seen recently enough. */
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)getpid(), 5 * SEC, SEC), -EPERM);
	ember_procs_forget(&t, (uint32_t)getpid(), 0);
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
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)child, 0, false), 0);
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)child, 0, SEC), 0);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	/* Its PID may be reused from now on: the pidfd says it is gone. */
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)child, 0, SEC), -ESRCH);
	ember_procs_free(&t);
}
END_TEST

/* A sample drained after its process's exit event: its PID may name another process by then
 * (here: this one, alive), which must not become one the broker serves. A sample taken after
 * the exit is the new process's own. */
START_TEST(late_sample_of_an_exited_process_notes_nothing)
{
	struct ember_procs t;
	struct ember_drain d;
	struct ember_proc_event exit_ev = {.kind = EMBER_EV_EXIT, .tgid = (uint32_t)getpid(),
	                                   .time_ns = 5 * SEC};
	struct ember_proc_event exec_ev = {.kind = EMBER_EV_EXEC, .tgid = (uint32_t)getpid(),
	                                   .time_ns = 4 * SEC};
	struct ember_sample_event s = {.kind = EMBER_EV_SAMPLE, .tgid = (uint32_t)getpid(),
	                               .time_ns = 4 * SEC};
	uint64_t now = ember_monotonic_ns();

	ck_assert_int_eq(ember_procs_init(&t, 16), 0);
	ember_drain_init(&d, &t);
	ck_assert_int_eq(ember_drain_on_proc_event(&d, &exit_ev, sizeof(exit_ev)), 0);
	ck_assert_int_eq(ember_drain_on_sample(&d, &s, sizeof(s)), 0);
	ck_assert_int_eq(ember_drain_on_proc_event(&d, &exec_ev, sizeof(exec_ev)), 0);
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)getpid(), now, SEC), -EPERM);
	ck_assert_uint_eq(t.stale_events, 2);
	/* Another PID in another slot is not held back by this exit. */
	ck_assert(!ember_procs_stale(&t, (uint32_t)getpid() + 1, 1));
	s.time_ns = 5 * SEC + 1;
	ck_assert_int_eq(ember_drain_on_sample(&d, &s, sizeof(s)), 0);
	/* Seen when it was sampled (no clock read a sample): a second later, not too old. */
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)getpid(), s.time_ns + SEC, SEC), 0);
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)getpid(), s.time_ns + SEC + 1, SEC),
	                 -EPERM);
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
		ck_assert_int_eq(ember_procs_note(&t, (uint32_t)kids[i], (uint64_t)i, false), 0);
	}
	ck_assert_uint_eq(t.evictions, 1);
	ck_assert_int_eq(ember_procs_check(&t, (uint32_t)kids[0], 4, SEC), -EPERM);
	for (int i = 1; i < 4; i++)
		ck_assert_int_eq(ember_procs_check(&t, (uint32_t)kids[i], 4, SEC), 0);
	for (int i = 0; i < 4; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	ck_assert_int_eq(ember_procs_note(&t, 0x3fffff, 0, false), -ESRCH);
	ember_procs_free(&t);
}
END_TEST

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The next snapshot due for tgid (sampled until one is) made of `text`, as a worker would;
 * returns the generation it was made for. */
static uint32_t make_snapshot(struct ember_procs *t, uint32_t tgid, const char *text, size_t len,
                              uint64_t now)
{
	uint32_t due = 0, gen = 0;
	int memfd = -1, n = 0;

	do
		ember_procs_note(t, tgid, 0, true); /* noted at 0: young */
	while (!ember_procs_snapshot_due(t, now, &due, &gen, &memfd) && ++n < 64);
	ck_assert_uint_eq(due, tgid);
	ck_assert_int_eq(write(memfd, text, len), (ssize_t)len);
	ember_procs_snapshot_done(t, tgid, gen, dup(memfd), now);
	return gen;
}

/* What a descriptor reads, from its start. */
static char *read_all(int fd)
{
	static char buf[4096];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	return buf;
}

/* What keeps the collector's tick short: an exec (a new program, whose snapshots cannot wait),
 * not a process that ran at the start nor one first seen in a sample (a kernel thread's first
 * run, a child that did not exec: its samples wake the collector while it lacks a list). */
START_TEST(newest_process_is_the_last_exec)
{
	struct ember_procs t;
	pid_t child = ember_waiting_child();

	ck_assert_int_eq(ember_procs_init(&t, 16), 0);
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)getpid(), 5 * SEC, false), 0);
	ember_procs_program(&t, (uint32_t)getpid(), false); /* running at the start */
	ck_assert_uint_eq(t.last_exec_ns, 0);
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)child, 6 * SEC, true),
	                 0); /* first sample */
	ck_assert_uint_eq(t.last_exec_ns, 0);
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)child, 7 * SEC, false), 0);
	ember_procs_program(&t, (uint32_t)child, true); /* an exec */
	ck_assert_uint_eq(t.last_exec_ns, 7 * SEC);
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)getpid(), 8 * SEC, true), 0);
	ck_assert_uint_eq(t.last_exec_ns, 7 * SEC); /* a later sample of a known one */
	reap(child);
	ember_procs_free(&t);
}
END_TEST

START_TEST(snapshots_are_served_for_their_own_process_once_it_is_gone)
{
	static const char text[] = "55d0c0a00000-55d0c0a01000 r-xp 00000000 08:01 42 /bin/x\n";
	struct ember_msg_broker_req req = {.what = EMBER_BROKER_MAPS};
	struct ember_broker_file file;
	struct ember_broker b;
	struct ember_procs t;
	uint32_t due, gen, old;
	pid_t child = ember_waiting_child();
	struct stat st, root_st;
	int fd, memfd;

	ck_assert_int_eq(ember_procs_init(&t, 16), 0);
	ember_broker_init(&b, &t);
	req.pid = (uint32_t)child;
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)child, 0, false), 0);
	/* Its 1st, 2nd, 4th, 8th and 16th samples make one due, no other (nor the 32nd). */
	ember_procs_program(&t, (uint32_t)child, true);
	for (int i = 1; i <= 40; i++) {
		bool due_now = i == 1 || i == 2 || i == 4 || i == 8 || i == 16;

		ember_procs_note(&t, (uint32_t)child, 0, true);
		ck_assert_int_eq(ember_procs_snapshot_due(&t, 0, &due, &gen, &memfd), due_now);
		if (due_now)
			ember_procs_snapshot_done(&t, due, gen, -ESRCH, 0); /* read nothing */
	}
	ember_procs_program(&t, (uint32_t)child, true); /* an exec: its samples count again */
	/* ... but only in its first 2 s: one seen later makes none due. */
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)child, EMBER_SNAPSHOT_YOUNG_NS + 1, true),
	                 0);
	ck_assert_int_eq(ember_procs_snapshot_due(&t, 0, &due, &gen, &memfd), 0);
	ember_procs_note(&t, (uint32_t)child, 0, false);
	ember_procs_program(&t, (uint32_t)child, true);
	ck_assert_int_eq(ember_procs_snapshot_open(&t, (uint32_t)child, 0, false), -ENOENT);
	gen = make_snapshot(&t, (uint32_t)child, text, strlen(text), 0);
	ck_assert_uint_eq(t.snaps_taken, 1);

	/* Alive: its maps are read live. */
	fd = ember_broker_handle(&b, &req, 1, &file);
	ck_assert_int_ge(fd, 0);
	ck_assert(!(file.flags & EMBER_BROKER_SNAPSHOT));
	ck_assert_ptr_null(strstr(read_all(fd), "/bin/x"));
	close(fd);
	/* Gone: the snapshot, read-only, each reader from its start. */
	reap(child);
	for (int i = 0; i < 2; i++) {
		fd = ember_broker_handle(&b, &req, 2, &file);
		ck_assert_int_ge(fd, 0);
		ck_assert_uint_eq(file.flags, EMBER_BROKER_SNAPSHOT);
		ck_assert_str_eq(read_all(fd), text);
		ck_assert_int_lt(write(fd, "x", 1), 0);
		close(fd);
	}
	ck_assert_uint_eq(t.snaps_served, 2);
	/* Forgotten at its exit: still served, until it is too old. */
	ember_procs_forget(&t, (uint32_t)child, 0);
	fd = ember_procs_snapshot_open(&t, (uint32_t)child, EMBER_SNAPSHOT_KEEP_NS, false);
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* Its root with it (where the broker opens the files the snapshot names), no reader's. */
	fd = ember_procs_snapshot_open(&t, (uint32_t)child, EMBER_SNAPSHOT_KEEP_NS, true);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstatat(fd, "", &st, AT_EMPTY_PATH), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(stat("/", &root_st), 0); /* the child's, as ours */
	ck_assert(st.st_ino == root_st.st_ino && st.st_dev == root_st.st_dev);
	close(fd);
	ck_assert_uint_eq(t.snaps_served, 3);
	for (int root = 0; root < 2; root++)
		ck_assert_int_eq(ember_procs_snapshot_open(&t, (uint32_t)child,
		                                           EMBER_SNAPSHOT_KEEP_NS + 1, root),
		                 -ENOENT);
	ck_assert_int_eq(ember_broker_handle(&b, &req, EMBER_SNAPSHOT_KEEP_NS + 1, &file), -EPERM);

	/* A copy made for an earlier program of the process (it exec'd since) is not kept. */
	child = ember_waiting_child();
	req.pid = (uint32_t)child;
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)child, 0, false), 0);
	old = make_snapshot(&t, (uint32_t)child, text, strlen(text), 0);
	ember_procs_note(&t, (uint32_t)child, 0, true);
	ck_assert_int_eq(ember_procs_snapshot_due(&t, 0, &due, &gen, &memfd), 1);
	ck_assert_uint_eq(gen, old);
	ember_procs_program(&t, (uint32_t)child, true); /* exec: the old snapshot goes too */
	ck_assert_int_eq(write(memfd, text, strlen(text)), -1); /* closed with it */
	ember_procs_snapshot_done(&t, (uint32_t)child, old, -ESRCH, 0);
	reap(child);
	ck_assert_int_eq(ember_broker_handle(&b, &req, 1, &file), -ESRCH);

	/* A PID reused: the process noted next under it does not get its predecessor's. */
	child = ember_waiting_child();
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)child, 0, false), 0);
	make_snapshot(&t, (uint32_t)child, text, strlen(text), 0);
	ember_procs_forget(&t, (uint32_t)child, 0); /* it exited */
	fd = ember_procs_snapshot_open(&t, (uint32_t)child, 1, false);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)child, 1, false),
	                 0); /* "another" process */
	ck_assert_int_eq(ember_procs_snapshot_open(&t, (uint32_t)child, 1, false), -ENOENT);
	reap(child);

	/* Processes running when sampling started get none (their maps are read at once). */
	ck_assert_int_eq(ember_procs_note(&t, (uint32_t)getpid(), 0, false), 0);
	ember_procs_program(&t, (uint32_t)getpid(), false);
	ember_procs_note(&t, (uint32_t)getpid(), 0, true);
	ck_assert_int_eq(ember_procs_snapshot_due(&t, 0, &due, &gen, &memfd), 0);
	ember_procs_free(&t);
}
END_TEST

START_TEST(snapshots_are_bounded_and_checked)
{
	static pid_t kids[EMBER_SNAPSHOTS_MAX + 1];
	size_t big = EMBER_SNAPSHOT_MAX_BYTES;
	char *text = malloc(big + 1);
	struct ember_procs t;
	uint32_t due, gen;
	int memfd, fd;

	memset(text, 'x', big + 1);
	/* Up to three descriptors each (the copy, the one being made, the root): at most a
	 * twelfth of the table's processes. */
	ck_assert_int_eq(ember_procs_init(&t, 128), 0);
	ck_assert_uint_eq(t.snaps_max, 10);
	ember_procs_free(&t);
	ck_assert_int_eq(ember_procs_init(&t, 12 * EMBER_SNAPSHOTS_MAX), 0);
	ck_assert_uint_eq(t.snaps_max, EMBER_SNAPSHOTS_MAX);
	for (int i = 0; i <= EMBER_SNAPSHOTS_MAX; i++) {
		kids[i] = ember_waiting_child();
		ck_assert_int_eq(ember_procs_note(&t, (uint32_t)kids[i], 0, false), 0);
	}
	/* Larger than a snapshot may be, empty, or a worker's error: nothing kept. */
	ember_procs_note(&t, (uint32_t)kids[0], 0, true);
	ck_assert_int_eq(ember_procs_snapshot_due(&t, 0, &due, &gen, &memfd), 1);
	ck_assert_int_eq(write(memfd, text, big + 1), (ssize_t)big + 1);
	ember_procs_snapshot_done(&t, due, gen, dup(memfd), 0);
	ember_procs_note(&t, (uint32_t)kids[0], 0, true);
	ck_assert_int_eq(ember_procs_snapshot_due(&t, 0, &due, &gen, &memfd), 1);
	ember_procs_snapshot_done(&t, due, gen, dup(memfd), 0);
	ember_procs_note(&t, (uint32_t)kids[0], 0, true); /* the 3rd: none due */
	ember_procs_note(&t, (uint32_t)kids[0], 0, true);
	ck_assert_int_eq(ember_procs_snapshot_due(&t, 0, &due, &gen, &memfd), 1);
	ck_assert_int_eq(write(memfd, "a\n", 2), 2);
	ember_procs_snapshot_done(&t, due, gen, -EIO, 0);
	ck_assert_uint_eq(t.snaps_taken, 0);
	ck_assert_int_eq(ember_procs_snapshot_open(&t, (uint32_t)kids[0], 0, false), -ENOENT);

	/* The largest there may be, then one more than the table holds: the oldest goes. */
	for (int i = 1; i <= EMBER_SNAPSHOTS_MAX; i++)
		make_snapshot(&t, (uint32_t)kids[i], text, i == 1 ? big : 2, (uint64_t)i);
	ck_assert_uint_eq(t.snaps_taken, EMBER_SNAPSHOTS_MAX);
	ck_assert_uint_eq(t.snaps_dropped, 0);
	make_snapshot(&t, (uint32_t)kids[0], "m\n", 2, 1000);
	ck_assert_uint_eq(t.snaps_taken, EMBER_SNAPSHOTS_MAX + 1);
	ck_assert_uint_eq(t.snaps_dropped, 1);
	ck_assert_int_eq(ember_procs_snapshot_open(&t, (uint32_t)kids[1], 1000, false), -ENOENT);
	for (int i = 0; i <= EMBER_SNAPSHOTS_MAX; i += EMBER_SNAPSHOTS_MAX) {
		fd = ember_procs_snapshot_open(&t, (uint32_t)kids[i], 1000, false);
		ck_assert_int_ge(fd, 0);
		close(fd);
	}
	/* An expired one makes room without counting as dropped. */
	make_snapshot(&t, (uint32_t)kids[1], "m\n", 2, EMBER_SNAPSHOT_KEEP_NS + 500);
	ck_assert_uint_eq(t.snaps_taken, EMBER_SNAPSHOTS_MAX + 2);
	ck_assert_uint_eq(t.snaps_dropped, 1);
	/* A full queue of due snapshots drops (and counts) the next. */
	for (int i = 2; i < 2 + EMBER_SNAPSHOT_QUEUE + 1; i++)
		ember_procs_note(&t, (uint32_t)kids[i], 0, true); /* their 2nd sample */
	ck_assert_uint_eq(t.snaps_dropped, 2);
	for (int i = 0; i <= EMBER_SNAPSHOTS_MAX; i++)
		reap(kids[i]);
	ember_procs_free(&t);
	free(text);
}
END_TEST

static Suite *procs_suite(void)
{
	Suite *s = suite_create("procs");
	TCase *tc = tcase_create("procs");

	tcase_add_test(tc, seen_living_processes_pass);
	tcase_add_test(tc, exited_process_is_refused);
	tcase_add_test(tc, late_sample_of_an_exited_process_notes_nothing);
	tcase_add_test(tc, newest_process_is_the_last_exec);
	tcase_add_test(tc, full_table_evicts_oldest);
	tcase_add_test(tc, snapshots_are_served_for_their_own_process_once_it_is_gone);
	tcase_add_test(tc, snapshots_are_bounded_and_checked);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(procs_suite)
