// SPDX-License-Identifier: Apache-2.0
/* The record codec: what the BPF side writes, the symbolizer reads back, and nothing else. */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

#include "check_main.h"
#include "symbolizer/record_decode.h"

static _Alignas(
    8) unsigned char buf[sizeof(struct ember_sample_event) + 8 * 300 +
                         sizeof(struct ember_stack_copy) + EMBER_MAX_STACK_COPY_BYTES + 64];

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
	len = make_sample(0, EMBER_MAX_USTACK_WORDS + 1);
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

/* A sample of k + u frames carrying a stack copy of copy_len bytes (its header says len). */
static size_t make_copy_sample(uint16_t k, uint16_t u, uint32_t copy_len, uint32_t len)
{
	size_t at = make_sample(k, u);
	struct ember_stack_copy c = {.pc = 0x4000, .sp = 0x7ff0, .fp = 0, .len = len};

	((struct ember_sample_event *)buf)->stack_flags |= EMBER_STACK_COPY;
	memcpy(buf + at, &c, sizeof(c));
	memset(buf + at + sizeof(c), 0xab, copy_len);
	return at + sizeof(c) + copy_len;
}

START_TEST(sample_with_stack_copy)
{
	const struct ember_sample_event *s;
	const struct ember_stack_copy *c;
	const uint64_t *frames;
	const uint8_t *stack = NULL;
	size_t len = make_copy_sample(2, 1, 64, 64);

	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), 0);
	c = ember_sample_stack_copy(s, &stack);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->pc, 0x4000);
	ck_assert_uint_eq(c->len, 64);
	ck_assert_ptr_eq(stack, buf + sizeof(*s) + 3 * 8 + sizeof(*c));
	ck_assert_uint_eq(stack[63], 0xab);
	/* The largest copy after the most frames. */
	len = make_copy_sample(EMBER_MAX_KSTACK, EMBER_MAX_USTACK, EMBER_MAX_STACK_COPY_BYTES,
	                       EMBER_MAX_STACK_COPY_BYTES);
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), 0);
	/* Without the flag there is no copy, and its bytes make the size wrong. */
	len = make_copy_sample(2, 1, 64, 64);
	((struct ember_sample_event *)buf)->stack_flags &= ~EMBER_STACK_COPY;
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), -EBADMSG);
	ck_assert_int_eq(ember_decode_sample(buf, len - 64 - sizeof(*c), &s, &frames), 0);
	ck_assert_ptr_null(ember_sample_stack_copy(s, &stack));
}
END_TEST

START_TEST(stack_copy_lengths_must_agree)
{
	const struct ember_sample_event *s;
	const uint64_t *frames;
	size_t len;

	/* The copy says more, or less, than the record holds. */
	len = make_copy_sample(2, 1, 64, 72);
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), -EBADMSG);
	len = make_copy_sample(2, 1, 64, 56);
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), -EBADMSG);
	/* Not a whole number of words, or larger than a copy may be. */
	len = make_copy_sample(2, 1, 60, 60);
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), -EBADMSG);
	len =
	    make_copy_sample(0, 0, EMBER_MAX_STACK_COPY_BYTES + 8, EMBER_MAX_STACK_COPY_BYTES + 8);
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), -EBADMSG);
	/* A length that would wrap the size. */
	len = make_copy_sample(2, 1, 0, UINT32_MAX - 7);
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), -EBADMSG);
	/* The flag set, but no room for the copy's header: its length is not read. */
	len = make_sample(2, 1);
	((struct ember_sample_event *)buf)->stack_flags |= EMBER_STACK_COPY;
	ck_assert_int_eq(ember_decode_sample(buf, len, &s, &frames), -EBADMSG);
	ck_assert_int_eq(ember_decode_sample(buf, len + 8, &s, &frames), -EBADMSG);
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
	((struct ember_proc_event *)buf)->kind = EMBER_EV_RUNNING;
	((struct ember_proc_event *)buf)->cpu_ns = 12345;
	ck_assert_int_eq(ember_decode_proc_event(buf, sizeof(ev), &out), 0);
	ck_assert_uint_eq(out->cpu_ns, 12345);
	((struct ember_proc_event *)buf)->kind = 77;
	ck_assert_int_eq(ember_decode_proc_event(buf, sizeof(ev), &out), -EBADMSG);
	{
		struct ember_rec_collector_memory m = {.rss_bytes = 6 << 20,
		                                       .bpf_map_bytes = 1 << 20},
						  mo;

		ck_assert_int_eq(ember_decode_collector_memory(&m, sizeof(m), &mo), 0);
		ck_assert_uint_eq(mo.rss_bytes, 6 << 20);
		ck_assert_uint_eq(mo.bpf_map_bytes, 1 << 20);
		ck_assert_int_eq(ember_decode_collector_memory(&m, sizeof(m) - 1, &mo), -EBADMSG);
	}
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
	tcase_add_test(tc, sample_with_stack_copy);
	tcase_add_test(tc, stack_copy_lengths_must_agree);
	tcase_add_test(tc, proc_events_and_lost);
	tcase_add_test(tc, off_cpu_samples_and_wait_reasons);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(decode_suite)
