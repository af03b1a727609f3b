// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "check_main.h"
#include "self_elf.h"
#include "symbolizer/profile/profile.h"
#include "symbolizer/process/maps_parser.h"
#include "symbolizer/symbols/dwarf.h"
#include "symbolizer/symbols/file_id.h"
#include "symbolizer/symbols/objcache.h"
#include "symbolizer/symbols/sigbus_guard.h"

#include <libelf.h>
#include <stdlib.h>
#include <sys/stat.h>

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
	ck_assert_ptr_null(ember_objcache_get(&c, &k1, 1, 0));
	o = ember_objcache_load(&c, &k1, fa, 1, NULL, 0);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(o->error, 0);
	ck_assert_uint_gt(o->file.syms.nsyms, 0);
	ck_assert(o->has_hash);
	a = o->bytes;
	ck_assert_ptr_eq(ember_objcache_get(&c, &k1, 1, 1), o);
	ck_assert_uint_eq(c.hits, 1);
	ck_assert_uint_eq(c.misses, 1);
	b = ember_objcache_load(&c, &k2, fb, 1, NULL, 0)->bytes;
	cc = ember_objcache_load(&c, &k3, fc, 1, NULL, 0)->bytes;
	ck_assert_uint_eq(c.bytes, a + b + cc);
	ember_objcache_free(&c);

	/* Room for all but one: loading the third evicts the least recently used. */
	ck_assert_int_eq(ember_objcache_init(&c, a + b + cc - 1), 0);
	ck_assert_ptr_nonnull(ember_objcache_load(&c, &k1, fa, 1, NULL, 0));
	ck_assert_ptr_nonnull(ember_objcache_load(&c, &k2, fb, 1, NULL, 0));
	ck_assert_ptr_nonnull(ember_objcache_get(&c, &k1, 1, 0)); /* k1 now most recent */
	ck_assert_ptr_nonnull(ember_objcache_load(&c, &k3, fc, 1, NULL, 0));
	ck_assert_uint_eq(c.evictions, 1);
	ck_assert_ptr_null(ember_objcache_get(&c, &k2, 1, 0));
	ck_assert_ptr_nonnull(ember_objcache_get(&c, &k1, 1, 0));
	ck_assert_ptr_nonnull(ember_objcache_get(&c, &k3, 1, 0));
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
	o1 = ember_objcache_load(&c, &k1, fd, 1, NULL, 0);
	o2 = ember_objcache_load(&c, &k2, fd, 1, NULL, 0);
	ck_assert_ptr_nonnull(o1);
	ck_assert_ptr_eq(o1, o2);
	ck_assert_uint_eq(c.shared, 1);
	ck_assert_ptr_eq(ember_objcache_get(&c, &k2, 1, 0), o1);
	ck_assert_ptr_eq(ember_objcache_get(&c, &k1, 1, 0), o1);
	ck_assert_str_eq(o1->file.id.hash_hex, o2->file.id.hash_hex);
	ember_objcache_free(&c);
	close(fd);
}
END_TEST

/* A file cut short while the cache has it mapped (a build rewriting its output in
 * place): reading its lost pages does not kill the process, and the cache drops
 * the entry so that it is read again from the file as it is now. */
START_TEST(a_file_cut_short_under_the_cache_is_dropped)
{
	struct ember_objcache c;
	struct ember_obj_key k = {7, 7};
	char path[] = "/tmp/ember-test-objcache-XXXXXX";
	int src = open_ro("/proc/self/exe"), dst = mkstemp(path);
	struct stat st;
	struct ember_obj *o;
	const volatile char *image;
	size_t size = 0, sum = 0;

	ck_assert_int_ge(dst, 0);
	unlink(path);
	ck_assert_int_eq(fstat(src, &st), 0);
	for (off_t at = 0; at < st.st_size;) {
		char buf[65536];
		ssize_t n = pread(src, buf, sizeof(buf), at);

		ck_assert_int_gt(n, 0);
		ck_assert_int_eq(pwrite(dst, buf, (size_t)n, at), n);
		at += n;
	}
	ck_assert_int_eq(ember_sigbus_guard_install(), 0);
	ck_assert_int_eq(ember_objcache_init(&c, 1 << 30), 0);
	o = ember_objcache_load(&c, &k, dst, 1, NULL, 0);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(o->error, 0);
	image = elf_rawfile(o->file.elf, &size);
	ck_assert_uint_eq(size, (size_t)st.st_size);
	ck_assert_uint_gt(size, 3 * 4096);

	ck_assert_int_eq(ftruncate(dst, 4096), 0);
	for (size_t at = 0; at < size; at += 4096)
		sum += (unsigned char)image[at]; /* past 4096: zeros now, no SIGBUS */
	(void)sum;
	ck_assert_uint_ge(ember_sigbus_guard_count(), (size - 4096) / 4096 - 1);
	ck_assert_ptr_null(ember_objcache_get(&c, &k, 1, 1));
	ck_assert_uint_eq(c.changed_files, 1);
	ck_assert_uint_eq(c.bytes, 0);
	ember_objcache_free(&c);
	close(src);
	close(dst);
}
END_TEST

START_TEST(failures_are_remembered_then_retried)
{
	struct ember_objcache c;
	struct ember_obj_key k = {9, 9};
	struct ember_obj *o;

	ck_assert_int_eq(ember_objcache_init(&c, 0), 0);
	o = ember_objcache_load(&c, &k, -ENOENT, 1, NULL, 1000);
	ck_assert_int_eq(o->error, -ENOENT);
	ck_assert_uint_eq(c.load_errors, 1);
	o = ember_objcache_get(&c, &k, 1, 2000);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(o->error, -ENOENT);
	ck_assert_ptr_null(ember_objcache_get(&c, &k, 1, 1000 + EMBER_OBJCACHE_RETRY_NS + 1));
	ember_objcache_free(&c);
}
END_TEST

/* Functions of this program for lookups to land in. */
__attribute__((noinline)) int objcache_test_a(int x)
{
	return x + 1;
}

__attribute__((noinline)) int objcache_test_b(int x)
{
	return x * 2;
}

START_TEST(a_file_past_half_the_cache_has_its_dwarf_reset)
{
	struct ember_objcache c;
	struct ember_obj_key k = {1, 1};
	struct ember_sym_frames fr;
	int fd = open_ro("/proc/self/exe");
	void *other_units[] = {(void *)ember_objcache_init, (void *)ember_objfile_open,
	                       (void *)ember_profile_init,  (void *)ember_dwarf_bytes,
	                       (void *)ember_file_id_fd,    (void *)ember_maps_find};
	struct ember_obj *o;
	uint64_t a, b;
	size_t grown;

	ck_assert_int_eq(ember_objcache_init(&c, 1 << 20), 0);
	o = ember_objcache_load(&c, &k, fd, 1, NULL, 0);
	close(fd);
	ck_assert_ptr_nonnull(o);
	ck_assert_ptr_nonnull(o->file.dwarf);
	a = self_elf_addr_of(&o->file.syms, objcache_test_a);
	b = self_elf_addr_of(&o->file.syms, objcache_test_b);
	/* Past half the cache, but lookups have expanded less than an eighth of it since the
	 * DWARF was opened: nothing to gain, no reset (each lookup would open it again). */
	ck_assert_int_eq(ember_objcache_lookup(&c, o, a, &fr), EMBER_SYM_DWARF);
	grown = o->bytes - o->bytes_fresh;
	ck_assert_uint_gt(grown, 0);
	ember_objcache_set_limit(&c, o->bytes + o->bytes / 2);
	ck_assert_uint_lt(8 * grown, ember_objcache_limit(&c));
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(ember_objcache_lookup(&c, o, i % 2 ? b : a, &fr), EMBER_SYM_DWARF);
	ck_assert_uint_eq(c.dwarf_resets, 0);
	/* Lookups all over the program (other units) expand more than that: the DWARF
	 * starts afresh, and names alike. */
	for (int i = 0; i < 64 && !c.dwarf_resets; i++) {
		ember_objcache_lookup(&c, o, self_elf_addr_of(&o->file.syms, other_units[i % 6]),
		                      &fr);
		ck_assert_int_eq(ember_objcache_lookup(&c, o, a, &fr), EMBER_SYM_DWARF);
		ck_assert_str_eq(fr.f[fr.n - 1].name, "objcache_test_a");
	}
	ck_assert_uint_gt(c.dwarf_resets, 0);
	ck_assert_int_eq(ember_objcache_lookup(&c, o, b, &fr), EMBER_SYM_DWARF);
	ck_assert_str_eq(fr.f[fr.n - 1].name, "objcache_test_b");
	/* Without the budget's limit the cache is its configured size again. */
	ember_objcache_set_limit(&c, 0);
	ck_assert_uint_eq(ember_objcache_limit(&c), 1 << 20);
	ember_objcache_release_pages(&c);
	ck_assert_int_eq(ember_objcache_lookup(&c, o, a, &fr), EMBER_SYM_DWARF);
	ember_objcache_free(&c);
}
END_TEST

START_TEST(the_budget_shrinks_the_cache_and_counts_it)
{
	struct ember_objcache c;
	struct ember_obj_key k1 = {1, 1}, k2 = {1, 2};
	int fa = open_ro("/bin/true"), fb = open_ro("/bin/ls");
	struct ember_profile p;

	ck_assert_int_eq(ember_objcache_init(&c, 1 << 30), 0);
	ck_assert_ptr_nonnull(ember_objcache_load(&c, &k1, fa, 1, NULL, 0));
	ck_assert_ptr_nonnull(ember_objcache_load(&c, &k2, fb, 1, NULL, 0));
	ck_assert_uint_gt(ember_objcache_set_limit(&c, ember_objcache_bytes(&c) - 1), 0);
	ck_assert_ptr_null(ember_objcache_get(&c, &k1, 1, 0));
	ck_assert_ptr_nonnull(ember_objcache_get(&c, &k2, 1, 0));
	ck_assert_int_eq(ember_profile_init(&p), 0);
	ember_objcache_report_stats(&c, &p);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "objcache.evictions_for_budget"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "objcache.entries"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "objcache.limit"), ember_objcache_limit(&c));
	ember_profile_free(&p);
	ember_objcache_free(&c);
	close(fa);
	close(fb);
}
END_TEST

START_TEST(a_file_not_had_through_one_process_is_asked_through_another)
{
	struct ember_objcache c;
	struct ember_obj_key k = {1, 1};

	ck_assert_int_eq(ember_objcache_init(&c, 0), 0);
	ck_assert_ptr_nonnull(ember_objcache_load(&c, &k, -ESRCH, 10, NULL, 0));
	ck_assert_ptr_nonnull(ember_objcache_get(&c, &k, 10, 1));
	ck_assert_ptr_null(ember_objcache_get(&c, &k, 11, 1));
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
	tcase_add_test(tc, a_file_cut_short_under_the_cache_is_dropped);
	tcase_add_test(tc, a_file_past_half_the_cache_has_its_dwarf_reset);
	tcase_add_test(tc, the_budget_shrinks_the_cache_and_counts_it);
	tcase_add_test(tc, a_file_not_had_through_one_process_is_asked_through_another);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(objcache_suite)
