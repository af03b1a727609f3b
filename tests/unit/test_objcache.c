// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/objcache.h"

START_TEST(hits_misses_and_lru_eviction)
{
	struct ember_objcache c;
	struct ember_obj_key k1 = {1, 1}, k2 = {1, 2}, k3 = {1, 3};
	struct ember_obj *o;
	int fd = open("/proc/self/exe", O_RDONLY);
	size_t one;

	ck_assert_int_eq(ember_objcache_init(&c, 1 << 30), 0);
	ck_assert_ptr_null(ember_objcache_get(&c, &k1, 0));
	o = ember_objcache_load(&c, &k1, fd, 0);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(o->error, 0);
	ck_assert_uint_gt(o->syms.nsyms, 0);
	one = c.bytes;
	ck_assert_ptr_eq(ember_objcache_get(&c, &k1, 1), o);
	ck_assert_uint_eq(c.hits, 1);
	ck_assert_uint_eq(c.misses, 1);
	ember_objcache_free(&c);

	/* Room for two: loading a third evicts the least recently used. */
	ck_assert_int_eq(ember_objcache_init(&c, 2 * one + one / 2), 0);
	ck_assert_ptr_nonnull(ember_objcache_load(&c, &k1, fd, 0));
	ck_assert_ptr_nonnull(ember_objcache_load(&c, &k2, fd, 0));
	ck_assert_ptr_nonnull(ember_objcache_get(&c, &k1, 0)); /* k1 now most recent */
	ck_assert_ptr_nonnull(ember_objcache_load(&c, &k3, fd, 0));
	ck_assert_uint_eq(c.evictions, 1);
	ck_assert_ptr_null(ember_objcache_get(&c, &k2, 0));
	ck_assert_ptr_nonnull(ember_objcache_get(&c, &k1, 0));
	ck_assert_ptr_nonnull(ember_objcache_get(&c, &k3, 0));
	ck_assert_uint_le(c.bytes, c.max_bytes);
	ember_objcache_free(&c);
	close(fd);
}
END_TEST

START_TEST(failures_are_remembered_then_retried)
{
	struct ember_objcache c;
	struct ember_obj_key k = {9, 9};
	struct ember_obj *o;

	ck_assert_int_eq(ember_objcache_init(&c, 0), 0);
	o = ember_objcache_load(&c, &k, -ENOENT, 1000);
	ck_assert_int_eq(o->error, -ENOENT);
	ck_assert_uint_eq(c.load_errors, 1);
	o = ember_objcache_get(&c, &k, 2000);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(o->error, -ENOENT);
	ck_assert_ptr_null(ember_objcache_get(&c, &k, 1000 + EMBER_OBJCACHE_RETRY_NS + 1));
	ember_objcache_free(&c);
}
END_TEST

static Suite *objcache_suite(void)
{
	Suite *s = suite_create("objcache");
	TCase *tc = tcase_create("objcache");

	tcase_add_test(tc, hits_misses_and_lru_eviction);
	tcase_add_test(tc, failures_are_remembered_then_retried);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(objcache_suite)
