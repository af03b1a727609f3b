// SPDX-License-Identifier: Apache-2.0
/*
 * process_table.c: maps read through the broker (and when again), only
 * executable mappings kept, maps handed over by the unwind loader, the
 * process records (exec, exit), the facts for OTLP resources, and every
 * way an entry ends (exit record, idleness, the budget, a full table), with
 * the memory it held given back.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "fake_broker.h"
#include "symbolizer/memory/mem_owners.h"
#include "symbolizer/process/process_table.h"
#include "symbolizer/profile/profile.h"

#define SEC 1000000000ull

/* Three mappings of /bin/prog (one executable), the heap, libc's code and data, the vDSO. */
static const char MAPS[] = "00400000-00401000 r--p 00000000 08:01 100 /bin/prog\n"
			   "00401000-00402000 r-xp 00001000 08:01 100 /bin/prog\n"
			   "00402000-00403000 rw-p 00002000 08:01 100 /bin/prog\n"
			   "00600000-00700000 rw-p 00000000 00:00 0 [heap]\n"
			   "7f0000000000-7f0000100000 r-xp 00000000 08:01 200 /lib/libc.so.6\n"
			   "7f0000100000-7f0000110000 rw-p 00100000 08:01 200 /lib/libc.so.6\n"
			   "7fff00000000-7fff00002000 r-xp 00000000 00:00 0 [vdso]\n";

/* After a dlopen: one more executable mapping. */
static const char MAPS_DLOPEN[] =
    "00401000-00402000 r-xp 00001000 08:01 100 /bin/prog\n"
    "7e0000000000-7e0000010000 r-xp 00000000 08:01 300 /lib/libplugin.so\n"
    "7f0000000000-7f0000100000 r-xp 00000000 08:01 200 /lib/libc.so.6\n";

static struct fake_broker fb;
static struct ember_processes t;

static void setup(void)
{
	fake_broker_start(&fb);
	fb.maps_text = MAPS;
	ck_assert_int_eq(ember_processes_init(&t, &fb.client), 0);
}

static void teardown(void)
{
	ember_processes_free(&t);
	fake_broker_stop(&fb);
}

START_TEST(maps_are_read_once_and_only_executable_ones_kept)
{
	struct ember_process *p = ember_processes_get(&t, 42, SEC);
	const struct ember_map_entry *e;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_eq(ember_processes_find(&t, 42), p);
	ck_assert_ptr_null(ember_processes_find(&t, 43));
	e = ember_process_find_mapping(&t, p, 0x401234, SEC);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(ember_process_mapping_path(p, e), "/bin/prog");
	ck_assert_uint_eq(e->offset, 0x1000);
	e = ember_process_find_mapping(&t, p, 0x7f0000000010, SEC);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(ember_process_mapping_path(p, e), "/lib/libc.so.6");
	ck_assert_ptr_nonnull(ember_process_find_mapping(&t, p, 0x7fff00000100, SEC));
	/* Data, heap and read-only mappings are not kept: no frame is in them. */
	ck_assert_uint_eq(p->maps.count, 3);
	ck_assert_uint_eq(p->maps.paths.len,
	                  strlen("/bin/prog") + strlen("/lib/libc.so.6") + strlen("[vdso]") + 3);
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 1);
}
END_TEST

START_TEST(an_address_outside_every_mapping_reloads_at_most_every_200ms)
{
	struct ember_process *p = ember_processes_get(&t, 42, SEC);

	ck_assert_ptr_nonnull(ember_process_find_mapping(&t, p, 0x401000, SEC));
	fb.maps_text = MAPS_DLOPEN;
	/* Too soon: the same maps, no request. */
	ck_assert_ptr_null(ember_process_find_mapping(&t, p, 0x7e0000000100, SEC + 1000));
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 1);
	/* Later: read again, and the new library is there. */
	ck_assert_ptr_nonnull(
	    ember_process_find_mapping(&t, p, 0x7e0000000100, SEC + EMBER_MAPS_RELOAD_MIN_NS));
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 2);
}
END_TEST

START_TEST(an_address_seen_after_the_maps_were_read_reloads_them_sooner)
{
	struct ember_process *p = ember_processes_get(&t, 42, SEC);
	uint64_t later = SEC + EMBER_MAPS_RELOAD_SEEN_NS;

	ck_assert_ptr_nonnull(ember_process_find_mapping(&t, p, 0x401000, SEC));
	fb.maps_text = MAPS_DLOPEN;
	/* Seen before the read (a wrong frame, or a library gone since): not read again. */
	ck_assert_ptr_null(ember_process_find_mapping_at(&t, p, 0x7e0000000100, SEC - 1, later));
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 1);
	/* Seen after it, but read a moment ago: not yet. */
	ck_assert_ptr_null(ember_process_find_mapping_at(&t, p, 0x7e0000000100, SEC + 1, SEC + 1));
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 1);
	/* Seen after the read (the loader mapped it since): read again. */
	ck_assert_ptr_nonnull(ember_process_find_mapping_at(&t, p, 0x7e0000000100, SEC + 1, later));
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 2);
	/* An address in no mapping however often it is read (a wrong frame): read again after
	 * 10, 20, 40, 80, 160 ms, then every 160 ms. */
	for (uint64_t gap = EMBER_MAPS_RELOAD_SEEN_NS, n = 2; gap <= EMBER_MAPS_RELOAD_MIN_NS;
	     gap *= 2) {
		later += gap - 1;
		ck_assert_ptr_null(ember_process_find_mapping_at(&t, p, 0x9000, later, later));
		ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), n);
		later += 1;
		ck_assert_ptr_null(ember_process_find_mapping_at(&t, p, 0x9000, later, later));
		ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), ++n);
	}
}
END_TEST

START_TEST(exec_makes_the_maps_name_and_facts_stale)
{
	struct ember_process *p = ember_processes_get(&t, 42, SEC);
	const char *exe, *container;

	/* As samples carry it: the kernel's 16-byte comm. */
	ember_process_learn_comm(p, (char[16]){"worker"}, false);
	ember_process_learn_comm(p, (char[16]){"main"}, true);
	ember_process_learn_comm(p, (char[16]){"other"}, false);
	ck_assert_str_eq(p->comm, "main");
	ck_assert_ptr_nonnull(ember_process_find_mapping(&t, p, 0x401000, SEC));
	ck_assert(ember_process_facts(&t, p, SEC, &exe, &container));
	ember_processes_on_exec(&t, 42, SEC + 1);
	ck_assert_str_eq(p->comm, "");
	fb.maps_text = MAPS_DLOPEN;
	/* Reloaded at once after exec, whatever the rate limit. */
	ck_assert_ptr_nonnull(ember_process_find_mapping(&t, p, 0x7e0000000100, SEC + 1));
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 2);
	ck_assert(ember_process_facts(&t, p, SEC + 2, &exe, &container));
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_PROC_FILE), 4);
	ember_processes_on_exec(&t, 4242, SEC); /* unknown: nothing happens */
	ck_assert_uint_eq(ember_processes_count(&t), 1);
}
END_TEST

/* A program exec'd while ember watched is looked at for a context 1 s after its first ask,
 * then 2, 4 s... apart; one already running at the start first after 64 s. */
START_TEST(context_looks_come_sooner_for_a_program_exec_d_while_watched)
{
	struct ember_process *running = ember_processes_get(&t, 42, SEC), *fresh, *again;

	ember_processes_on_exec(&t, 43, SEC); /* before its first sample: no entry yet */
	fresh = ember_processes_get(&t, 43, SEC);
	ck_assert(!ember_process_context_look_due(running, SEC)); /* each is planned */
	ck_assert(!ember_process_context_look_due(fresh, SEC));
	ck_assert(!ember_process_context_look_due(fresh, 2 * SEC - 1));
	ck_assert(ember_process_context_look_due(fresh, 2 * SEC));
	ck_assert(!ember_process_context_look_due(fresh, 3 * SEC));
	ck_assert(ember_process_context_look_due(fresh, 4 * SEC));
	ck_assert(!ember_process_context_look_due(running, 64 * SEC));
	ck_assert(ember_process_context_look_due(running, 65 * SEC));
	ck_assert(!ember_process_context_look_due(running, 192 * SEC));
	ck_assert(ember_process_context_look_due(running, 193 * SEC));
	/* A running process that execs is a new program: looked at soon again. */
	ember_processes_on_exec(&t, 42, 200 * SEC);
	ck_assert(!ember_process_context_look_due(running, 200 * SEC));
	ck_assert(ember_process_context_look_due(running, 201 * SEC));
	/* Another pid sharing the exec's slot is not taken for it. */
	again = ember_processes_get(&t, 43 + EMBER_RECENT_EXECS, SEC);
	ck_assert(!ember_process_context_look_due(again, SEC));
	ck_assert(!ember_process_context_look_due(again, 2 * SEC));
}
END_TEST

START_TEST(maps_read_before_an_exec_are_forgotten_those_after_kept)
{
	struct ember_process *p = ember_processes_get(&t, 42, SEC);

	ck_assert_ptr_nonnull(ember_process_find_mapping(&t, p, 0x401000, SEC));
	/* An exec after the read: a failed reload must not name the old program. */
	ember_processes_on_exec(&t, 42, SEC + 1);
	ck_assert_uint_eq(t.maps_bytes, 0);
	fb.maps_error = -ESRCH;
	ck_assert_ptr_null(ember_process_find_mapping(&t, p, 0x401000, 2 * SEC));
	ck_assert_int_eq(p->maps_error, -ESRCH);
	/* A gone process is not asked again. */
	ember_processes_on_exit(&t, 42, 2 * SEC);
	ck_assert_ptr_null(ember_process_find_mapping(&t, p, 0x9000, 3 * SEC));
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 2);
	/* Maps read after the exec (the unwind loader runs ahead) are the new program's. */
	p = ember_processes_get(&t, 43, 4 * SEC);
	fb.maps_error = 0;
	ck_assert_ptr_nonnull(ember_process_find_mapping(&t, p, 0x401000, 4 * SEC));
	ember_processes_on_exec(&t, 43, 4 * SEC - 1);
	ck_assert(p->maps_loaded);
	ck_assert_ptr_nonnull(ember_process_find_mapping(&t, p, 0x401000, 4 * SEC));
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 3);
}
END_TEST

START_TEST(adopted_maps_are_used_without_asking)
{
	struct ember_maps m;
	struct ember_process *p;

	ck_assert_int_eq(ember_maps_parse(MAPS, strlen(MAPS), &m), 0);
	ember_processes_adopt_maps(&t, 77, &m, SEC);
	/* Taken over: the caller's are empty, the table's hold the executable ones. */
	ck_assert_uint_eq(m.count, 0);
	ck_assert_ptr_null(m.entries);
	p = ember_processes_find(&t, 77);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->maps.count, 3);
	ck_assert_ptr_nonnull(ember_process_find_mapping(&t, p, 0x401000, SEC + 1));
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 0);
	/* Empty maps are no news. */
	memset(&m, 0, sizeof(m));
	ember_processes_adopt_maps(&t, 78, &m, SEC);
	ck_assert_ptr_null(ember_processes_find(&t, 78));
}
END_TEST

START_TEST(facts_name_the_executable_and_the_container)
{
	static const char cgroup[] =
	    "0::/system.slice/docker-"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	    ".scope\n";
	struct ember_process *p = ember_processes_get(&t, 42, SEC);
	const char *exe = NULL, *container = NULL;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	/* The executable's path as the process's own maps show it: here, the test's. */
	fb.maps_text = NULL;
	fb.cgroup_text = cgroup;
	ck_assert(ember_process_facts(&t, p, SEC, &exe, &container));
	ck_assert_ptr_nonnull(exe);
	ck_assert_str_eq(exe, self);
	ck_assert_str_eq(container,
	                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	/* Asked once per program. */
	ck_assert(ember_process_facts(&t, p, SEC + 1, &exe, &container));
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_PROC_FILE), 2);
}
END_TEST

START_TEST(a_busy_broker_has_the_facts_asked_again_later)
{
	struct ember_process *p = ember_processes_get(&t, 42, SEC);
	const char *exe, *container;

	atomic_store(&fb.proc_file_busy, 2);
	ck_assert(!ember_process_facts(&t, p, SEC, &exe, &container));
	/* Not before the retry time. */
	ck_assert(!ember_process_facts(&t, p, SEC + 1, &exe, &container));
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_PROC_FILE), 2);
	ck_assert(ember_process_facts(&t, p, SEC + EMBER_PROCESS_FACTS_RETRY_NS, &exe, &container));
	ck_assert_str_eq(container, "");
}
END_TEST

/* What the "processes" owner holds (0 when the allocator does not count). */
static size_t held(void)
{
	return ember_mem_owner_bytes(EMBER_MEM_PROCESSES);
}

START_TEST(state_is_gone_after_the_exit_record)
{
	uint64_t now = 10 * SEC;
	struct ember_process *p;
	size_t before, with;

	/* The table's own arrays grow to their high-water mark on first use. */
	p = ember_processes_get(&t, 1, now);
	ember_process_find_mapping(&t, p, 0x401000, now);
	ember_processes_on_exit(&t, 1, now);
	ember_processes_sweep(&t, now + EMBER_PROCESS_EXIT_GRACE_NS);
	ck_assert_uint_eq(ember_processes_count(&t), 0);
	now += EMBER_PROCESS_EXIT_GRACE_NS + SEC;
	before = held();

	p = ember_processes_get(&t, 42, now);
	ck_assert_ptr_nonnull(ember_process_find_mapping(&t, p, 0x401000, now));
	with = held();
	ck_assert(!ember_mem_counting() || with > before);
	ember_processes_on_exit(&t, 42, now);
	/* Within the grace a late sample still finds it. */
	ember_processes_sweep(&t, now + EMBER_PROCESS_EXIT_GRACE_NS - EMBER_PROCESSES_SWEEP_NS);
	ck_assert_ptr_eq(ember_processes_get(&t, 42, now + 1), p);
	ember_processes_sweep(&t, now + EMBER_PROCESS_EXIT_GRACE_NS);
	ck_assert_ptr_null(ember_processes_find(&t, 42));
	ck_assert_uint_eq(ember_processes_count(&t), 0);
	ck_assert_uint_eq(t.maps_bytes, 0);
	/* Every byte it held is given back (measured when the allocator counts). */
	ck_assert_uint_eq(held(), before);
}
END_TEST

START_TEST(an_idle_process_goes_a_sampled_one_stays)
{
	uint64_t now = 10 * SEC;

	ember_processes_get(&t, 1, now);
	ember_processes_get(&t, 2, now);
	ember_processes_get(&t, 2, now + EMBER_PROCESS_IDLE_NS - SEC);
	ember_processes_sweep(&t, now + EMBER_PROCESS_IDLE_NS);
	ck_assert_ptr_null(ember_processes_find(&t, 1));
	ck_assert_ptr_nonnull(ember_processes_find(&t, 2));
	/* Sweeps are at most once a second. */
	ember_processes_sweep(&t, now + 2 * EMBER_PROCESS_IDLE_NS - SEC);
	ck_assert_ptr_null(ember_processes_find(&t, 2));
	ember_processes_get(&t, 3, now + 2 * EMBER_PROCESS_IDLE_NS);
	ember_processes_sweep(&t, now + 3 * EMBER_PROCESS_IDLE_NS - EMBER_PROCESSES_SWEEP_NS / 2);
	ck_assert_ptr_nonnull(ember_processes_find(&t, 3));
	/* Idle now, but the last sweep was half a second ago. */
	ember_processes_sweep(&t, now + 3 * EMBER_PROCESS_IDLE_NS);
	ck_assert_ptr_nonnull(ember_processes_find(&t, 3));
	ember_processes_sweep(&t, now + 3 * EMBER_PROCESS_IDLE_NS + EMBER_PROCESSES_SWEEP_NS / 2);
	ck_assert_ptr_null(ember_processes_find(&t, 3));
}
END_TEST

START_TEST(shrinking_frees_the_idlest_first_never_the_busy)
{
	uint64_t now = 100 * SEC;
	size_t freed;

	for (uint32_t pid = 1; pid <= 10; pid++) {
		struct ember_process *p = ember_processes_get(&t, pid, now + pid * SEC);

		ember_process_find_mapping(&t, p, 0x401000, now + pid * SEC);
	}
	freed = ember_processes_shrink(&t, 1, now + 10 * SEC);
	ck_assert_uint_gt(freed, 0);
	ck_assert_ptr_null(ember_processes_find(&t, 1));
	ck_assert_ptr_nonnull(ember_processes_find(&t, 2));
	/* However much is asked, those sampled in the last second stay. */
	ember_processes_shrink(&t, SIZE_MAX, now + 10 * SEC);
	ck_assert_uint_eq(ember_processes_count(&t), 2);
	ck_assert_ptr_nonnull(ember_processes_find(&t, 9));
	ck_assert_ptr_nonnull(ember_processes_find(&t, 10));
}
END_TEST

START_TEST(a_full_table_makes_room_with_the_idlest)
{
	for (uint32_t pid = 1; pid <= EMBER_PROCESSES_MAX; pid++)
		ck_assert_ptr_nonnull(ember_processes_get(&t, pid, pid == 7 ? 1 : SEC + pid));
	ck_assert_uint_eq(ember_processes_count(&t), EMBER_PROCESSES_MAX);
	ck_assert_ptr_nonnull(ember_processes_get(&t, 999999, 2 * SEC + EMBER_PROCESSES_MAX));
	ck_assert_uint_eq(ember_processes_count(&t), EMBER_PROCESSES_MAX);
	ck_assert_ptr_null(ember_processes_find(&t, 7));
	ck_assert_ptr_nonnull(ember_processes_find(&t, 8));
	ck_assert_uint_eq(t.evicted, 1);
}
END_TEST

START_TEST(statistics_go_into_the_profile_given)
{
	struct ember_profile p;
	struct ember_process *proc = ember_processes_get(&t, 42, SEC);

	ember_process_find_mapping(&t, proc, 0x401000, SEC);
	ember_processes_on_exit(&t, 42, SEC);
	ember_processes_sweep(&t, 5 * SEC);
	ck_assert_int_eq(ember_profile_init(&p), 0);
	ember_processes_report_stats(&t, &EMBER_PROFILE_STAT_SINK(&p), true);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "processes.live"), 0);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "processes.freed_after_exit"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "maps.loads"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&p, "process_facts.requests"), 0);
	ember_profile_free(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("process_table");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, maps_are_read_once_and_only_executable_ones_kept);
	tcase_add_test(tc, an_address_outside_every_mapping_reloads_at_most_every_200ms);
	tcase_add_test(tc, an_address_seen_after_the_maps_were_read_reloads_them_sooner);
	tcase_add_test(tc, exec_makes_the_maps_name_and_facts_stale);
	tcase_add_test(tc, context_looks_come_sooner_for_a_program_exec_d_while_watched);
	tcase_add_test(tc, maps_read_before_an_exec_are_forgotten_those_after_kept);
	tcase_add_test(tc, adopted_maps_are_used_without_asking);
	tcase_add_test(tc, facts_name_the_executable_and_the_container);
	tcase_add_test(tc, a_busy_broker_has_the_facts_asked_again_later);
	tcase_add_test(tc, state_is_gone_after_the_exit_record);
	tcase_add_test(tc, an_idle_process_goes_a_sampled_one_stays);
	tcase_add_test(tc, shrinking_frees_the_idlest_first_never_the_busy);
	tcase_add_test(tc, a_full_table_makes_room_with_the_idlest);
	tcase_add_test(tc, statistics_go_into_the_profile_given);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
