// SPDX-License-Identifier: Apache-2.0
/*
 * The symbolizer's readers: copies of descriptors into sealed memfds, made by
 * reader processes under the "reader" seccomp group; a read past its deadline
 * is given up and its device refused at once afterwards (while its reader waits,
 * even past its back-off) while others are read; the last free reader is kept for
 * processes; with every reader stuck, reads are refused; readers that come back are
 * used again, and their device is read again once its back-off ends (a read in time
 * ends the stall); what the broker saw stall is refused at once; nothing stalled is
 * tried again while the run ends. A pipe that never delivers stands for a file system
 * that does not answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/profile/profile.h"
#include "seccomp/policy.h"
#include "symbolizer/client/reader.h"

#define MS 1000000ull
/* A deadline no wait of a loaded host comes near: what is refused "at once" must end long
 * before it (see refused_at_once). */
#define LONG_DEADLINE (20000 * MS)

/* The reader's own filter (its sandbox in the symbolizer adds Landlock and rlimits). */
static int reader_filter(void *ctx)
{
	struct ember_policy_param params[] = {{"pid", (uint64_t)getpid()}};

	(void)ctx;
	return ember_policy_load(&ember_symbolizer_policy, EMBER_POLICY_READER, params, 1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int file_with(const char *text)
{
	char path[] = "/tmp/ember-reader-XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
	return fd;
}

static void copy_is(struct ember_readers *rs, int fd, uint32_t minor, const char *want)
{
	struct ember_read_of of = {0, 0, minor, 0};
	char buf[64] = "";
	int m = ember_readers_copy(rs, fd, &of, 1 << 20);

	ck_assert_msg(m >= 0, "copy from 0:%u: %s", minor, strerror(-m));
	ck_assert_int_eq(pread(m, buf, sizeof(buf) - 1, 0), (int)strlen(want));
	ck_assert_str_eq(buf, want);
	/* Sealed: the copy cannot change under its reader. */
	ck_assert_int_eq(fcntl(m, F_GET_SEALS) & (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW),
	                 F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW);
	close(m);
}

START_TEST(copies_deadlines_and_stalled_devices)
{
	struct ember_readers rs;
	struct ember_read_of of20 = {0, 0, 20, 0x65735546}, of40 = {0, 0, 40, 0};
	struct ember_read_of proc7 = {7, 0, 0, 0}, proc8 = {8, 0, 0, 0};
	struct ember_profile prof;
	int file = file_with("mapped bytes"), stuck[2], stuck2[2], stuck3[2], r;
	char buf[16] = "";
	uint64_t t0;

	ck_assert_int_eq(ember_readers_start(&rs, 3, reader_filter, NULL), 0);
	rs.deadline_ns = 300 * MS;
	copy_is(&rs, file, 10, "mapped bytes");
	ck_assert_int_eq(ember_readers_pread(&rs, file, buf, 6, 7, &of40), 5);
	ck_assert(!memcmp(buf, "bytes", 5));
	{
		struct ember_read_of small = {0, 0, 10, 0};

		ck_assert_int_eq(ember_readers_copy(&rs, file, &small, 4), -EFBIG);
	}

	/* A descriptor that never delivers: given up at the deadline. */
	ck_assert_int_eq(pipe(stuck), 0);
	t0 = now_ns();
	ck_assert_int_eq(ember_readers_copy(&rs, stuck[0], &of20, 1 << 20), -ETIMEDOUT);
	ck_assert_uint_ge(now_ns() - t0, 300 * MS);
	ck_assert_uint_lt(now_ns() - t0, 2000 * MS);
	ck_assert_uint_eq(rs.given_up, 1);
	/* Its device is refused at once, after its back-off too while its reader still waits
	 * (that one is its probe); another device is read by another reader. "At once" is
	 * "not after a deadline": with a deadline of 20 s meanwhile, a refusal that waited
	 * for one would take it, and a loaded host's delays stay far below. */
	rs.deadline_ns = LONG_DEADLINE;
	t0 = now_ns();
	ck_assert_int_eq(ember_readers_copy(&rs, file, &of20, 1 << 20), -ETIMEDOUT);
	for (int i = 0; i < EMBER_READ_MAX_DEVICES; i++)
		rs.devs[i].retry_ns = 0;
	ck_assert_int_eq(ember_readers_copy(&rs, file, &of20, 1 << 20), -ETIMEDOUT);
	ck_assert_uint_lt(now_ns() - t0, LONG_DEADLINE / 2);
	rs.deadline_ns = 300 * MS;
	ck_assert_uint_eq(rs.abandoned, 1);
	copy_is(&rs, file, 30, "mapped bytes");

	/* A second device stalls: the last free reader is kept for processes' maps and memory. */
	ck_assert_int_eq(pipe(stuck2), 0);
	ck_assert_int_eq(ember_readers_copy(&rs, stuck2[0], &of40, 1 << 20), -ETIMEDOUT);
	ck_assert_int_eq(ember_readers_copy(&rs, file, &(struct ember_read_of){0, 0, 50, 0}, 64),
	                 -EBUSY);
	ck_assert_int_eq(ember_readers_pread(&rs, file, buf, 6, 7, &proc7), 5);

	/* A process's memory stalls the last one: no reader left, reads are refused. */
	ck_assert_int_eq(pipe(stuck3), 0);
	ck_assert_int_eq(ember_readers_copy(&rs, stuck3[0], &proc8, 1 << 20), -ETIMEDOUT);
	ck_assert_int_eq(ember_readers_pread(&rs, file, buf, 6, 7, &proc7), -EBUSY);
	ck_assert_uint_eq(rs.abandoned, 3);

	/* They deliver: the readers come back, and 0:20 is read again. */
	ck_assert_int_eq(write(stuck[1], "x", 1), 1);
	close(stuck[1]);
	close(stuck2[1]);
	close(stuck3[1]);
	usleep(200000);
	copy_is(&rs, file, 50, "mapped bytes");
	copy_is(&rs, file, 20, "mapped bytes");
	ck_assert_uint_eq(rs.late, 3);

	ck_assert_int_eq(ember_profile_init(&prof), 0);
	ember_readers_note_stall(&rs, 0, 0, 20, 0x65735546, false); /* no worker free there */
	ember_readers_report_stats(&rs, &EMBER_PROFILE_STAT_SINK(&prof));
	r = (int)ember_profile_stat_get(&prof, "broker.stalled_fs.0:20.fuse");
	ck_assert_int_eq(r, 4); /* given up, refused twice, and the broker's refusal */
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "broker.stalled_fs.0:40.unknown"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "broker.stalled_fs"), 2);
	/* 3 given up, 2 refused stalled, 2 refused for want of a reader */
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "symbolizer.stalled_reads"), 7);
	ember_profile_free(&prof);
	ember_readers_stop(&rs);
	close(stuck[0]);
	close(stuck2[0]);
	close(stuck3[0]);
	close(file);
}
END_TEST

/* A copy of fd on 0:minor that must be refused at once, no reader asked: not after the
 * deadline, which is 20 s meanwhile (far beyond a loaded host's delays). */
static void refused_at_once(struct ember_readers *rs, int fd, uint32_t minor)
{
	uint64_t t0 = now_ns(), given_up = rs->given_up, deadline = rs->deadline_ns;

	rs->deadline_ns = LONG_DEADLINE;
	ck_assert_int_eq(ember_readers_copy(rs, fd, &(struct ember_read_of){0, 0, minor, 0}, 64),
	                 -ETIMEDOUT);
	ck_assert_uint_lt(now_ns() - t0, LONG_DEADLINE / 2);
	ck_assert_uint_eq(rs->given_up, given_up);
	rs->deadline_ns = deadline;
}

START_TEST(broker_stalls_late_answers_and_the_end)
{
	struct ember_readers rs;
	struct ember_read_of proc42 = {42, 0, 0, 0}, proc9 = {9, 0, 0, 0};
	int file = file_with("mapped bytes"), a[2], b[2], d;
	char buf[16];

	ck_assert_int_eq(ember_readers_start(&rs, 3, reader_filter, NULL), 0);
	rs.deadline_ns = 300 * MS;

	/* What the broker saw stall (its open missed the deadline, or it refused a stalled
	 * device or process) is refused here at once, not after a deadline of our own. */
	ember_readers_note_stall(&rs, 42, 0, 0, 0, true);
	ember_readers_note_stall(&rs, 9, 0, 0, 0, false); /* no worker was free: no stall */
	ember_readers_note_stall(&rs, 42, 0, 60, 0x65735546, true);
	ck_assert_int_eq(ember_readers_pread(&rs, file, buf, 6, 7, &proc42), -ETIMEDOUT);
	ck_assert_int_eq(ember_readers_pread(&rs, file, buf, 6, 7, &proc9), 5);
	refused_at_once(&rs, file, 60);
	ck_assert_uint_eq(rs.given_up, 0);

	/* A late answer frees its reader, but its device stays refused until its back-off
	 * ends; only a read in time ends the stall (and its back-off). */
	ck_assert_int_eq(pipe(a), 0);
	ck_assert_int_eq(ember_readers_copy(&rs, a[0], &(struct ember_read_of){0, 0, 70, 0}, 64),
	                 -ETIMEDOUT);
	ck_assert_int_eq(write(a[1], "x", 1), 1);
	close(a[1]);
	usleep(200000);
	refused_at_once(&rs, file, 70); /* drains the late answer: the reader is free */
	ck_assert_uint_eq(rs.late, 1);
	d = 0;
	while (d < EMBER_READ_MAX_DEVICES && !(rs.devs[d].used && rs.devs[d].minor == 70))
		d++;
	ck_assert_int_lt(d, EMBER_READ_MAX_DEVICES);
	ck_assert_uint_eq(rs.devs[d].backoff_ns, EMBER_READ_BACKOFF_NS);
	/* Its back-off over, it misses again: the back-off doubles (a late answer did not
	 * reset it), so that a device that answers late every time costs ever fewer waits. */
	rs.devs[d].retry_ns = 0;
	ck_assert_int_eq(pipe(b), 0);
	ck_assert_int_eq(ember_readers_copy(&rs, b[0], &(struct ember_read_of){0, 0, 70, 0}, 64),
	                 -ETIMEDOUT);
	ck_assert_uint_eq(rs.devs[d].backoff_ns, 2 * EMBER_READ_BACKOFF_NS);
	ck_assert_int_eq(write(b[1], "x", 1), 1);
	close(b[1]);
	usleep(200000);
	refused_at_once(&rs, file, 70);
	rs.devs[d].retry_ns = 0;

	/* The run ends: nothing that stalled is tried again, its back-off over or not. */
	rs.finishing = true;
	refused_at_once(&rs, file, 70);
	ck_assert_int_eq(ember_readers_pread(&rs, file, buf, 6, 7, &proc42), -ETIMEDOUT);
	rs.finishing = false;

	/* Read in time: the stall and its back-off end. */
	copy_is(&rs, file, 70, "mapped bytes");
	ck_assert(!rs.devs[d].stalled);
	ck_assert_uint_eq(rs.devs[d].backoff_ns, 0);
	ck_assert_uint_eq(rs.given_up, 2);
	ember_readers_stop(&rs);
	close(a[0]);
	close(b[0]);
	close(file);
}
END_TEST

static Suite *reader_suite(void)
{
	Suite *s = suite_create("reader");
	TCase *t = tcase_create("reader");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, copies_deadlines_and_stalled_devices);
	tcase_add_test(t, broker_stalls_late_answers_and_the_end);
	suite_add_tcase(s, t);
	return s;
}

EMBER_CHECK_MAIN(reader_suite)
