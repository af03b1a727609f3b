// SPDX-License-Identifier: Apache-2.0
/* The record codec: what the BPF side writes, the symbolizer reads back, and nothing else. */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

#include "check_main.h"
#include "symbolizer/record_decode.h"

static _Alignas(8) unsigned char buf[sizeof(struct ember_sample_event) + 8 * 300];

static size_t make_sample(uint16_t k, uint16_t u)
{
	struct ember_sample_event s = {.kind = EMBER_EV_SAMPLE,
	                               .tgid = 42,
	                               .tid = 43,
	                               .cpu = 1,
	                               .time_ns = 99,
	                               .kstack_len = k,
	                               .ustack_len = u};
	uint64_t *frames = (uint64_t *)(buf + sizeof(s));

	memcpy(s.comm, "worker", 7);
	memcpy(buf, &s, sizeof(s));
	for (unsigned i = 0; i < (unsigned)k + u && i < 300; i++)
		frames[i] = 0x1000 + i;
	return sizeof(s) + 8u * ((size_t)k + u);
}

START_TEST(sample_roundtrip)
{
	const struct ember_sample_event *s;
	const uint64_t *frames;
	size_t len = make_sample(3, 5);

	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), 0);
	ck_assert_uint_eq(s->tgid, 42);
	ck_assert_uint_eq(s->kstack_len, 3);
	ck_assert_uint_eq(frames[0], 0x1000);
	ck_assert_uint_eq(frames[3], 0x1003); /* first user frame */
	ck_assert_str_eq(s->comm, "worker");
}
END_TEST

START_TEST(sample_lengths_must_agree)
{
	const struct ember_sample_event *s;
	const uint64_t *frames;
	size_t len = make_sample(3, 5);

	ck_assert_int_eq(ember_decode_sample(buf, len - 8, &s, &frames), -EBADMSG);
	ck_assert_int_eq(ember_decode_sample(buf, len + 8, &s, &frames), -EBADMSG);
	ck_assert_int_eq(ember_decode_sample(buf, 4, &s, &frames), -EBADMSG);
	ck_assert_int_eq(ember_decode_sample(buf + 1, len, &s, &frames), -EBADMSG);
	len = make_sample(EMBER_MAX_KSTACK + 1, 0);
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), -EBADMSG);
	len = make_sample(0, EMBER_MAX_USTACK + 1);
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), -EBADMSG);
	len = make_sample(1, 1);
	((struct ember_sample_event *)buf)->kind = EMBER_EV_EXEC;
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), -EBADMSG);
}
END_TEST

START_TEST(off_cpu_samples_and_wait_reasons)
{
	const struct ember_sample_event *s;
	const uint64_t *frames;
	size_t len = make_sample(2, 2);
	struct ember_sample_event *w = (struct ember_sample_event *)buf;
	struct ember_rec_lost lost = {.count = 5, .reason = EMBER_LOST_OFF_CPU_SAMPLED}, out;

	w->kind = EMBER_EV_OFF_CPU;
	/* An off-CPU sample weighs something. */
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), -EBADMSG);
	w->off_cpu_ns = 2500000;
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), 0);
	ck_assert_uint_eq(s->off_cpu_ns, 2500000);
	w->kind = 9;
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), -EBADMSG);
	ck_assert_int_eq(ember_decode_lost(&lost, sizeof(lost), &out), 0);
	ck_assert_str_eq(ember_lost_reason_name(out.reason), "sampled_out");
	lost.reason = EMBER_LOST_OFF_CPU_SAMPLED + 1;
	ck_assert_int_eq(ember_decode_lost(&lost, sizeof(lost), &out), -EBADMSG);

	ck_assert_str_eq(ember_wait_reason(EMBER_WAIT_PREEMPTED | 0x1, SYS_futex), "preempted");
	ck_assert_str_eq(ember_wait_reason(0x1, SYS_futex), "futex");
	ck_assert_str_eq(ember_wait_reason(0x1, SYS_clock_nanosleep), "sleep");
	ck_assert_str_eq(ember_wait_reason(0x1, SYS_read), "read");
	ck_assert_str_eq(ember_wait_reason(0x1, SYS_epoll_pwait), "poll");
	ck_assert_str_eq(ember_wait_reason(0x1, SYS_getpid), "syscall");
	ck_assert_str_eq(ember_wait_reason(0x1, -1), "interruptible");
	ck_assert_str_eq(ember_wait_reason(0x2, SYS_read), "uninterruptible");
	ck_assert_str_eq(ember_wait_reason(0x402, -1), "idle");
	ck_assert_str_eq(ember_wait_reason(0x8, -1), "stopped");
	ck_assert_str_eq(ember_wait_reason(0, SYS_sched_yield), "yield");
	ck_assert_str_eq(ember_wait_reason(0, SYS_read), "runnable");
}
END_TEST

START_TEST(proc_events_and_lost)
{
	struct ember_proc_event ev = {.kind = EMBER_EV_EXIT, .tgid = 7};
	const struct ember_proc_event *out;
	struct ember_rec_lost lost = {.count = 5, .reason = EMBER_LOST_SAMPLE_RING}, got;

	memcpy(buf, &ev, sizeof(ev));
	ck_assert_int_eq(ember_decode_proc_event(buf, sizeof(ev), &out), 0);
	ck_assert_uint_eq(out->tgid, 7);
	ck_assert_int_eq(ember_decode_proc_event(buf, sizeof(ev) - 1, &out), -EBADMSG);
	((struct ember_proc_event *)buf)->kind = 77;
	ck_assert_int_eq(ember_decode_proc_event(buf, sizeof(ev), &out), -EBADMSG);
	ck_assert_int_eq(ember_decode_lost(&lost, sizeof(lost), &got), 0);
	ck_assert_uint_eq(got.count, 5);
	ck_assert_str_eq(ember_lost_reason_name(got.reason), "sample_ring_full");
	lost.reason = 0;
	ck_assert_int_eq(ember_decode_lost(&lost, sizeof(lost), &got), -EBADMSG);
	ck_assert_int_eq(ember_decode_lost(&lost, 3, &got), -EBADMSG);
}
END_TEST

static Suite *decode_suite(void)
{
	Suite *s = suite_create("record_decode");
	TCase *tc = tcase_create("record_decode");

	tcase_add_test(tc, sample_roundtrip);
	tcase_add_test(tc, sample_lengths_must_agree);
	tcase_add_test(tc, proc_events_and_lost);
	tcase_add_test(tc, off_cpu_samples_and_wait_reasons);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(decode_suite)
