// SPDX-License-Identifier: Apache-2.0
/* pprof: decode what the writer produced with the generated parser and check it. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check_main.h"
#include "pprof.pb-c.h"
#include "profile_fixture.h"
#include "symbolizer/formats/out_pprof.h"
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
	ck_assert_uint_eq(pp->n_comment, 1);
	ck_assert_str_eq(str(pp, pp->comment[0]), "lost.samples=4");
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

static Suite *pprof_suite(void)
{
	Suite *s = suite_create("out_pprof");
	TCase *tc = tcase_create("out_pprof");

	tcase_add_test(tc, encodes_a_valid_profile);
	tcase_add_test(tc, file_output_is_gzip);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(pprof_suite)
