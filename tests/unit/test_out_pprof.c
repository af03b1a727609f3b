// SPDX-License-Identifier: Apache-2.0
/* pprof: decode what the writer produced with the generated parser and check it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check_main.h"
#include "pprof.pb-c.h"
#include "profile_fixture.h"
#include "symbolizer/formats/out_pprof.h"
#include "symbolizer/formats/profile_reader.h"
#include "symbolizer/formats/profile_writer.h"

static const char *str(const Ember__Pprof__Profile *pp, int64_t i)
{
	ck_assert_int_ge(i, 0);
	ck_assert_int_lt(i, (int64_t)pp->n_string_table);
	return pp->string_table[i];
}

static const char *leaf_name(const Ember__Pprof__Profile *pp, const Ember__Pprof__Sample *s)
{
	const Ember__Pprof__Location *loc = pp->location[s->location_id[0] - 1];
	const Ember__Pprof__Function *fn = pp->function[loc->line[0]->function_id - 1];

	ck_assert_uint_eq(loc->id, s->location_id[0]);
	ck_assert_uint_eq(fn->id, loc->line[0]->function_id);
	return str(pp, fn->name);
}

START_TEST(encodes_a_valid_profile)
{
	struct ember_profile p;
	Ember__Pprof__Profile *pp;
	uint8_t *buf;
	size_t len;
	int64_t total = 0, leaf_a = 0;

	fixture_build(&p);
	ck_assert_int_eq(ember_pprof_encode(&p, &buf, &len), 0);
	pp = ember__pprof__profile__unpack(NULL, len, buf);
	ck_assert_ptr_nonnull(pp);
	ck_assert_str_eq(str(pp, 0), "");
	ck_assert_uint_eq(pp->n_sample_type, 2);
	ck_assert_str_eq(str(pp, pp->sample_type[0]->type), "samples");
	ck_assert_str_eq(str(pp, pp->sample_type[1]->unit), "nanoseconds");
	ck_assert_str_eq(str(pp, pp->period_type->type), "cpu");
	ck_assert_int_eq(pp->period, 10000000);
	ck_assert_int_eq(pp->duration_nanos, 5000000000ll);
	ck_assert_uint_eq(pp->n_mapping, 2);
	ck_assert_str_eq(str(pp, pp->mapping[0]->filename), "/usr/bin/app");
	ck_assert_str_eq(str(pp, pp->mapping[0]->build_id), "0123abcd");
	ck_assert(pp->mapping[0]->has_functions);
	for (size_t i = 0; i < pp->n_sample; i++) {
		ck_assert_uint_eq(pp->sample[i]->n_value, 2);
		ck_assert_int_eq(pp->sample[i]->value[1], pp->sample[i]->value[0] * 10000000);
		total += pp->sample[i]->value[0];
		if (!strcmp(leaf_name(pp, pp->sample[i]), "leaf_a"))
			leaf_a += pp->sample[i]->value[0];
	}
	ck_assert_int_eq(total, 12);
	ck_assert_int_eq(leaf_a, 6);
	/* The unsymbolized frame gets a readable synthetic name. */
	for (size_t i = 0; i < pp->n_sample; i++)
		if (pp->sample[i]->n_location_id == 2)
			ck_assert_str_eq(leaf_name(pp, pp->sample[i]), "libfoo.so+0x1234");
	/* Labels and statistics. */
	ck_assert_uint_ge(pp->sample[0]->n_label, 4);
	ck_assert_str_eq(str(pp, pp->sample[0]->label[0]->key), "pid");
	ck_assert_int_eq(pp->sample[0]->label[0]->num, 10);
	/* One line for pprof's header, the statistics behind '#' (shown on request). */
	ck_assert_uint_eq(pp->n_comment, 2);
	ck_assert_str_eq(str(pp, pp->comment[0]),
	                 "12 samples, 4 lost; every counter: ember report --stats FILE");
	ck_assert_str_eq(str(pp, pp->comment[1]), "#lost.samples=4");
	ember__pprof__profile__free_unpacked(pp, NULL);
	free(buf);
	ember_profile_free(&p);
}
END_TEST

START_TEST(file_output_is_gzip)
{
	struct ember_profile p;
	char *gz;
	size_t gzlen, rawlen;
	uint8_t *raw, out[1 << 16];
	z_stream z = {0};

	fixture_build(&p);
	ck_assert_int_eq(ember_format_encode(EMBER_FORMAT_PPROF, &p, &gz, &gzlen), 0);
	ck_assert_uint_gt(gzlen, 18);
	ck_assert_uint_eq((uint8_t)gz[0], 0x1f);
	ck_assert_uint_eq((uint8_t)gz[1], 0x8b);
	ck_assert_int_eq(ember_pprof_encode(&p, &raw, &rawlen), 0);
	ck_assert_int_eq(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)gzlen;
	z.next_out = out;
	z.avail_out = sizeof(out);
	ck_assert_int_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
	ck_assert_uint_eq(z.total_out, rawlen);
	ck_assert_int_eq(memcmp(out, raw, rawlen), 0);
	inflateEnd(&z);
	free(raw);
	free(gz);
	ember_profile_free(&p);
}
END_TEST

static Ember__Pprof__Profile *encode(const struct ember_profile *p)
{
	Ember__Pprof__Profile *pp;
	uint8_t *buf;
	size_t len;

	ck_assert_int_eq(ember_pprof_encode(p, &buf, &len), 0);
	pp = ember__pprof__profile__unpack(NULL, len, buf);
	ck_assert_ptr_nonnull(pp);
	free(buf);
	return pp;
}

/* The file of the mapping of the location of each sample's leaf, by leaf name. */
static const char *leaf_file(const Ember__Pprof__Profile *pp, const char *leaf)
{
	for (size_t i = 0; i < pp->n_sample; i++) {
		const Ember__Pprof__Location *loc = pp->location[pp->sample[i]->location_id[0] - 1];

		if (strcmp(leaf_name(pp, pp->sample[i]), leaf))
			continue;
		ck_assert_uint_ge(loc->mapping_id, 1);
		ck_assert_uint_le(loc->mapping_id, pp->n_mapping);
		ck_assert_uint_eq(pp->mapping[loc->mapping_id - 1]->id, loc->mapping_id);
		return str(pp, pp->mapping[loc->mapping_id - 1]->filename);
	}
	return NULL;
}

START_TEST(whole_system_profile_is_headlined_system)
{
	struct ember_profile p;
	Ember__Pprof__Profile *pp;

	fixture_build(&p);
	p.scope = EMBER_SCOPE_SYSTEM;
	memcpy(p.host, "node-7", 7);
	pp = encode(&p);
	/* pprof prints "File: " and the first mapping's name. */
	ck_assert_uint_eq(pp->n_mapping, 3);
	ck_assert_str_eq(str(pp, pp->mapping[0]->filename), "[system]");
	ck_assert_uint_eq(pp->mapping[0]->id, 1);
	ck_assert_str_eq(leaf_file(pp, "leaf_a"), "/usr/bin/app");
	ck_assert_str_eq(leaf_file(pp, "libfoo.so+0x1234"), "/usr/lib/libfoo.so");
	ck_assert_str_eq(str(pp, pp->comment[0]),
	                 "node-7: 12 samples, 4 lost; every counter: ember report --stats FILE");
	ck_assert_str_eq(str(pp, pp->comment[1]), "#host=node-7");
	ember__pprof__profile__free_unpacked(pp, NULL);
	ember_profile_free(&p);
}
END_TEST

/* Mappings met in the order a whole-system profile meets them: kernel, library, program. */
static void build_chosen(struct ember_profile *p, const char *program)
{
	static const char *const files[] = {"[kernel.kallsyms]",
	                                    "/usr/lib/x86_64-linux-gnu/libc.so.6",
	                                    "/usr/lib/libssl.so.3", NULL};
	struct ember_sample_key key = {.pid = 5, .tid = 5};
	uint32_t locs[4], stack;

	ck_assert_int_eq(ember_profile_init(p), 0);
	p->scope = EMBER_SCOPE_PROCESSES;
	for (int i = 0; i < 4; i++) {
		struct ember_mapping m = {.start = 0x1000 * (uint64_t)(i + 1),
		                          .limit = 0x1000 * (uint64_t)(i + 2)};
		uint32_t map;
		char fn[16];

		ck_assert_int_eq(
		    ember_profile_intern_cstr(p, files[i] ? files[i] : program, &m.filename), 0);
		ck_assert_int_eq(ember_profile_add_mapping(p, &m, &map), 0);
		snprintf(fn, sizeof(fn), "f%d", i);
		locs[i] = fixture_loc(p, map, m.start + 8, fn);
	}
	ck_assert_int_eq(ember_profile_add_stack(p, locs, 4, &stack), 0);
	key.stack = stack;
	ck_assert_int_eq(ember_profile_add_sample(p, &key, 3, 0), 0);
}

START_TEST(profile_of_chosen_processes_is_headlined_by_its_program)
{
	struct ember_profile p;
	Ember__Pprof__Profile *pp;

	build_chosen(&p, "/usr/bin/python3.11");
	pp = encode(&p);
	ck_assert_uint_eq(pp->n_mapping, 4);
	ck_assert_str_eq(str(pp, pp->mapping[0]->filename), "/usr/bin/python3.11");
	ck_assert_str_eq(str(pp, pp->mapping[1]->filename), "[kernel.kallsyms]");
	for (size_t i = 0; i < pp->n_mapping; i++)
		ck_assert_uint_eq(pp->mapping[i]->id, i + 1);
	ck_assert_str_eq(leaf_file(pp, "f0"), "[kernel.kallsyms]");
	ember__pprof__profile__free_unpacked(pp, NULL);
	ember_profile_free(&p);
	/* Without a program among them (only libraries), the order stays. */
	build_chosen(&p, "/opt/lib/libplugin.so.2.1");
	pp = encode(&p);
	ck_assert_str_eq(str(pp, pp->mapping[0]->filename), "[kernel.kallsyms]");
	ember__pprof__profile__free_unpacked(pp, NULL);
	ember_profile_free(&p);
}
END_TEST

START_TEST(memfd_mapping_is_named_so_that_pprof_skips_it)
{
	struct ember_profile p;
	Ember__Pprof__Profile *pp;

	build_chosen(&p, "/memfd:jit/code");
	p.scope = EMBER_SCOPE_UNKNOWN;
	pp = encode(&p);
	/* pprof does not open a mapping whose base name starts with '['. */
	ck_assert_str_eq(str(pp, pp->mapping[3]->filename), "[memfd:jit_code]");
	ember__pprof__profile__free_unpacked(pp, NULL);
	ember_profile_free(&p);
}
END_TEST

/* ember report reads its own pprof back: the headline, the statistics and the host survive. */
START_TEST(system_headline_and_statistics_survive_a_round_trip)
{
	struct ember_profile p, back;
	Ember__Pprof__Profile *pp, *again;
	uint8_t *buf;
	size_t len;

	fixture_build(&p);
	p.scope = EMBER_SCOPE_SYSTEM;
	memcpy(p.host, "node-7", 7);
	ck_assert_int_eq(ember_pprof_encode(&p, &buf, &len), 0);
	pp = ember__pprof__profile__unpack(NULL, len, buf);
	ck_assert_int_eq(ember_profile_init(&back), 0);
	ck_assert_int_eq(ember_input_parse(&back, buf, len), 0);
	ck_assert_int_eq(back.scope, EMBER_SCOPE_UNKNOWN);
	ck_assert_str_eq(back.host, "node-7");
	ck_assert_uint_eq(ember_profile_stat_get(&back, "lost.samples"), 4);
	ck_assert_uint_eq(back.stats.len, 1); /* the summary line is no statistic */
	again = encode(&back);
	ck_assert_uint_eq(again->n_mapping, pp->n_mapping);
	ck_assert_str_eq(str(again, again->mapping[0]->filename), "[system]");
	ck_assert_uint_eq(again->n_comment, pp->n_comment);
	for (size_t i = 0; i < pp->n_comment; i++)
		ck_assert_str_eq(str(again, again->comment[i]), str(pp, pp->comment[i]));
	ember__pprof__profile__free_unpacked(again, NULL);
	ember__pprof__profile__free_unpacked(pp, NULL);
	free(buf);
	ember_profile_free(&back);
	ember_profile_free(&p);
}
END_TEST

static Suite *pprof_suite(void)
{
	Suite *s = suite_create("out_pprof");
	TCase *tc = tcase_create("out_pprof");

	tcase_add_test(tc, encodes_a_valid_profile);
	tcase_add_test(tc, file_output_is_gzip);
	tcase_add_test(tc, whole_system_profile_is_headlined_system);
	tcase_add_test(tc, profile_of_chosen_processes_is_headlined_by_its_program);
	tcase_add_test(tc, memfd_mapping_is_named_so_that_pprof_skips_it);
	tcase_add_test(tc, system_headline_and_statistics_survive_a_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(pprof_suite)
