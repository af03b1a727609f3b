// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/symbols/objcache.h"

static int open_ro(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	return fd;
}

START_TEST(hits_misses_and_lru_eviction)
{
	struct ember_objcache c;
	struct ember_obj_key k1 = {1, 1}, k2 = {1, 2}, k3 = {1, 3};
	int fa = open_ro("/proc/self/exe"), fb = open_ro("/bin/true"), fc = open_ro("/bin/ls");
	struct ember_obj *o;
	size_t a, b, cc;

	ck_assert_int_eq(ember_objcache_init(&c, 1 << 30), 0);
	ck_assert_ptr_null(ember_objcache_get(&c, &k1, 0));
	o = ember_objcache_load(&c, &k1, fa, NULL, 0);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(o->error, 0);
	ck_assert_uint_gt(o->file.syms.nsyms, 0);
	ck_assert(o->has_hash);
	a = o->bytes;
	ck_assert_ptr_eq(ember_objcache_get(&c, &k1, 1), o);
	ck_assert_uint_eq(c.hits, 1);
	ck_assert_uint_eq(c.misses, 1);
	b = ember_objcache_load(&c, &k2, fb, NULL, 0)->bytes;
	cc = ember_objcache_load(&c, &k3, fc, NULL, 0)->bytes;
	ck_assert_uint_eq(c.bytes, a + b + cc);
	ember_objcache_free(&c);

	/* Room for all but one: loading the third evicts the least recently used. */
	ck_assert_int_eq(ember_objcache_init(&c, a + b + cc - 1), 0);
	ck_assert_ptr_nonnull(ember_objcache_load(&c, &k1, fa, NULL, 0));
	ck_assert_ptr_nonnull(ember_objcache_load(&c, &k2, fb, NULL, 0));
	ck_assert_ptr_nonnull(ember_objcache_get(&c, &k1, 0)); /* k1 now most recent */
	ck_assert_ptr_nonnull(ember_objcache_load(&c, &k3, fc, NULL, 0));
	ck_assert_uint_eq(c.evictions, 1);
	ck_assert_ptr_null(ember_objcache_get(&c, &k2, 0));
	ck_assert_ptr_nonnull(ember_objcache_get(&c, &k1, 0));
	ck_assert_ptr_nonnull(ember_objcache_get(&c, &k3, 0));
	ck_assert_uint_le(c.bytes, c.max_bytes);
	ember_objcache_free(&c);
	close(fa);
	close(fb);
	close(fc);
}
END_TEST

/* The same content under two (device, inode) names is parsed once. */
START_TEST(same_content_is_shared)
{
	struct ember_objcache c;
	struct ember_obj_key k1 = {7, 1}, k2 = {8, 2};
	int fd = open_ro("/bin/true");
	struct ember_obj *o1, *o2;

	ck_assert_int_eq(ember_objcache_init(&c, 0), 0);
	o1 = ember_objcache_load(&c, &k1, fd, NULL, 0);
	o2 = ember_objcache_load(&c, &k2, fd, NULL, 0);
	ck_assert_ptr_nonnull(o1);
	ck_assert_ptr_eq(o1, o2);
	ck_assert_uint_eq(c.shared, 1);
	ck_assert_ptr_eq(ember_objcache_get(&c, &k2, 0), o1);
	ck_assert_ptr_eq(ember_objcache_get(&c, &k1, 0), o1);
	ck_assert_str_eq(o1->file.id.hash_hex, o2->file.id.hash_hex);
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
	o = ember_objcache_load(&c, &k, -ENOENT, NULL, 1000);
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
	tcase_add_test(tc, same_content_is_shared);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(objcache_suite)
