/* SPDX-License-Identifier: Apache-2.0 */
/* A small profile with known content, shared by the writer tests. */
#ifndef EMBER_TESTS_PROFILE_FIXTURE_H
#define EMBER_TESTS_PROFILE_FIXTURE_H

#include <check.h>
#include <errno.h>

#include "symbolizer/profile/profile.h"

static inline uint32_t fixture_fn(struct ember_profile *p, const char *name)
{
	struct ember_function f = {0};
	uint32_t id;

	ck_assert_int_eq(ember_profile_intern_cstr(p, name, &f.name), 0);
	f.system_name = f.name;
	ck_assert_int_eq(ember_profile_add_function(p, &f, &id), 0);
	return id;
}

static inline uint32_t fixture_loc(struct ember_profile *p, uint32_t mapping, uint64_t addr,
                                   const char *name)
{
	struct ember_line line = {0};
	uint32_t id;

	if (!name) {
		ck_assert_int_eq(
		    ember_profile_add_location(p, mapping, EMBER_FRAME_NATIVE, addr, NULL, 0, &id),
		    0);
		return id;
	}
	line.function = fixture_fn(p, name);
	ck_assert_int_eq(
	    ember_profile_add_location(p, mapping, EMBER_FRAME_NATIVE, addr, &line, 1, &id), 0);
	return id;
}

/* An empty profile of 5 s at 100 Hz. */
static inline void fixture_init(struct ember_profile *p)
{
	ck_assert_int_eq(ember_profile_init(p), 0);
	p->sample_hz = 100;
	p->period_ns = 10000000;
	p->start_ns = 1700000000000000000ull;
	p->end_ns = p->start_ns + 5000000000ull;
}

/*
 * Process "app" (pid 10): main -> work -> leaf_a  x6, main -> work -> leaf_b x3,
 * main -> libfoo.so+0x1234 (unsymbolized) x1. Process "other" (pid 20): main x2.
 */
static inline void fixture_build(struct ember_profile *p)
{
	struct ember_mapping m = {.start = 0x400000, .limit = 0x500000, .file_offset = 0};
	struct ember_mapping lib = {
	    .start = 0x7f0000000000, .limit = 0x7f0000100000, .file_offset = 0x1000};
	struct ember_sample_key key = {.pid = 10, .tid = 11, .cpu = 1};
	uint32_t map, libmap, stack, locs[3];

	fixture_init(p);
	ck_assert_int_eq(ember_profile_intern_cstr(p, "/usr/bin/app", &m.filename), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(p, "0123abcd", &m.gnu_build_id), 0);
	ck_assert_int_eq(ember_profile_add_mapping(p, &m, &map), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(p, "/usr/lib/libfoo.so", &lib.filename), 0);
	ck_assert_int_eq(ember_profile_add_mapping(p, &lib, &libmap), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(p, "app", &key.comm), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(p, "app-worker", &key.thread_name), 0);

	locs[2] = fixture_loc(p, map, 0x401000, "main");
	locs[1] = fixture_loc(p, map, 0x402000, "work");
	locs[0] = fixture_loc(p, map, 0x403000, "leaf_a");
	ck_assert_int_eq(ember_profile_add_stack(p, locs, 3, &stack), 0);
	key.stack = stack;
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(ember_profile_add_sample(p, &key, 1, p->start_ns + (uint64_t)i),
		                 0);
	locs[0] = fixture_loc(p, map, 0x404000, "leaf_b");
	ck_assert_int_eq(ember_profile_add_stack(p, locs, 3, &stack), 0);
	key.stack = stack;
	ck_assert_int_eq(ember_profile_add_sample(p, &key, 3, 0), 0);
	locs[1] = fixture_loc(p, libmap, 0x7f0000000234, NULL);
	ck_assert_int_eq(ember_profile_add_stack(p, &locs[1], 2, &stack), 0);
	key.stack = stack;
	ck_assert_int_eq(ember_profile_add_sample(p, &key, 1, 0), 0);

	key.pid = key.tid = 20;
	ck_assert_int_eq(ember_profile_intern_cstr(p, "other", &key.comm), 0);
	ck_assert_int_eq(ember_profile_add_stack(p, &locs[2], 1, &stack), 0);
	key.stack = stack;
	ck_assert_int_eq(ember_profile_add_sample(p, &key, 2, 0), 0);
	ck_assert_int_eq(ember_profile_stat_add(p, "lost.samples", 4), 0);
}

/*
 * The fixture plus off-CPU time of "app" (pid 10, tid 12): main -> work -> wait_lock
 * 3 s ("futex", twice: 1 s + 2 s) and main -> wait_io 1 s ("uninterruptible").
 */
static inline void fixture_build_off_cpu(struct ember_profile *p)
{
	struct ember_sample_key key = {.pid = 10, .tid = 12, .cpu = 0};
	uint32_t locs[3], stack, map = 0;

	fixture_build(p);
	ck_assert_int_eq(ember_profile_intern_cstr(p, "app", &key.comm), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(p, "app-io", &key.thread_name), 0);
	locs[2] = fixture_loc(p, map, 0x401000, "main");
	locs[1] = fixture_loc(p, map, 0x402000, "work");
	locs[0] = fixture_loc(p, map, 0x405000, "wait_lock");
	ck_assert_int_eq(ember_profile_add_stack(p, locs, 3, &stack), 0);
	key.stack = stack;
	/* A CPU sample's key has no wait reason, an off-CPU sample's must have one. */
	ck_assert_int_eq(ember_profile_add_off_cpu(p, &key, 1000000000ull), -EINVAL);
	ck_assert_int_eq(ember_profile_intern_cstr(p, "futex", &key.wait), 0);
	ck_assert_int_eq(ember_profile_add_sample(p, &key, 1, 0), -EINVAL);
	ck_assert_int_eq(ember_profile_add_off_cpu(p, &key, 1000000000ull), 0);
	ck_assert_int_eq(ember_profile_add_off_cpu(p, &key, 2000000000ull), 0);
	locs[1] = fixture_loc(p, map, 0x406000, "wait_io");
	ck_assert_int_eq(ember_profile_add_stack(p, &locs[1], 2, &stack), 0);
	key.stack = stack;
	ck_assert_int_eq(ember_profile_intern_cstr(p, "uninterruptible", &key.wait), 0);
	ck_assert_int_eq(ember_profile_add_off_cpu(p, &key, 1000000000ull), 0);
}

#endif
