// SPDX-License-Identifier: Apache-2.0
/*
 * The interpreter readers' cache (symbolizer/interp/interp_cache.c): values by (pid,
 * checksum, address), each released once when it goes (evicted, dropped with its pid,
 * expired, freed); a value that expires is a miss from then on.
 */
#include <errno.h>
#include <stdint.h>

#include "check_main.h"
#include "symbolizer/interp/interp_cache.h"

#define MS 1000000ull

static unsigned int released[64];

struct value {
	uint32_t id;
};

static void release(void *v)
{
	released[((struct value *)v)->id % 64]++;
}

static struct ember_interp_key key(uint32_t pid, uint32_t n)
{
	return (struct ember_interp_key){pid, n * 7, 0x1000 + 8 * n};
}

static void setup(void)
{
	memset(released, 0, sizeof(released));
}

START_TEST(values_by_pid_checksum_and_address)
{
	struct ember_interp_cache c;
	struct ember_interp_key k = key(1, 1), other;
	struct value *v;

	ck_assert_int_eq(ember_interp_cache_init(&c, sizeof(struct value), 16, 1 << 20, release),
	                 0);
	ck_assert_ptr_nonnull(ember_interp_cache_add(&c, &k, &(struct value){1}, 100, 0));
	v = ember_interp_cache_find(&c, &k, 0);
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(v->id, 1);
	/* Another process, checksum or address is another value. */
	other = k;
	other.pid = 2;
	ck_assert_ptr_null(ember_interp_cache_find(&c, &other, 0));
	other = k;
	other.checksum++;
	ck_assert_ptr_null(ember_interp_cache_find(&c, &other, 0));
	other = k;
	other.addr += 8;
	ck_assert_ptr_null(ember_interp_cache_find(&c, &other, 0));
	/* A value that never expires is there however late it is looked for. */
	ck_assert_ptr_nonnull(ember_interp_cache_find(&c, &k, UINT64_MAX));
	ember_interp_cache_free(&c);
	ck_assert_uint_eq(released[1], 1);
}
END_TEST

/* A structure found changed since its sample is read again once its value expires: the
 * next sample of the same key misses, and is read again. */
START_TEST(expired_values_are_misses)
{
	struct ember_interp_cache c;
	struct ember_interp_key k = key(1, 2);

	ck_assert_int_eq(ember_interp_cache_init(&c, sizeof(struct value), 16, 1 << 20, release),
	                 0);
	ck_assert_ptr_nonnull(ember_interp_cache_add(&c, &k, &(struct value){2}, 100, 50 * MS));
	ck_assert_ptr_nonnull(ember_interp_cache_find(&c, &k, 49 * MS));
	ck_assert_uint_eq(c.bytes, 100);
	ck_assert_ptr_null(ember_interp_cache_find(&c, &k, 50 * MS));
	ck_assert_uint_eq(released[2], 1);
	ck_assert_uint_eq(c.bytes, 0);
	ck_assert_uint_eq(c.entries.count, 0);
	/* Added again (read again): found again. */
	ck_assert_ptr_nonnull(ember_interp_cache_add(&c, &k, &(struct value){2}, 100, 0));
	ck_assert_ptr_nonnull(ember_interp_cache_find(&c, &k, UINT64_MAX));
	ember_interp_cache_free(&c);
	ck_assert_uint_eq(released[2], 2);
}
END_TEST

/* Every failed read expires, whatever its errno: a CV freed between the sample and the read
 * (-EBADMSG: its type is no longer a CV) is cloned again at the same address with the same
 * checksum, and a failure kept for good would leave every later sample of it unnamed. */
START_TEST(failures_expire_names_do_not)
{
	static const int errors[] = {-ESTALE, -EBADMSG, -EFAULT, -EINVAL, -ENOMEM, -EIO};

	ck_assert_uint_eq(ember_interp_cache_expiry(0, 5 * MS), 0);
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		ck_assert_uint_eq(ember_interp_cache_expiry(errors[i], 5 * MS),
		                  5 * MS + EMBER_INTERP_RETRY_NS);
	ck_assert_uint_le(EMBER_INTERP_RETRY_NS, 100 * MS);
}
END_TEST

START_TEST(bounded_and_dropped_with_their_process)
{
	struct ember_interp_cache c;
	unsigned int total = 0, found = 0;

	ck_assert_int_eq(ember_interp_cache_init(&c, sizeof(struct value), 8, 1000, release), 0);
	for (uint32_t n = 0; n < 20; n++) {
		struct ember_interp_key k = key(1 + n % 2, n);

		ck_assert_ptr_nonnull(ember_interp_cache_add(&c, &k, &(struct value){n}, 100, 0));
		ck_assert_uint_le(c.entries.count, 8);
		ck_assert_uint_le(c.bytes, 1000);
	}
	ck_assert_uint_eq(c.evictions, 12);
	ember_interp_cache_drop_pid(&c, 2);
	for (uint32_t n = 0; n < 20; n++) {
		struct ember_interp_key k = key(1 + n % 2, n);

		found += ember_interp_cache_find(&c, &k, 0) != NULL;
		ck_assert(n % 2 == 0 || !ember_interp_cache_find(&c, &k, 0));
	}
	ck_assert_uint_eq(found, c.entries.count);
	ck_assert_uint_gt(found, 0);
	ember_interp_cache_free(&c);
	for (unsigned int i = 0; i < 20; i++) {
		ck_assert_uint_eq(released[i], 1);
		total += released[i];
	}
	ck_assert_uint_eq(total, 20);
}
END_TEST

static Suite *interp_cache_suite(void)
{
	Suite *s = suite_create("interp_cache");
	TCase *tc = tcase_create("cache");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, values_by_pid_checksum_and_address);
	tcase_add_test(tc, expired_values_are_misses);
	tcase_add_test(tc, failures_expire_names_do_not);
	tcase_add_test(tc, bounded_and_dropped_with_their_process);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(interp_cache_suite)
