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
	/* Files without DWARF: each is read whole, whatever its share of the cache. */
	int fa = open_ro("/bin/sh"), fb = open_ro("/bin/true"), fc = open_ro("/bin/ls");
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
	/* A broker too busy to open the file (every worker taken, its rate spent) is asked
	 * again as soon as after a stall, not after the 30 s of a file that is not there. */
	for (int i = 0; i < 2; i++) {
		int busy = i ? -EAGAIN : -EBUSY;

		k.ino = 10 + (uint64_t)i;
		o = ember_objcache_load(&c, &k, busy, 1, NULL, 1000);
		ck_assert_int_eq(o->error, busy);
		ck_assert_ptr_eq(ember_objcache_get(&c, &k, 1, 1000 + EMBER_OBJCACHE_STALL_RETRY_NS),
		                 o);
		ck_assert_ptr_null(
		    ember_objcache_get(&c, &k, 1, 1000 + EMBER_OBJCACHE_STALL_RETRY_NS + 1));
	}
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

/* Sets the cache's limit that leaves o, alone in it, room for fit more bytes of expanded
 * DWARF: alone, it may take the whole limit. */
static void leave_room(struct ember_objcache *c, const struct ember_obj *o, size_t fit)
{
	size_t want = o->bytes + fit, limit = want;

	ck_assert_uint_eq(ember_objcache_bytes(c), o->bytes);
	ember_objcache_set_limit(c, limit);
	ck_assert_uint_eq(ember_objcache_limit(c), limit);
	ck_assert_uint_eq(ember_objcache_file_cap(c, o), want);
}

START_TEST(a_dwarf_unit_expands_only_if_it_fits)
{
	struct ember_objcache c;
	struct ember_obj_key k = {1, 1};
	struct ember_sym_frames fr;
	int fd = open_ro("/proc/self/exe");
	struct ember_obj *o;
	uint64_t a;
	size_t cost;

	ck_assert_int_eq(ember_objcache_init(&c, 64 << 20), 0);
	o = ember_objcache_load(&c, &k, fd, 1, NULL, 0);
	close(fd);
	ck_assert_ptr_nonnull(o);
	ck_assert_ptr_nonnull(o->file.dwarf);
	a = self_elf_addr_of(&o->file.syms, objcache_test_a);
	cost = ember_objfile_expand_cost(&o->file, a);
	ck_assert_uint_gt(cost, 0);
	/* The budget's room is short of it, and no entry outside the working set can make
	 * way: named by the symbol table, counted, nothing expanded. */
	ember_objcache_set_room(&c, cost - 1);
	ck_assert_int_eq(ember_objcache_lookup(&c, o, a, &fr), EMBER_SYM_SYMTAB);
	ck_assert_str_eq(fr.f[0].name, "objcache_test_a");
	ck_assert_uint_eq(c.units_deferred, 1);
	ck_assert_uint_eq(o->bytes, o->bytes_fresh);
	/* The room is there, but the file would pass the limit. */
	ember_objcache_set_room(&c, SIZE_MAX);
	leave_room(&c, o, cost - 1);
	ck_assert_int_eq(ember_objcache_lookup(&c, o, a, &fr), EMBER_SYM_SYMTAB);
	ck_assert_uint_eq(c.units_deferred, 2);
	ck_assert_uint_eq(c.dwarf_resets, 0); /* nothing expanded to drop */
	/* Both: lines, the unit expanded, and what it took is no longer room. */
	leave_room(&c, o, cost);
	ember_objcache_set_room(&c, cost + 100);
	ck_assert_int_eq(ember_objcache_lookup(&c, o, a, &fr), EMBER_SYM_DWARF);
	ck_assert_str_eq(fr.f[fr.n - 1].name, "objcache_test_a");
	ck_assert_uint_gt(o->bytes, o->bytes_fresh);
	ck_assert_uint_eq(c.budget_room, 100);
	ck_assert_uint_eq(c.units_deferred, 2);
	ember_objcache_free(&c);
}
END_TEST

START_TEST(a_file_past_half_the_cache_at_open_may_expand_an_eighth_more)
{
	struct ember_objcache c;
	struct ember_obj o = {.bytes_fresh = 1 << 20};

	ck_assert_int_eq(ember_objcache_init(&c, 24 << 20), 0);
	/* Other entries hold 20 MiB (counted, not loaded: the cap reads the count). */
	c.bytes = 20 << 20;
	ck_assert_uint_eq(ember_objcache_file_cap(&c, &o), 12 << 20);
	/* glibc's debug file takes 13.4 MiB at open: its units still expand, within 3 MiB. */
	o.bytes_fresh = 13400u << 10;
	ck_assert_uint_eq(ember_objcache_file_cap(&c, &o), (13400u << 10) + (3 << 20));
	/* What the others leave free, when that is more: 24 - 2 MiB. */
	c.bytes = 2 << 20;
	ck_assert_uint_eq(ember_objcache_file_cap(&c, &o), 22 << 20);
	c.bytes = 0;
	ember_objcache_free(&c);
}
END_TEST

START_TEST(a_full_file_has_its_dwarf_reset_at_most_every_30_s)
{
	struct ember_objcache c;
	struct ember_obj_key k = {1, 1};
	struct ember_sym_frames fr;
	int fd = open_ro("/proc/self/exe");
	void *other_units[] = {(void *)ember_objcache_init, (void *)ember_profile_init,
	                       (void *)ember_file_id_fd, (void *)ember_maps_find};
	struct ember_obj *o;
	uint64_t a, b, other[4];
	size_t cost;

	ck_assert_int_eq(ember_objcache_init(&c, 64 << 20), 0);
	o = ember_objcache_load(&c, &k, fd, 1, NULL, 0);
	close(fd);
	ck_assert_ptr_nonnull(o);
	a = self_elf_addr_of(&o->file.syms, objcache_test_a);
	b = self_elf_addr_of(&o->file.syms, objcache_test_b);
	for (int i = 0; i < 4; i++)
		other[i] = self_elf_addr_of(&o->file.syms, other_units[i]);
	ck_assert_int_eq(ember_objcache_lookup(&c, o, a, &fr), EMBER_SYM_DWARF);
	ck_assert_uint_gt(o->bytes, o->bytes_fresh);
	/* Full: the next unit would pass the limit. What lookups expanded goes, and
	 * the unit expands. */
	cost = ember_objfile_expand_cost(&o->file, other[0]);
	ck_assert_uint_gt(cost, 0);
	leave_room(&c, o, cost - 1);
	ck_assert_int_eq(ember_objcache_lookup(&c, o, other[0], &fr), EMBER_SYM_DWARF);
	ck_assert_uint_eq(c.dwarf_resets, 1);
	ck_assert_uint_eq(c.units_deferred, 0);
	/* Full again within 30 s: no reset; the unit that does not fit is named by the
	 * symbol table. */
	for (int i = 1; i < 4; i++) {
		cost = ember_objfile_expand_cost(&o->file, other[i]);
		if (!cost)
			continue;
		leave_room(&c, o, cost - 1);
		ck_assert_int_eq(ember_objcache_lookup(&c, o, other[i], &fr), EMBER_SYM_SYMTAB);
		ck_assert_uint_eq(c.dwarf_resets, 1);
		ck_assert_uint_eq(c.units_deferred, 1);
		/* 30 s later: reset again, and the unit in use expands. */
		ck_assert_ptr_eq(ember_objcache_get(&c, &k, 1, EMBER_OBJCACHE_RETRY_NS), o);
		ck_assert_int_eq(ember_objcache_lookup(&c, o, other[i], &fr), EMBER_SYM_DWARF);
		ck_assert_uint_eq(c.dwarf_resets, 2);
		break;
	}
	ck_assert_uint_eq(c.dwarf_resets, 2);
	/* Names are right after resets (a and b share a unit, not expanded now). */
	ember_objcache_set_limit(&c, 0);
	ck_assert_int_eq(ember_objcache_lookup(&c, o, b, &fr), EMBER_SYM_DWARF);
	ck_assert_str_eq(fr.f[fr.n - 1].name, "objcache_test_b");
	ck_assert_int_eq(ember_objcache_lookup(&c, o, a, &fr), EMBER_SYM_DWARF);
	ck_assert_str_eq(fr.f[fr.n - 1].name, "objcache_test_a");
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
	ember_objcache_report_stats(&c, &EMBER_PROFILE_STAT_SINK(&p));
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

/* The costs of reading the file at path, from its section headers. */
static struct ember_objfile_cost cost_of(const char *path)
{
	struct ember_objfile_cost cost = {0};
	int fd = open_ro(path);
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ck_assert_ptr_nonnull(elf);
	ember_objfile_syms_cost(elf, &cost);
	ember_objfile_dwarf_cost(elf, NULL, &cost);
	elf_end(elf);
	close(fd);
	return cost;
}

/*
 * Not in a sanitized build, the next two: their file is this program, whose symbols must cost
 * less than its DWARF, and a sanitized build links the sanitizers' runtimes in, symbols
 * without DWARF (the symbols estimated at 652 KB, the DWARF at 171 KB): another shape.
 */
#ifndef EMBER_SANITIZERS
/* A file whose DWARF would take more than the room keeps its symbols alone; one that fits is
 * read whole; one whose symbols do not fit is not read. */
START_TEST(the_admission_estimate_decides_what_is_read)
{
	struct ember_objfile_cost cost = cost_of("/proc/self/exe");
	struct ember_objfile_room room;
	struct ember_sym_frames fr;
	struct ember_objfile o;
	uint64_t a;
	size_t sb;
	int fd = open_ro("/proc/self/exe");

	/* This program's own DWARF is uncompressed: units' heap and pages read in place. */
	ck_assert_uint_gt(cost.syms, 0);
	ck_assert_uint_gt(cost.dwarf_heap, 0);
	ck_assert_uint_gt(cost.dwarf_pages, 0);

	/* What the symbols keep, read without a limit. */
	ck_assert_int_eq(ember_objfile_open(fd, NULL, &o), 0);
	sb = o.syms.bytes;
	ember_objfile_close(&o);

	/* All of it fits: symbols, and DWARF beside them. */
	room = (struct ember_objfile_room){.kept = sb + cost.dwarf_heap,
	                                   .transient = sb + cost.dwarf_heap + cost.dwarf_pages};
	ck_assert_uint_le(cost.syms, room.transient);
	ck_assert_int_eq(ember_objfile_open_within(fd, NULL, &room, &o), 0);
	ck_assert_ptr_nonnull(o.dwarf);
	ck_assert(!o.dwarf_deferred);
	a = self_elf_addr_of(&o.syms, objcache_test_a);
	ck_assert_int_eq(ember_objfile_lookup(&o, a, &fr), EMBER_SYM_DWARF);
	ember_objfile_close(&o);

	/* A byte short of the moment's room (its pages) or of what it may keep: symbols alone. */
	room.transient--;
	ck_assert_int_eq(ember_objfile_open_within(fd, NULL, &room, &o), 0);
	ck_assert_ptr_null(o.dwarf);
	ck_assert(o.dwarf_deferred);
	ck_assert_uint_eq(o.dwarf_cost, cost.dwarf_heap + cost.dwarf_pages);
	ck_assert_int_eq(ember_objfile_lookup(&o, a, &fr), EMBER_SYM_SYMTAB);
	ck_assert_str_eq(fr.f[0].name, "objcache_test_a");
	ember_objfile_close(&o);
	room = (struct ember_objfile_room){.kept = sb + cost.dwarf_heap - 1, .transient = SIZE_MAX};
	ck_assert_int_eq(ember_objfile_open_within(fd, NULL, &room, &o), 0);
	ck_assert(o.dwarf_deferred && !o.dwarf);
	ember_objfile_close(&o);

	/* The symbols do not fit: nothing is read. */
	room = (struct ember_objfile_room){.kept = SIZE_MAX, .transient = cost.syms - 1};
	ck_assert_int_eq(ember_objfile_open_within(fd, NULL, &room, &o), -ENOBUFS);
	room.transient = cost.syms;
	ck_assert_int_eq(ember_objfile_open_within(fd, NULL, &room, &o), 0);
	ck_assert(o.dwarf_deferred);
	ember_objfile_close(&o);
	close(fd);
}
END_TEST

/* The cache asks for the budget's room, defers and counts, and tries again later. */
START_TEST(files_that_do_not_fit_the_budget_are_deferred_and_counted)
{
	struct ember_objfile_cost cost = cost_of("/proc/self/exe");
	const uint64_t s = 1000000000ull;
	struct ember_objcache c;
	struct ember_obj_key k = {1, 1};
	struct ember_sym_frames fr;
	struct ember_profile p;
	struct ember_obj *o;
	int fd = open_ro("/proc/self/exe");

	ck_assert_int_eq(ember_objcache_init(&c, 1 << 30), 0);
	ember_objcache_set_room(&c, cost.syms - 1);
	o = ember_objcache_load(&c, &k, fd, 1, NULL, 0);
	ck_assert_int_eq(o->error, -ENOBUFS);
	/* Remembered for a moment, then asked for again. */
	ck_assert_ptr_eq(ember_objcache_get(&c, &k, 1, 1 * s), o);
	ck_assert_ptr_null(ember_objcache_get(&c, &k, 1, 3 * s));
	/* Room for the symbols, not for the DWARF beside them. */
	ck_assert_uint_lt(cost.syms, cost.dwarf_heap + cost.dwarf_pages);
	ember_objcache_set_room(&c, cost.syms);
	o = ember_objcache_load(&c, &k, fd, 1, NULL, 3 * s);
	ck_assert_int_eq(o->error, 0);
	ck_assert(o->file.dwarf_deferred);
	ck_assert_int_eq(
	    ember_objcache_lookup(&c, o, self_elf_addr_of(&o->file.syms, objcache_test_b), &fr),
	    EMBER_SYM_SYMTAB);
	ck_assert_int_eq(ember_profile_init(&p), 0);
	ember_objcache_report_stats(&c, &EMBER_PROFILE_STAT_SINK(&p));
	ck_assert_uint_eq(ember_profile_stat_get(&p, "objcache.files_deferred_for_budget"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "objcache.dwarf_deferred_for_budget"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "objcache.lookups_without_dwarf"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "objcache.load_errors"), 0);
	ember_profile_free(&p);
	/* What it kept came off the room. */
	ck_assert_uint_eq(c.budget_room, cost.syms - o->bytes);
	/* Used within the retry time, it stays; after it, its DWARF is tried again. */
	ck_assert_ptr_eq(ember_objcache_get(&c, &k, 1, 20 * s), o);
	ck_assert_ptr_null(ember_objcache_get(&c, &k, 1, 34 * s));
	ember_objcache_set_room(&c, SIZE_MAX);
	o = ember_objcache_load(&c, &k, fd, 1, NULL, 34 * s);
	ck_assert_ptr_nonnull(o->file.dwarf);
	ck_assert(!o->file.dwarf_deferred);
	ember_objcache_free(&c);
	close(fd);
}
END_TEST
#endif

/* A file is not read at the expense of the working set (entries used in the last seconds): that
 * would only read them again a moment later. */
START_TEST(a_file_is_not_read_at_the_working_sets_expense)
{
	struct ember_objfile_cost cost = cost_of("/proc/self/exe");
	const uint64_t s = 1000000000ull;
	static const char *const others[] = {"/bin/true",
	                                     "/bin/ls",
	                                     "/bin/sh",
	                                     "/usr/lib/x86_64-linux-gnu/libc.so.6",
	                                     "/usr/lib/x86_64-linux-gnu/libdw.so.1",
	                                     "/usr/lib/x86_64-linux-gnu/libelf.so.1",
	                                     "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
	                                     "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"};
	struct ember_objcache c;
	struct ember_obj_key kb = {1, 1000};
	struct ember_objfile plain;
	struct ember_obj *o;
	size_t hot = 0, need, limit;
	int fd = open_ro("/proc/self/exe");

	/* What this program keeps with its DWARF: its symbols and the DWARF's estimate. */
	ck_assert_int_eq(ember_objfile_open(fd, NULL, &plain), 0);
	need = plain.syms.bytes + cost.dwarf_heap;
	ember_objfile_close(&plain);
	/* Other files, all used just now, that hold more than that together. */
	ck_assert_int_eq(ember_objcache_init(&c, 1 << 30), 0);
	for (uint64_t i = 0; i < sizeof(others) / sizeof(others[0]) && hot <= need; i++) {
		struct ember_obj_key k = {1, i + 1};
		int f = open(others[i], O_RDONLY | O_CLOEXEC);

		if (f < 0)
			continue;
		hot += ember_objcache_load(&c, &k, f, 1, NULL, 0)->bytes;
		close(f);
	}
	ck_assert_uint_gt(hot, need); /* else the test proves nothing */
	/* The cache would hold the DWARF, but not beside the working set. */
	limit = hot > 2 * need ? hot : 2 * need;
	ck_assert_uint_gt(need, limit / EMBER_OBJCACHE_SMALL_SHARE); /* not a small file */
	ember_objcache_set_limit(&c, limit);
	o = ember_objcache_load(&c, &kb, fd, 1, NULL, 1 * s);
	ck_assert(o->file.dwarf_deferred);
	ck_assert_ptr_null(o->file.dwarf);
	/* Once the others have not been used for a while, they make way. */
	ck_assert_ptr_null(ember_objcache_get(&c, &kb, 1, 40 * s));
	o = ember_objcache_load(&c, &kb, fd, 1, NULL, 40 * s);
	ck_assert_ptr_nonnull(o->file.dwarf);
	ck_assert_uint_le(ember_objcache_bytes(&c), limit);
	ember_objcache_free(&c);
	close(fd);
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
	tcase_add_test(tc, a_dwarf_unit_expands_only_if_it_fits);
	tcase_add_test(tc, a_file_past_half_the_cache_at_open_may_expand_an_eighth_more);
	tcase_add_test(tc, a_full_file_has_its_dwarf_reset_at_most_every_30_s);
	tcase_add_test(tc, the_budget_shrinks_the_cache_and_counts_it);
	tcase_add_test(tc, a_file_not_had_through_one_process_is_asked_through_another);
#ifndef EMBER_SANITIZERS /* see the tests */
	tcase_add_test(tc, the_admission_estimate_decides_what_is_read);
	tcase_add_test(tc, files_that_do_not_fit_the_budget_are_deferred_and_counted);
#endif
	tcase_add_test(tc, a_file_is_not_read_at_the_working_sets_expense);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(objcache_suite)
