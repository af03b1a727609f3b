// SPDX-License-Identifier: Apache-2.0
/* The memfd sample ring: order, wrap-around, full ring, hostile consumer positions, seals. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check_main.h"
#include "ipc/ring_consumer.h"

static struct ember_ring_producer prod;
static struct ember_ring_consumer cons;

static void setup(void)
{
	ck_assert_int_eq(ember_ring_producer_create(&prod, EMBER_RING_MIN_SIZE), 0);
	ck_assert_int_eq(ember_ring_consumer_open(&cons, prod.data_fd, prod.pos_fd), 0);
}

static void teardown(void)
{
	ember_ring_consumer_close(&cons);
	ember_ring_producer_destroy(&prod);
}

START_TEST(records_arrive_in_order)
{
	unsigned char buf[256];
	uint16_t type;

	for (uint32_t i = 0; i < 100; i++)
		ck_assert_int_eq(ember_ring_write(&prod, EMBER_REC_SAMPLE, &i, sizeof(i)), 0);
	for (uint32_t i = 0; i < 100; i++) {
		uint32_t got;

		ck_assert_int_eq(ember_ring_read(&cons, &type, buf, sizeof(buf)), sizeof(got));
		ck_assert_uint_eq(type, EMBER_REC_SAMPLE);
		memcpy(&got, buf, sizeof(got));
		ck_assert_uint_eq(got, i);
	}
	ck_assert_int_eq(ember_ring_read(&cons, &type, buf, sizeof(buf)), -EAGAIN);
}
END_TEST

START_TEST(wraps_around_with_padding)
{
	unsigned char payload[1000], buf[2000];
	uint16_t type;
	uint64_t written = 0, read = 0;

	/* Many more bytes than the ring holds; sizes chosen so records straddle the end. */
	for (int round = 0; round < 2000; round++) {
		size_t len = 100 + (size_t)(round * 37) % 900;

		memset(payload, round & 0xff, len);
		ck_assert_int_eq(ember_ring_write(&prod, EMBER_REC_SAMPLE, payload, len), 0);
		written++;
		ck_assert_int_eq(ember_ring_read(&cons, &type, buf, sizeof(buf)), (int)len);
		ck_assert_uint_eq(buf[0], round & 0xff);
		ck_assert_uint_eq(buf[len - 1], round & 0xff);
		ember_ring_release(&cons);
		read++;
	}
	ck_assert_uint_eq(written, read);
	ck_assert_uint_gt(prod.head, 10 * prod.size);
	ck_assert_uint_eq(prod.dropped_records, 0);
}
END_TEST

START_TEST(full_ring_drops_and_counts_without_blocking)
{
	unsigned char payload[4000] = {0}, buf[8192];
	uint16_t type;
	int ok = 0, full = 0;

	for (int i = 0; i < 100; i++) {
		int r = ember_ring_write(&prod, EMBER_REC_SAMPLE, payload, sizeof(payload));

		if (r == 0)
			ok++;
		else {
			ck_assert_int_eq(r, -ENOSPC);
			full++;
		}
	}
	ck_assert_int_gt(ok, 0);
	ck_assert_int_gt(full, 0);
	ck_assert_uint_eq(prod.dropped_records, (uint64_t)full);
	/* Everything accepted is readable, then space returns after release. */
	for (int i = 0; i < ok; i++)
		ck_assert_int_eq(ember_ring_read(&cons, &type, buf, sizeof(buf)), sizeof(payload));
	ember_ring_release(&cons);
	ck_assert_int_eq(ember_ring_write(&prod, EMBER_REC_SAMPLE, payload, sizeof(payload)), 0);
}
END_TEST

START_TEST(garbage_consumer_positions_are_rejected)
{
	const uint64_t bad[] = {UINT64_MAX, 1, 3, (1ull << 40)};
	unsigned char payload[64] = {0};

	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(
		    ember_ring_write(&prod, EMBER_REC_SAMPLE, payload, sizeof(payload)), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t before = prod.bad_positions;

		*cons.consumer_pos = bad[i];
		ck_assert_int_eq(
		    ember_ring_write(&prod, EMBER_REC_SAMPLE, payload, sizeof(payload)), -EPROTO);
		ck_assert_uint_eq(prod.bad_positions, before + 1);
	}
	/* head + 8 (ahead of the producer) is impossible too. */
	*cons.consumer_pos = prod.head + 8;
	ck_assert_int_eq(ember_ring_write(&prod, EMBER_REC_SAMPLE, payload, sizeof(payload)),
	                 -EPROTO);
	/* Position 0 while more than a ring was written is impossible. */
	/* A sane position restores service. */
	*cons.consumer_pos = prod.head;
	ck_assert_int_eq(ember_ring_write(&prod, EMBER_REC_SAMPLE, payload, sizeof(payload)), 0);
}
END_TEST

START_TEST(consumer_cannot_write_resize_or_map_writable)
{
	void *m;

	ck_assert_int_eq(ftruncate(prod.data_fd, 0), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(ftruncate(prod.data_fd, 1 << 24), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_ne(fallocate(prod.data_fd, 0, 0, 1 << 24), 0);
	ck_assert_int_eq(write(prod.data_fd, "x", 1), -1);
	ck_assert_int_eq(errno, EPERM);
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, prod.data_fd, 0);
	ck_assert_ptr_eq(m, MAP_FAILED);
	ck_assert_int_eq(errno, EPERM);
	/* A read-only mapping cannot be made writable later. */
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, prod.data_fd, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_int_eq(mprotect(m, 4096, PROT_READ | PROT_WRITE), -1);
	munmap(m, 4096);
	/* The position area can be written, not resized. */
	ck_assert_int_eq(ftruncate(prod.pos_fd, 0), -1);
	ck_assert_int_eq(errno, EPERM);
}
END_TEST

START_TEST(corrupt_head_is_detected)
{
	struct ember_ring_shared_hdr *hdr = prod.hdr;
	unsigned char buf[64];
	uint16_t type;

	hdr->head = cons.tail + prod.size + 8;
	ck_assert_int_eq(ember_ring_read(&cons, &type, buf, sizeof(buf)), -EBADMSG);
}
END_TEST

START_TEST(oversized_record_is_refused)
{
	static unsigned char big[EMBER_RING_MAX_RECORD];

	ck_assert_int_eq(ember_ring_write(&prod, EMBER_REC_SAMPLE, big, sizeof(big)), -EINVAL);
}
END_TEST

START_TEST(small_read_buffer_skips_record)
{
	unsigned char payload[512] = {0}, buf[16];
	uint16_t type;

	ck_assert_int_eq(ember_ring_write(&prod, EMBER_REC_SAMPLE, payload, sizeof(payload)), 0);
	ck_assert_int_eq(ember_ring_write(&prod, EMBER_REC_LOST, payload, 8), 0);
	ck_assert_int_eq(ember_ring_read(&cons, &type, buf, sizeof(buf)), -EMSGSIZE);
	ck_assert_int_eq(ember_ring_read(&cons, &type, buf, sizeof(buf)), 8);
	ck_assert_uint_eq(type, EMBER_REC_LOST);
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("ring");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, records_arrive_in_order);
	tcase_add_test(tc, wraps_around_with_padding);
	tcase_add_test(tc, full_ring_drops_and_counts_without_blocking);
	tcase_add_test(tc, garbage_consumer_positions_are_rejected);
	tcase_add_test(tc, consumer_cannot_write_resize_or_map_writable);
	tcase_add_test(tc, corrupt_head_is_detected);
	tcase_add_test(tc, oversized_record_is_refused);
	tcase_add_test(tc, small_read_buffer_skips_record);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(ring_suite)
