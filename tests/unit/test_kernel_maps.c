// SPDX-License-Identifier: Apache-2.0
/*
 * The mappings the kernel reports (bpf/proc.bpf.h: an exec's vDSO, a process's
 * executable mappings at its exit) read back as maps: paths put together from
 * the kernel's names, hostile names kept to one line, one program at a time,
 * kept after the exit for a while; and served for a process that is gone in
 * place of what the broker has (nothing, or a snapshot).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "fake_broker.h"
#include "symbolizer/process/kernel_maps.h"
#include "symbolizer/process/process_table.h"

#define SEC 1000000000ull

static struct ember_proc_event exec_event(uint32_t pid, uint64_t exec_id)
{
	return (struct ember_proc_event){.kind = EMBER_EV_EXEC,
	                                 .tgid = pid,
	                                 .start = 0x7ffff7fc0000,
	                                 .end = 0x7ffff7fc2000,
	                                 .exec_id = exec_id};
}

/* A mapping of the file at path (the kernel's names, the file's first), device 259:3. */
static struct ember_proc_event mmap_event(uint32_t pid, uint64_t exec_id, uint64_t start,
                                          uint64_t ino, const char *const *names, uint32_t depth)
{
	struct ember_proc_event ev = {.kind = EMBER_EV_MMAP,
	                              .tgid = pid,
	                              .start = start,
	                              .end = start + 0x3000,
	                              .offset = 0x1000,
	                              .ino = ino,
	                              .exec_id = exec_id,
	                              .dev = 259u << 20 | 3,
	                              .depth = depth};

	for (uint32_t i = 0; i < depth && i < EMBER_MMAP_DEPTH; i++)
		snprintf(ev.name[i], EMBER_MMAP_NAME_LEN, "%s", names[i]);
	return ev;
}

static const char *const LIBC[] = {"libc.so.6", "x86_64-linux-gnu", "lib", "usr"};
static const char *const TOOL[] = {"tool", "bin"};

START_TEST(reported_mappings_read_as_maps)
{
	struct ember_kernel_maps k;
	struct ember_maps m;
	struct ember_proc_event ev;

	ck_assert_int_eq(ember_kernel_maps_init(&k), 0);
	/* The program and its loader are mapped before the exec is reported. */
	ev = mmap_event(42, 7, 0x555500000000, 11, TOOL, 2);
	ember_kernel_maps_event(&k, &ev, SEC);
	ev = exec_event(42, 7);
	ember_kernel_maps_event(&k, &ev, SEC);
	ev = mmap_event(42, 7, 0x7f0000000000, 12, LIBC, 4);
	ember_kernel_maps_event(&k, &ev, SEC);
	ck_assert_int_eq(ember_kernel_maps_get(&k, 42, &m), 0);
	ck_assert_uint_eq(m.count, 3);
	ck_assert_uint_eq(m.bad_lines, 0);
	/* Sorted by address: the program, the library, the vDSO. */
	ck_assert_str_eq(ember_maps_path(&m, &m.entries[0]), "/bin/tool");
	ck_assert_uint_eq(m.entries[0].start, 0x555500000000);
	ck_assert_uint_eq(m.entries[0].end, 0x555500003000);
	ck_assert_uint_eq(m.entries[0].offset, 0x1000);
	ck_assert_uint_eq(m.entries[0].inode, 11);
	ck_assert_uint_eq(m.entries[0].dev_major, 259);
	ck_assert_uint_eq(m.entries[0].dev_minor, 3);
	ck_assert_uint_eq(m.entries[0].kind, EMBER_MAP_FILE);
	ck_assert(m.entries[0].perms & EMBER_MAP_X);
	ck_assert_str_eq(ember_maps_path(&m, &m.entries[1]), "/usr/lib/x86_64-linux-gnu/libc.so.6");
	ck_assert_uint_eq(m.entries[2].kind, EMBER_MAP_VDSO);
	ck_assert_uint_eq(m.entries[2].start, 0x7ffff7fc0000);
	ember_maps_free(&m);
	ck_assert_int_eq(ember_kernel_maps_get(&k, 43, &m), -ENOENT);
	ember_kernel_maps_free(&k);
}
END_TEST

START_TEST(names_from_the_process_stay_names)
{
	static const char *const HOSTILE[] = {"a\n7f-80 r-xp 0 00:00 1 /etc/x", "d"};
	static const char *const DEEP[] = {"f", "8", "7", "6", "5", "4", "3", "2"};
	struct ember_proc_event ev = mmap_event(42, 1, 0x10000000, 5, HOSTILE, 2);
	struct ember_kernel_maps k;
	struct ember_maps m;

	ck_assert_int_eq(ember_kernel_maps_init(&k), 0);
	ember_kernel_maps_event(&k, &ev, SEC);
	/* A name the kernel cut (EMBER_MMAP_NAME_LEN - 1 bytes) is marked. */
	ev = mmap_event(42, 1, 0x20000000, 6, DEEP, 8);
	memset(ev.name[0], 'n', EMBER_MMAP_NAME_LEN - 1);
	ember_kernel_maps_event(&k, &ev, SEC);
	ck_assert_int_eq(ember_kernel_maps_get(&k, 42, &m), 0);
	ck_assert_uint_eq(m.count, 2); /* no line of the name's own */
	ck_assert_str_eq(ember_maps_path(&m, &m.entries[0]), "/d/a?7f-80 r-xp 0 00:00 1 /etc/x");
	ck_assert_str_eq(ember_maps_path(&m, &m.entries[1]),
	                 "/~/2/3/4/5/6/7/8/nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn~");
	ember_maps_free(&m);
	ember_kernel_maps_free(&k);
}
END_TEST

START_TEST(one_program_at_a_time_kept_after_its_exit)
{
	struct ember_proc_event ev = mmap_event(42, 1, 0x10000000, 5, TOOL, 2);
	struct ember_kernel_maps k;
	struct ember_maps m;

	ck_assert_int_eq(ember_kernel_maps_init(&k), 0);
	ember_kernel_maps_event(&k, &ev, SEC);
	/* Its next program (or a new process given the PID) starts afresh. */
	ev = mmap_event(42, 2, 0x30000000, 9, LIBC, 4);
	ember_kernel_maps_event(&k, &ev, SEC);
	ck_assert_int_eq(ember_kernel_maps_get(&k, 42, &m), 0);
	ck_assert_uint_eq(m.count, 1);
	ck_assert_uint_eq(m.entries[0].inode, 9);
	ember_maps_free(&m);
	/* The vDSO alone tells too little to stand for its maps. */
	ev = exec_event(43, 1);
	ember_kernel_maps_event(&k, &ev, SEC);
	ck_assert_int_eq(ember_kernel_maps_get(&k, 43, &m), -ENOENT);
	/* Kept EMBER_KMAPS_KEEP_NS after the exit was read, then gone. */
	ember_kernel_maps_exited(&k, 42, 2 * SEC);
	ev = exec_event(44, 1);
	ember_kernel_maps_event(&k, &ev, 2 * SEC + EMBER_KMAPS_KEEP_NS - 1);
	ck_assert_int_eq(ember_kernel_maps_get(&k, 42, &m), 0);
	ember_maps_free(&m);
	ember_kernel_maps_event(&k, &ev, 2 * SEC + EMBER_KMAPS_KEEP_NS);
	ck_assert_int_eq(ember_kernel_maps_get(&k, 42, &m), -ENOENT);
	ember_kernel_maps_free(&k);
}
END_TEST

/* A process gone: what the kernel reported, where the broker has nothing; one alive: its maps. */
START_TEST(served_for_a_process_that_is_gone)
{
	struct ember_proc_event ev = mmap_event(42, 1, 0x10000000, 5, TOOL, 2);
	struct fake_broker fb = {0};
	struct ember_kernel_maps k;
	struct ember_maps m;

	ck_assert_int_eq(ember_kernel_maps_init(&k), 0);
	ember_kernel_maps_event(&k, &ev, SEC);
	fake_broker_start(&fb);
	fb.maps_error = -ESRCH;
	ck_assert_int_eq(ember_process_fetch_maps(&fb.client, &k, 42, &m), 0);
	ck_assert_uint_eq(m.count, 1);
	ck_assert_str_eq(ember_maps_path(&m, &m.entries[0]), "/bin/tool");
	ember_maps_free(&m);
	ck_assert_int_eq(ember_process_fetch_maps(&fb.client, &k, 43, &m), -ESRCH);
	ck_assert_int_eq(ember_process_fetch_maps(&fb.client, NULL, 42, &m), -ESRCH);
	fb.maps_error = 0;
	fb.maps_text = "400000-401000 r-xp 00000000 08:01 77 /usr/bin/alive\n";
	ck_assert_int_eq(ember_process_fetch_maps(&fb.client, &k, 42, &m), 0);
	ck_assert_uint_eq(m.count, 1);
	ck_assert_uint_eq(m.entries[0].inode, 77);
	ember_maps_free(&m);
	ck_assert_uint_eq(k.served, 1);
	fake_broker_stop(&fb);
	ember_kernel_maps_free(&k);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("kernel_maps");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, reported_mappings_read_as_maps);
	tcase_add_test(tc, names_from_the_process_stay_names);
	tcase_add_test(tc, one_program_at_a_time_kept_after_its_exit);
	tcase_add_test(tc, served_for_a_process_that_is_gone);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
