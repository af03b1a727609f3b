// SPDX-License-Identifier: Apache-2.0
/*
 * Perf maps (symbolizer/symbols/perfmap.c): the lines JITs write, as they
 * write them (Node's --perf-basic-prof without 0x, HotSpot's jcmd
 * Compiler.perfmap with it and zero-padded, CPython's -X perf), read in
 * pieces cut anywhere; code reused under a new name; lines that are not a
 * perf map's, too long, or past the ceilings. Then each process's map
 * (symbolizer/process/perf_maps.c) through a broker: read as it grows, a
 * map written again, a process without one asked about less and less often,
 * the map dropped at exec.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "fake_broker.h"
#include "symbolizer/process/perf_maps.h"
#include "symbolizer/symbols/perfmap.h"

static const char text[] =
    "3ef414c0 398 LazyCompile:*leafA /app/split.js:10\n"                 /* Node */
    "0x00007f0f5400a400 0x0000000000000120 java.lang.String::hashCode\n" /* HotSpot */
    "7f3ec3c0b000 b py::leaf_b:/tmp/split.py\n"                          /* CPython */
    "7F3EC3C0C000 10 UPPER_CASE_HEX\r\n";

static void check_text_map(struct ember_perfmap *m)
{
	ck_assert_uint_eq(m->entries, 4);
	ck_assert_uint_eq(m->lines_bad, 0);
	ck_assert_str_eq(ember_perfmap_lookup(m, 0x3ef414c0),
	                 "LazyCompile:*leafA /app/split.js:10");
	ck_assert_str_eq(ember_perfmap_lookup(m, 0x3ef414c0 + 0x397),
	                 "LazyCompile:*leafA /app/split.js:10");
	ck_assert_ptr_null(ember_perfmap_lookup(m, 0x3ef414c0 + 0x398)); /* the end is not in */
	ck_assert_ptr_null(ember_perfmap_lookup(m, 0x3ef414bf));
	ck_assert_str_eq(ember_perfmap_lookup(m, 0x7f0f5400a450), "java.lang.String::hashCode");
	ck_assert_str_eq(ember_perfmap_lookup(m, 0x7f3ec3c0b00a), "py::leaf_b:/tmp/split.py");
	ck_assert_ptr_null(ember_perfmap_lookup(m, 0x7f3ec3c0b00b));
	ck_assert_str_eq(ember_perfmap_lookup(m, 0x7f3ec3c0c001), "UPPER_CASE_HEX");
}

START_TEST(lines_as_jits_write_them)
{
	struct ember_perfmap m;

	ember_perfmap_init(&m);
	ck_assert_uint_eq(ember_perfmap_feed(&m, text, strlen(text)), strlen(text));
	ck_assert_uint_eq(m.bytes, strlen(text));
	check_text_map(&m);
	ember_perfmap_free(&m);
}
END_TEST

/* Fed in pieces of every size from 1 byte, as a growing file is read: the same map, and a
 * line's start without its end is left for the next piece. */
START_TEST(pieces_cut_anywhere)
{
	size_t len = strlen(text);

	for (size_t piece = 1; piece <= len; piece++) {
		struct ember_perfmap m;
		size_t at = 0, have = 0; /* text[at, at + have) is unconsumed */

		ember_perfmap_init(&m);
		while (at + have < len) {
			size_t add = len - at - have < piece ? len - at - have : piece, used;

			have += add;
			used = ember_perfmap_feed(&m, text + at, have);
			ck_assert_uint_le(used, have);
			/* Whatever is left holds no newline: only a line not yet ended. */
			ck_assert_ptr_null(memchr(text + at + used, '\n', have - used));
			at += used;
			have -= used;
		}
		ck_assert_uint_eq(at, len);
		check_text_map(&m);
		ember_perfmap_free(&m);
	}
}
END_TEST

START_TEST(reused_code_takes_the_newest_name)
{
	static const char reuse[] = "1000 100 old\n"
				    "2000 100 other\n"
				    "1000 100 new\n"
				    "1080 100 shifted\n";
	struct ember_perfmap m;

	ember_perfmap_init(&m);
	ember_perfmap_feed(&m, reuse, strlen(reuse));
	ck_assert_str_eq(ember_perfmap_lookup(&m, 0x1010), "new");
	ck_assert_str_eq(ember_perfmap_lookup(&m, 0x1090), "shifted");
	ck_assert_str_eq(ember_perfmap_lookup(&m, 0x1100), "shifted");
	ck_assert_str_eq(ember_perfmap_lookup(&m, 0x2000), "other");
	/* Lines added after a lookup sorted the map: found too. */
	ember_perfmap_feed(&m, "2000 10 newer\n", 14);
	ck_assert_str_eq(ember_perfmap_lookup(&m, 0x2000), "newer");
	ck_assert_str_eq(ember_perfmap_lookup(&m, 0x2010), "other");
	ember_perfmap_free(&m);
}
END_TEST

START_TEST(lines_that_are_not_a_maps)
{
	static const char bad[] = "xyz 10 name\n"
				  "1000\n"
				  "1000 10\n"
				  "1000 10 \n"
				  "1000 0 empty_range\n"
				  "ffffffffffffff00 1000 wraps\n"
				  "0 ffffffffffffffff everything\n"
				  "1000 40000001 past_a_gib\n"
				  "11111111111111111 10 seventeen_digits\n"
				  "1000 1g name\n"
				  "0x 10 no_digits\n"
				  "\n"
				  "5000 10 good one\n";
	static const char nul[] = "6000 10 a\0b\n";
	struct ember_perfmap m;

	ember_perfmap_init(&m);
	ck_assert_uint_eq(ember_perfmap_feed(&m, bad, strlen(bad)), strlen(bad));
	ember_perfmap_feed(&m, nul, sizeof(nul) - 1);
	ck_assert_uint_eq(m.entries, 1);
	ck_assert_uint_eq(m.lines_bad, 12); /* the empty line is no line at all */
	ck_assert_str_eq(ember_perfmap_lookup(&m, 0x5008), "good one");
	ck_assert_ptr_null(ember_perfmap_lookup(&m, 0x6000));
	ember_perfmap_free(&m);
}
END_TEST

/* A line longer than EMBER_PERFMAP_MAX_LINE, whole or arriving in pieces (its end not
 * written yet): skipped to its end, counted once; the next line is read. */
START_TEST(a_line_too_long)
{
	size_t n = EMBER_PERFMAP_MAX_LINE + 100;
	char *line = malloc(n + 32);
	struct ember_perfmap m;

	ck_assert_ptr_nonnull(line);
	memset(line, 'x', n);
	memcpy(line, "1000 10 ", 8);
	strcpy(line + n, "\n2000 10 after\n");
	ember_perfmap_init(&m);
	ck_assert_uint_eq(ember_perfmap_feed(&m, line, strlen(line)), strlen(line));
	ck_assert_uint_eq(m.lines_long, 1);
	ck_assert_str_eq(ember_perfmap_lookup(&m, 0x2000), "after");
	ck_assert_ptr_null(ember_perfmap_lookup(&m, 0x1000));
	ember_perfmap_free(&m);
	/* In pieces: the first ends mid-line past the limit. */
	ember_perfmap_init(&m);
	ck_assert_uint_eq(ember_perfmap_feed(&m, line, EMBER_PERFMAP_MAX_LINE + 10),
	                  EMBER_PERFMAP_MAX_LINE + 10);
	ck_assert(m.skipping);
	ember_perfmap_feed(&m, line + EMBER_PERFMAP_MAX_LINE + 10,
	                   strlen(line) - EMBER_PERFMAP_MAX_LINE - 10);
	ck_assert_uint_eq(m.lines_long, 1);
	ck_assert_uint_eq(m.entries, 1);
	ck_assert_str_eq(ember_perfmap_lookup(&m, 0x2000), "after");
	ember_perfmap_free(&m);
	free(line);
}
END_TEST

/* Past EMBER_PERFMAP_MAX_ENTRIES lines, and past EMBER_PERFMAP_MAX_NAMES bytes of names:
 * dropped and counted, the map kept. */
START_TEST(ceilings)
{
	struct ember_perfmap m;
	char line[EMBER_PERFMAP_MAX_LINE];
	char name[3000];

	ember_perfmap_init(&m);
	for (uint32_t i = 0; i < EMBER_PERFMAP_MAX_ENTRIES + 10; i++) {
		int len = snprintf(line, sizeof(line), "%x 1 f%u\n", 0x100000 + i, i);

		ember_perfmap_feed(&m, line, (size_t)len);
	}
	ck_assert_uint_eq(m.entries, EMBER_PERFMAP_MAX_ENTRIES);
	ck_assert_uint_eq(m.lines_dropped, 10);
	ck_assert_str_eq(ember_perfmap_lookup(&m, 0x100000 + 5), "f5");
	ck_assert_ptr_null(ember_perfmap_lookup(&m, 0x100000 + EMBER_PERFMAP_MAX_ENTRIES));
	ember_perfmap_free(&m);

	ember_perfmap_init(&m);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	for (uint32_t i = 0; i < EMBER_PERFMAP_MAX_NAMES / sizeof(name) + 10; i++) {
		int len = snprintf(line, sizeof(line), "%x 1 %s\n", 0x100000 + i, name);

		ember_perfmap_feed(&m, line, (size_t)len);
	}
	ck_assert_uint_gt(m.lines_dropped, 0);
	ck_assert_uint_le(m.names.len, EMBER_PERFMAP_MAX_NAMES);
	ck_assert_ptr_nonnull(ember_perfmap_lookup(&m, 0x100000));
	ember_perfmap_free(&m);
}
END_TEST

/* A process's map through the broker, as the JIT appends to it. */
START_TEST(a_process_map_read_as_it_grows)
{
	char path[] = "/tmp/ember-perfmap-XXXXXX";
	int fd = mkstemp(path);
	struct fake_broker fb;
	struct ember_perf_maps t;
	uint64_t now = 1000000000ull;
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs("1000 100 first\n2000 10", f); /* the second line's end is not written yet */
	fflush(f);
	fake_broker_start(&fb);
	fb.perf_map_path = path;
	ck_assert_int_eq(ember_perf_maps_init(&t, &fb.client), 0);
	ck_assert_str_eq(ember_perf_maps_name(&t, 42, false, 0x1010, now), "first");
	ck_assert_ptr_null(ember_perf_maps_name(&t, 42, false, 0x2000, now));
	/* The rest written: read at the next miss once EMBER_PERF_MAPS_GROW_NS passed. */
	fputs("0 second\n3000 10 third\n", f);
	fflush(f);
	ck_assert_ptr_null(ember_perf_maps_name(&t, 42, false, 0x3000, now + 1000));
	now += EMBER_PERF_MAPS_GROW_NS;
	ck_assert_str_eq(ember_perf_maps_name(&t, 42, false, 0x3000, now), "third");
	ck_assert_str_eq(ember_perf_maps_name(&t, 42, false, 0x2004, now), "second");
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_PERF_MAP), 1);
	/* Written again from its start, shorter: read again from there. */
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	rewind(f);
	fputs("4000 10 again\n", f);
	fflush(f);
	now += EMBER_PERF_MAPS_GROW_NS;
	ck_assert_str_eq(ember_perf_maps_name(&t, 42, false, 0x4000, now), "again");
	ck_assert_ptr_null(
	    ember_perf_maps_name(&t, 42, false, 0x1010, now + EMBER_PERF_MAPS_GROW_NS));
	/* Dropped at exec: asked for again. */
	ember_perf_maps_drop(&t, 42);
	ck_assert_str_eq(ember_perf_maps_name(&t, 42, false, 0x4000, now), "again");
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_PERF_MAP), 2);
	ck_assert_uint_eq(t.files, 2);
	ember_perf_maps_free(&t);
	fake_broker_stop(&fb);
	fclose(f);
	unlink(path);
}
END_TEST

/* A process without a map: asked about after a second, then twice as long each time. */
START_TEST(no_map_asked_about_less_often)
{
	struct fake_broker fb;
	struct ember_perf_maps t;
	uint64_t now = 1000000000ull, step = EMBER_PERF_MAPS_RETRY_NS / 4;
	unsigned int asked;

	fake_broker_start(&fb);
	ck_assert_int_eq(ember_perf_maps_init(&t, &fb.client), 0);
	/* 20 s of frames, four a second. */
	for (int i = 0; i < 80; i++, now += step)
		ck_assert_ptr_null(ember_perf_maps_name(&t, 7, false, 0x1000, now));
	asked = fake_broker_requests(&fb, EMBER_BROKER_PERF_MAP);
	/* At 0, 1, 3, 7, 15 s. */
	ck_assert_uint_eq(asked, 5);
	ck_assert_uint_eq(t.frames, 80);
	ck_assert_uint_eq(t.frames_named, 0);
	ember_perf_maps_free(&t);
	fake_broker_stop(&fb);
}
END_TEST

/* Frames of a process whose exit was read, after its map went with it, give it no place
 * again (a churn of short programs filled the table so, and no map was read after it);
 * what no frame asked about for EMBER_PERF_MAPS_IDLE_NS goes too. */
START_TEST(exited_and_idle_processes_hold_no_place)
{
	struct fake_broker fb;
	struct ember_perf_maps t;
	uint64_t now = 1000000000ull;
	uint32_t slot;

	fake_broker_start(&fb);
	ck_assert_int_eq(ember_perf_maps_init(&t, &fb.client), 0);
	for (uint32_t pid = 100; pid < 100 + 2 * EMBER_PERF_MAPS_PROCS; pid++) {
		ck_assert_ptr_null(ember_perf_maps_name(&t, pid, false, 0x1000, now));
		ember_perf_maps_drop(&t, pid); /* its exit */
		ck_assert_ptr_null(ember_perf_maps_name(&t, pid, true, 0x1000, now));
		ck_assert_int_ne(ember_slots_find(&t.procs, &pid, sizeof(pid), &slot), 0);
	}
	ck_assert_uint_eq(t.table_full, 0);
	ck_assert_uint_eq(fake_broker_requests(&fb, EMBER_BROKER_PERF_MAP),
	                  2 * EMBER_PERF_MAPS_PROCS);
	/* One whose exit never came, and one still running. */
	ck_assert_ptr_null(ember_perf_maps_name(&t, 7, false, 0x1000, now));
	ck_assert_ptr_null(
	    ember_perf_maps_name(&t, 8, false, 0x1000, now + EMBER_PERF_MAPS_IDLE_NS / 2));
	ember_perf_maps_sweep(&t, now + EMBER_PERF_MAPS_IDLE_NS);
	ck_assert_int_ne(ember_slots_find(&t.procs, &(uint32_t){7}, sizeof(uint32_t), &slot), 0);
	ck_assert_int_eq(ember_slots_find(&t.procs, &(uint32_t){8}, sizeof(uint32_t), &slot), 0);
	ck_assert_uint_eq(t.idle_dropped, 1);
	ember_perf_maps_free(&t);
	fake_broker_stop(&fb);
}
END_TEST

static Suite *perfmap_suite(void)
{
	Suite *s = suite_create("perfmap");
	TCase *tc = tcase_create("perfmap");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, lines_as_jits_write_them);
	tcase_add_test(tc, pieces_cut_anywhere);
	tcase_add_test(tc, reused_code_takes_the_newest_name);
	tcase_add_test(tc, lines_that_are_not_a_maps);
	tcase_add_test(tc, a_line_too_long);
	tcase_add_test(tc, ceilings);
	tcase_add_test(tc, a_process_map_read_as_it_grows);
	tcase_add_test(tc, no_map_asked_about_less_often);
	tcase_add_test(tc, exited_and_idle_processes_hold_no_place);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(perfmap_suite)
