// SPDX-License-Identifier: Apache-2.0
/*
 * symbolize.c: a sample record becomes a stack of named frames (kernel
 * through kallsyms, user through the process's maps and the mapped file,
 * both served by a fake broker from this test process itself); unknown
 * addresses and stopped unwinds stay visible and counted; each module's
 * statistics go into the profile they are given; a process's state is gone
 * after its exit record and an interval's after it is written; over its
 * memory budget the symbolizer sheds new files, counted.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check_main.h"
#include "fake_broker.h"
#include "symbolizer/formats/profile_writer.h"
#include "symbolizer/memory/mem_owners.h"
#include "symbolizer/symbolize.h"
#include "symbolizer/unwind/unwind_tables.h"

#define SEC 1000000000ull
#define PID 4242
#define KTEXT                                                                                      \
	"ffffffff81000000 T _stext\n"                                                              \
	"ffffffff81000300 T do_syscall_64\n"                                                       \
	"ffffffff81000400 T after_syscall\n"                                                       \
	"ffffffffc0a01000 t xfs_iread\t[xfs]\n"                                                    \
	"ffffffffc0a02000 t xfs_end\t[xfs]\n"

static struct fake_broker fb;
static struct ember_profile prof;
static struct ember_symbolizer sym;

/* A function of this program for the user frames to land in. */
__attribute__((noinline)) int symbolize_test_target(int x)
{
	return x * 3 + 1;
}

static void start(size_t budget)
{
	struct ember_symbolizer_opts o = {
	    .profile = &prof, .broker = &fb.client, .memory_budget = budget};

	fake_broker_start(&fb);
	fb.kallsyms_text = KTEXT;
	ck_assert_int_eq(ember_profile_init(&prof), 0);
	ck_assert_int_eq(ember_symbolizer_init(&sym, &o), 0);
}

static void setup(void)
{
	start(1ull << 40); /* a budget no test reaches */
}

static void teardown(void)
{
	ember_symbolizer_free(&sym);
	ember_profile_free(&prof);
	fake_broker_stop(&fb);
}

/* A sample of pid with the given kernel and user frames (leaf first). */
static int add(uint32_t pid, const uint64_t *k, uint16_t nk, const uint64_t *u, uint16_t nu,
               uint32_t flags, uint64_t now)
{
	struct ember_sample_event ev = {.kind = EMBER_EV_SAMPLE,
	                                .tgid = pid,
	                                .tid = pid,
	                                .cpu = 1,
	                                .time_ns = now,
	                                .kstack_len = nk,
	                                .ustack_len = nu,
	                                .stack_flags = flags};
	uint64_t frames[8];

	ck_assert_uint_le(nk + nu, 8);
	memcpy(ev.comm, "test-comm", 10);
	if (nk)
		memcpy(frames, k, nk * sizeof(*k));
	if (nu)
		memcpy(frames + nk, u, nu * sizeof(*u));
	return ember_symbolizer_add_sample(&sym, &ev, frames, now);
}

struct names {
	char text[2048]; /* "outermost;...;leaf" */
};

static int append(void *ctx, const char *name, enum ember_frame_kind kind)
{
	struct names *n = ctx;

	(void)kind;
	if (n->text[0])
		strncat(n->text, ";", sizeof(n->text) - strlen(n->text) - 1);
	strncat(n->text, name, sizeof(n->text) - strlen(n->text) - 1);
	return 0;
}

/* The frames of the profile's sample i, outermost first. */
static const char *frames_of(uint32_t i)
{
	static struct names n;

	memset(&n, 0, sizeof(n));
	ck_assert_uint_lt(i, prof.samples.len);
	ck_assert_int_eq(
	    ember_profile_walk_stack(&prof, ember_profile_sample(&prof, i)->key.stack, append, &n),
	    0);
	return n.text;
}

static uint64_t target(void)
{
	return (uint64_t)(uintptr_t)&symbolize_test_target + 2;
}

START_TEST(kernel_and_user_frames_are_named)
{
	uint64_t k[] = {0xffffffff81000310, 0xffffffffc0a01010}, u[] = {target()};

	ck_assert_int_eq(add(PID, k, 2, u, 1, 0, SEC), 0);
	ck_assert_str_eq(frames_of(0), "symbolize_test_target;xfs_iread [xfs];do_syscall_64");
	ck_assert_str_eq(ember_profile_str(&prof, ember_profile_sample(&prof, 0)->key.comm),
	                 "test-comm");
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_KALLSYMS), 1);
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 1);
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPPED_FILE), 1);
	/* The same frames again: everything is cached. */
	ck_assert_int_eq(add(PID, k, 2, u, 1, 0, SEC + 1), 0);
	ck_assert_uint_eq(prof.total_count, 2);
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 1);
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPPED_FILE), 1);
	/* After a minute, a new address between two of the kernel image's symbols is named
	 * from what was read: they never change. */
	k[0] = 0xffffffff81000320;
	ck_assert_int_eq(add(PID, k, 1, u, 0, 0, SEC + EMBER_KALLSYMS_RELOAD_NS + 1), 0);
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_KALLSYMS), 1);
	/* One in a module, or past the image's last symbol, has them read again: modules and
	 * BPF programs come and go. */
	k[0] = 0xffffffffc0a01020;
	ck_assert_int_eq(add(PID, k, 1, u, 0, 0, SEC + EMBER_KALLSYMS_RELOAD_NS + 2), 0);
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_KALLSYMS), 2);
	k[0] = 0xffffffff81000410;
	ck_assert_int_eq(add(PID, k, 1, u, 0, 0, SEC + 2 * EMBER_KALLSYMS_RELOAD_NS + 3), 0);
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_KALLSYMS), 3);
}
END_TEST

/* A caller's frame is named from the byte before its return address: a sample that stopped
 * at that same address is another place, another location, whichever came first. */
START_TEST(a_return_address_and_a_stop_there_are_two_locations)
{
	uint64_t stop[] = {0xffffffff81000400}, call[] = {0xffffffff81000310, 0xffffffff81000400};
	uint64_t u[] = {target()};

	ck_assert_int_eq(add(PID, stop, 1, u, 0, 0, SEC), 0);
	ck_assert_int_eq(add(PID, call, 2, u, 0, 0, SEC), 0);
	ck_assert_int_eq(add(PID, stop, 1, u, 0, 0, SEC), 0);
	ck_assert_str_eq(frames_of(0), "after_syscall");
	ck_assert_str_eq(frames_of(1), "do_syscall_64;do_syscall_64");
	ck_assert_uint_eq(prof.samples.len, 2);
	ck_assert_uint_eq(prof.total_count, 3);
}
END_TEST

START_TEST(unknown_addresses_are_kept_and_counted)
{
	uint64_t k[] = {0xffffffff80000000}, u[] = {0x10};

	ck_assert_int_eq(add(PID, k, 1, u, 1, 0, SEC), 0);
	ck_assert_str_eq(frames_of(0), "[unknown];[kernel.kallsyms]+0xffffffff80000000");
	ember_symbolizer_report_stats(&sym, &prof);
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "symbolizer.frames_unknown_mapping"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "symbolizer.frames_unsymbolized"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "symbolizer.frames"), 2);
}
END_TEST

START_TEST(a_stopped_unwind_ends_in_its_marker)
{
	uint64_t u[] = {target()};

	ck_assert_int_eq(add(PID, NULL, 0, u, 1,
	                     (uint32_t)EMBER_UNWIND_STOP_NO_TABLE << EMBER_STACK_UNWIND_STOP_SHIFT,
	                     SEC),
	                 0);
	ck_assert_str_eq(frames_of(0), "[unwind stopped: table not loaded];symbolize_test_target");
}
END_TEST

static int append_kind(void *ctx, const char *name, enum ember_frame_kind kind)
{
	struct names *n = ctx;
	char one[128];

	snprintf(one, sizeof(one), "%s%s(%s)", n->text[0] ? ";" : "", name,
	         ember_frame_kind_name(kind));
	strncat(n->text, one, sizeof(n->text) - strlen(n->text) - 1);
	return 0;
}

/*
 * Interpreted frames and markers (bpf/interp.h) go to their runtime's reader: a frame it
 * cannot name (this process is not one it detected) stays a frame of its runtime's kind,
 * a marker is named and counted by it, under its statistics' names; without the registry
 * they keep their kind and place.
 */
START_TEST(interpreted_frames_go_to_their_runtime)
{
	const uint64_t py = EMBER_INTERP_TAG_FRAME(EMBER_RUNTIME_PYTHON) << EMBER_INTERP_TAG_SHIFT;
	const uint64_t mark = EMBER_INTERP_TAG_MARKER(EMBER_RUNTIME_PYTHON)
	                      << EMBER_INTERP_TAG_SHIFT;
	uint64_t u[] = {py | 0x7f0000001000, 5ull << 32 | 77, mark | EMBER_INTERP_MARK_TRUNCATED, 0,
	                target()};
	struct ember_interps interps;
	struct names n;

	ck_assert_int_eq(ember_interps_init(&interps, 1u << EMBER_RUNTIME_PYTHON, 0, &fb.client), 0);
	sym.interps = &interps;
	ck_assert_int_eq(add(PID, NULL, 0, u, 5, EMBER_STACK_INTERP, SEC), 0);
	memset(&n, 0, sizeof(n));
	ck_assert_int_eq(ember_profile_walk_stack(&prof, ember_profile_sample(&prof, 0)->key.stack,
	                                          append_kind, &n),
	                 0);
	ck_assert_str_eq(n.text, "symbolize_test_target(native);[python frames truncated](unknown);"
	                         "[unknown](cpython)");
	ember_symbolizer_report_stats(&sym, &prof);
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "python.frames"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "python.frames_unreadable"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "python.markers_truncated"), 1);
	sym.interps = NULL;
	ember_interps_free(&interps);
	/* No reader: the same kinds, the marker says the runtime's frames stopped. */
	u[2] = mark | EMBER_INTERP_MARK_UNREADABLE;
	ck_assert_int_eq(add(PID, NULL, 0, u, 5, EMBER_STACK_INTERP, 2 * SEC), 0);
	ck_assert_str_eq(frames_of(1), "symbolize_test_target;[python frames stopped];[unknown]");
	/* Without EMBER_STACK_INTERP the same words are addresses. */
	ck_assert_int_eq(add(PID, NULL, 0, u, 2, 0, 3 * SEC), 0);
	ck_assert_ptr_null(strstr(frames_of(2), "python"));
}
END_TEST

START_TEST(a_thread_context_links_its_sample)
{
	struct ember_sample_event ev = {.kind = EMBER_EV_SAMPLE,
	                                .tgid = PID,
	                                .tid = PID + 1,
	                                .cpu = 1,
	                                .time_ns = SEC,
	                                .ustack_len = 1,
	                                .stack_flags = EMBER_STACK_TRACE_CTX};
	uint64_t u[] = {target()};
	const struct ember_sample *s;

	for (int i = 0; i < 16; i++)
		ev.trace_id[i] = (uint8_t)(0xa0 + i);
	for (int i = 0; i < 8; i++)
		ev.span_id[i] = (uint8_t)(0x10 + i);
	ck_assert_int_eq(ember_symbolizer_add_sample(&sym, &ev, u, SEC), 0);
	/* Without the flag the ids are not read; a trace id of zeros is no trace: refused. */
	ev.stack_flags = 0;
	ck_assert_int_eq(ember_symbolizer_add_sample(&sym, &ev, u, SEC), 0);
	ev.stack_flags = EMBER_STACK_TRACE_CTX;
	memset(ev.trace_id, 0, sizeof(ev.trace_id));
	ck_assert_int_eq(ember_symbolizer_add_sample(&sym, &ev, u, SEC), 0);
	ck_assert_uint_eq(prof.samples.len, 2);
	s = ember_profile_sample(&prof, 0);
	ck_assert_str_eq(ember_profile_str(&prof, s->key.link),
	                 "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf1011121314151617");
	s = ember_profile_sample(&prof, 1);
	ck_assert_uint_eq(s->key.link, 0);
	ck_assert_uint_eq(s->count, 2);
	ck_assert_uint_eq(sym.samples_linked, 1);
	ck_assert_uint_eq(sym.links_refused, 1);
}
END_TEST

START_TEST(statistics_go_into_the_profile_given)
{
	struct ember_profile other;
	uint64_t u[] = {target()};

	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, SEC), 0);
	ck_assert_int_eq(ember_profile_init(&other), 0);
	ember_symbolizer_report_stats(&sym, &other);
	/* The symbolizer's and every module it owns, in the profile given; not in its own. */
	ck_assert_uint_eq(ember_profile_stat_get(&other, "symbolizer.frames"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&other, "objcache.misses"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&other, "maps.loads"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&other, "processes.live"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&other, "broker.requests"), 2);
	ck_assert_uint_gt(ember_profile_stat_get(&other, "memory.rss"), 0);
	ck_assert_uint_eq(ember_profile_stat_get(&other, "memory.budget"), 1ull << 40);
	if (ember_mem_counting())
		ck_assert_uint_gt(ember_profile_stat_get(&other, "memory.objcache"), 0);
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "symbolizer.frames"), 0);
	ember_profile_free(&other);
}
END_TEST

/* This process's maps, as a collector's snapshot would hand them over. */
static void own_maps(struct ember_maps *m)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	char *text = NULL;
	long len = ember_maps_read_fd(fd, &text);

	close(fd);
	ck_assert_int_eq(ember_maps_parse(text, (size_t)len, m), 0);
	free(text);
}

START_TEST(maps_handed_over_spare_a_request)
{
	struct ember_maps m;
	uint64_t u[] = {target()};

	own_maps(&m);
	ember_symbolizer_adopt_maps(&sym, PID, &m, SEC);
	ck_assert_uint_eq(m.count, 0);
	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, SEC), 0);
	ck_assert_str_eq(frames_of(0), "symbolize_test_target");
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 0);
}
END_TEST

START_TEST(a_process_is_gone_after_its_exit_record)
{
	uint64_t u[] = {target()};
	size_t before;

	/* A first process brings the tables to their size and the file into the cache. */
	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, SEC), 0);
	ember_symbolizer_on_exit(&sym, PID, SEC);
	ember_symbolizer_tick(&sym, SEC + EMBER_PROCESS_EXIT_GRACE_NS, 0);
	ck_assert_uint_eq(ember_processes_count(&sym.procs), 0);
	before = ember_mem_owner_bytes(EMBER_MEM_PROCESSES);

	ck_assert_int_eq(add(PID + 1, NULL, 0, u, 1, 0, 10 * SEC), 0);
	ck_assert_uint_eq(ember_processes_count(&sym.procs), 1);
	ck_assert(!ember_mem_counting() || ember_mem_owner_bytes(EMBER_MEM_PROCESSES) > before);
	ember_symbolizer_on_exit(&sym, PID + 1, 10 * SEC);
	/* Its samples may still follow the record for a moment. */
	ember_symbolizer_tick(&sym, 11 * SEC, 0);
	ck_assert_uint_eq(ember_processes_count(&sym.procs), 1);
	ember_symbolizer_tick(&sym, 10 * SEC + EMBER_PROCESS_EXIT_GRACE_NS, 0);
	ck_assert_uint_eq(ember_processes_count(&sym.procs), 0);
	/* Every byte of it is given back (measured when the allocator counts). */
	ck_assert_uint_eq(ember_mem_owner_bytes(EMBER_MEM_PROCESSES), before);
	/* Its frames stay in the profile: they were symbolized. */
	ck_assert_str_eq(frames_of(1), "symbolize_test_target");
}
END_TEST

START_TEST(an_interval_is_gone_after_it_is_written)
{
	char path[] = "/tmp/ember-test-symbolize-XXXXXX";
	struct ember_output out = {.format = EMBER_FORMAT_FOLDED};
	uint64_t k[] = {0xffffffff81000310}, u[] = {target()};
	size_t fresh;
	char buf[4096];
	ssize_t n;

	ember_profile_reset(&prof);
	ember_symbolizer_profile_was_reset(&sym);
	fresh = ember_mem_owner_bytes(EMBER_MEM_PROFILE);
	for (uint32_t i = 0; i < 50; i++)
		ck_assert_int_eq(add(PID + i, k, 1, u, 1, 0, SEC + i), 0);
	ck_assert(!ember_mem_counting() || ember_mem_owner_bytes(EMBER_MEM_PROFILE) > fresh);
	out.fd = mkstemp(path);
	ck_assert_int_ge(out.fd, 0);
	ck_assert_int_eq(ember_output_write(&out, &prof), 0);
	/* Written, then everything the interval held goes. */
	ck_assert_int_eq(ember_profile_reset(&prof), 0);
	ember_symbolizer_profile_was_reset(&sym);
	ember_symbolizer_release_memory(&sym);
	ck_assert_uint_eq(prof.samples.len, 0);
	ck_assert_uint_eq(prof.locations.len, 0);
	ck_assert_uint_eq(ember_mem_owner_bytes(EMBER_MEM_PROFILE), fresh);
	n = pread(out.fd, buf, sizeof(buf) - 1, 0);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_ptr_nonnull(strstr(buf, "test-comm;symbolize_test_target;do_syscall_64 50"));
	close(out.fd);
	unlink(path);
	/* The next interval names the kernel afresh (its mapping id was the old profile's). */
	ck_assert_int_eq(add(PID, k, 1, u, 0, 0, 2 * SEC), 0);
	ck_assert_str_eq(frames_of(0), "do_syscall_64");
	ck_assert_str_eq(ember_profile_str(&prof, ember_profile_mapping(&prof, 0)->filename),
	                 "[kernel.kallsyms]");
}
END_TEST

START_TEST(reading_files_keeps_an_eighth_of_the_budget_free)
{
	size_t rss = ember_mem_rss(&sym.budget), budget = rss + (32u << 20), room;

	/* A budget 32 MiB above the resident size: files may take what is left of it less an
	 * eighth, for the work no admission check covers. */
	sym.budget.limit = budget;
	ember_symbolizer_tick(&sym, 2 * SEC, 0);
	room = sym.objs.budget_room;
	ck_assert_uint_le(room, budget - budget / 8 - rss + (1u << 20));
	ck_assert_uint_ge(room + (1u << 20), budget - budget / 8 - ember_mem_rss(&sym.budget));
}
END_TEST

static void setup_tiny_budget(void)
{
	start(1); /* every byte is over it */
}

START_TEST(over_budget_new_files_are_shed_and_counted)
{
	uint64_t u[] = {target()};

	ember_symbolizer_tick(&sym, SEC, 0);
	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, SEC), 0);
	/* Not read: the frame keeps its file and offset, and is counted. */
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPPED_FILE), 0);
	ck_assert_ptr_nonnull(strstr(frames_of(0), "+0x"));
	ember_symbolizer_report_stats(&sym, &prof);
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "symbolizer.frames_shed"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "memory.budget_exceeded"), 1);
	ck_assert_uint_eq(ember_profile_stat_get(&prof, "memory.shed_periods"), 1);
	ck_assert_uint_le(ember_profile_stat_get(&prof, "objcache.limit"),
	                  EMBER_OBJCACHE_FLOOR_BYTES);
}
END_TEST

static uint64_t stat_now(const char *name)
{
	ember_symbolizer_report_stats(&sym, &prof);
	return ember_profile_stat_get(&prof, name);
}

/* A stack seen again is taken as named the first time; a frame seen in another stack too:
 * the same names, the same counts. */
START_TEST(a_repeated_stack_is_remembered)
{
	uint64_t k[] = {0xffffffff81000310, 0xffffffffc0a01010}, u[] = {target()};

	ck_assert_int_eq(add(PID, k, 2, u, 1, 0, SEC), 0);
	ck_assert_int_eq(add(PID, k, 2, u, 1, 0, SEC + 1), 0);
	ck_assert_uint_eq(stat_now("symbolizer.samples_stack_remembered"), 1);
	ck_assert_uint_eq(stat_now("symbolizer.frames"), 6);
	ck_assert_uint_eq(prof.samples.len, 1);
	ck_assert_uint_eq(prof.total_count, 2);
	ck_assert_uint_eq(ember_profile_sample(&prof, 0)->ntimestamps, 2);
	/* Another leaf under the same callers: the callers as remembered. */
	k[0] = 0xffffffff81000320;
	ck_assert_int_eq(add(PID, k, 2, u, 1, 0, SEC + 2), 0);
	ck_assert_uint_eq(stat_now("symbolizer.frames_remembered"), 2);
	ck_assert_uint_eq(stat_now("symbolizer.samples_stack_remembered"), 1);
	ck_assert_str_eq(frames_of(1), "symbolize_test_target;xfs_iread [xfs];do_syscall_64");
	ck_assert_uint_eq(prof.samples.len, 2);
	/* Of another process, the same addresses are named afresh (its maps may differ). */
	ck_assert_int_eq(add(PID + 1, k, 2, u, 1, 0, SEC + 3), 0);
	ck_assert_uint_eq(stat_now("symbolizer.samples_stack_remembered"), 1);
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 2);
}
END_TEST

/* A stack is remembered under its process's maps: read again (an exec), it is named again. */
START_TEST(new_maps_forget_remembered_stacks)
{
	uint64_t u[] = {target()};

	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, SEC), 0);
	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, SEC + 1), 0);
	ck_assert_uint_eq(stat_now("symbolizer.samples_stack_remembered"), 1);
	ember_symbolizer_on_exec(&sym, PID, 2 * SEC);
	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, 3 * SEC), 0);
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_MAPS), 2);
	ck_assert_uint_eq(stat_now("symbolizer.samples_stack_remembered"), 1);
	ck_assert_uint_eq(stat_now("symbolizer.frames_remembered"), 0);
	ck_assert_str_eq(frames_of(0), "symbolize_test_target");
	/* The new maps' stack is remembered in turn. */
	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, 3 * SEC + 1), 0);
	ck_assert_uint_eq(stat_now("symbolizer.samples_stack_remembered"), 2);
}
END_TEST

/* The same maps read again (a look for a process context): what was named stays remembered. */
START_TEST(the_same_maps_again_keep_remembered_stacks)
{
	struct ember_maps m;
	uint64_t u[] = {target()};

	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, SEC), 0);
	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, SEC + 1), 0);
	ck_assert_uint_eq(stat_now("symbolizer.samples_stack_remembered"), 1);
	own_maps(&m);
	ember_symbolizer_adopt_maps(&sym, PID, &m, 2 * SEC);
	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, 2 * SEC + 1), 0);
	ck_assert_uint_eq(stat_now("symbolizer.samples_stack_remembered"), 2);
	ck_assert_uint_eq(stat_now("maps.adopted"), 1);
}
END_TEST

/* A frame left unnamed for want of a mapping is looked for again each time, and counted. */
START_TEST(an_unknown_frame_is_not_remembered)
{
	uint64_t u[] = {0x10, target()};

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(add(PID, NULL, 0, u, 2, 0, SEC + (uint64_t)i), 0);
	ck_assert_uint_eq(stat_now("symbolizer.samples_stack_remembered"), 0);
	ck_assert_uint_eq(stat_now("symbolizer.frames_unknown_mapping"), 3);
	/* Its caller's frame, named, is. */
	ck_assert_uint_eq(stat_now("symbolizer.frames_remembered"), 2);
}
END_TEST

/* JIT code a perf map names only once written: its stack is named again until then. */
START_TEST(a_jit_frame_waits_for_its_perf_map)
{
	char path[] = "/tmp/ember-test-symbolize-XXXXXX";
	void *code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t u[] = {(uint64_t)(uintptr_t)code + 0x10};
	uint64_t now = SEC;
	FILE *f;
	int fd;

	ck_assert_ptr_ne(code, MAP_FAILED);
	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, now), 0);
	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, now + 1), 0);
	ck_assert_uint_eq(stat_now("symbolizer.samples_stack_remembered"), 0);
	ck_assert_ptr_null(strstr(frames_of(0), "jitted_fn"));
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fprintf(f, "%lx 100 jitted_fn\n", (unsigned long)(uintptr_t)code);
	fclose(f);
	fb.perf_map_path = path;
	for (int i = 0; i < 100 && !strstr(frames_of(0), "jitted_fn"); i++) {
		now += EMBER_PERF_MAPS_RETRY_NS;
		ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, now), 0);
	}
	ck_assert_str_eq(frames_of(0), "jitted_fn");
	/* Named for good (by the last sample): remembered. */
	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, now + 1), 0);
	ck_assert_int_eq(add(PID, NULL, 0, u, 1, 0, now + 2), 0);
	ck_assert_uint_eq(stat_now("symbolizer.samples_stack_remembered"), 2);
	unlink(path);
	munmap(code, 4096);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("symbolize");
	TCase *tc = tcase_create("core");
	TCase *budget = tcase_create("budget");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, kernel_and_user_frames_are_named);
	tcase_add_test(tc, a_return_address_and_a_stop_there_are_two_locations);
	tcase_add_test(tc, unknown_addresses_are_kept_and_counted);
	tcase_add_test(tc, a_stopped_unwind_ends_in_its_marker);
	tcase_add_test(tc, interpreted_frames_go_to_their_runtime);
	tcase_add_test(tc, statistics_go_into_the_profile_given);
	tcase_add_test(tc, a_thread_context_links_its_sample);
	tcase_add_test(tc, maps_handed_over_spare_a_request);
	tcase_add_test(tc, a_process_is_gone_after_its_exit_record);
	tcase_add_test(tc, an_interval_is_gone_after_it_is_written);
	tcase_add_test(tc, a_repeated_stack_is_remembered);
	tcase_add_test(tc, new_maps_forget_remembered_stacks);
	tcase_add_test(tc, an_unknown_frame_is_not_remembered);
	tcase_add_test(tc, the_same_maps_again_keep_remembered_stacks);
	tcase_add_test(tc, a_jit_frame_waits_for_its_perf_map);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(budget, setup_tiny_budget, teardown);
	tcase_add_test(tc, reading_files_keeps_an_eighth_of_the_budget_free);
	tcase_add_test(budget, over_budget_new_files_are_shed_and_counted);
	suite_add_tcase(s, budget);
	return s;
}

EMBER_CHECK_MAIN(suite)
