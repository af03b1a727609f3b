// SPDX-License-Identifier: Apache-2.0
/* The pprof reader: round trips through the writer, and hostile input. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check_main.h"
#include "pprof.pb-c.h"
#include "profile_fixture.h"
#include "symbolizer/formats/gzip.h"
#include "symbolizer/formats/in_pprof.h"
#include "symbolizer/formats/profile_reader.h"
#include "symbolizer/formats/out_pprof.h"
#include "symbolizer/formats/profile_writer.h"

static char *folded_of(const struct ember_profile *p)
{
	char *buf;
	size_t len;

	ck_assert_int_eq(ember_format_encode(EMBER_FORMAT_FOLDED, p, &buf, &len), 0);
	return buf;
}

static int read_bytes(struct ember_profile *p, const uint8_t *buf, size_t len)
{
	ck_assert_int_eq(ember_profile_init(p), 0);
	return ember_read_pprof(p, buf, len);
}

START_TEST(round_trips_the_writer_gzipped)
{
	struct ember_profile orig, back;
	char *gz, *a, *b;
	size_t len;

	fixture_build(&orig);
	strcpy(orig.host, "build-host");
	ck_assert_int_eq(ember_format_encode(EMBER_FORMAT_PPROF, &orig, &gz, &len), 0);
	ck_assert(ember_is_gzip((const uint8_t *)gz, len));
	ck_assert_int_eq(ember_input_detect((const uint8_t *)gz, len), EMBER_INPUT_PPROF);
	ck_assert_int_eq(read_bytes(&back, (const uint8_t *)gz, len), 0);
	a = folded_of(&orig);
	b = folded_of(&back);
	ck_assert_str_eq(a, b);
	ck_assert_uint_eq(back.total_count, 12);
	ck_assert_uint_eq(back.period_ns, 10000000);
	ck_assert_uint_eq(back.sample_hz, 100);
	ck_assert_uint_eq(back.start_ns, orig.start_ns);
	ck_assert_uint_eq(back.end_ns, orig.end_ns);
	ck_assert_str_eq(back.host, "build-host");
	ck_assert_uint_eq(ember_profile_stat_get(&back, "lost.samples"), 4);
	ck_assert_uint_eq(ember_profile_stat_get(&back, "report.bad_references"), 0);
	/* pid labels survive: two processes, with their pids. */
	ck_assert_uint_eq(ember_profile_sample(&back, 0)->key.pid, 10);
	ck_assert_uint_eq(ember_profile_sample(&back, back.samples.len - 1)->key.pid, 20);
	free(gz);
	free(a);
	free(b);
	ember_profile_free(&orig);
	ember_profile_free(&back);
}
END_TEST

START_TEST(off_cpu_time_round_trips_as_a_third_sample_type)
{
	struct ember_profile orig, back;
	Ember__Pprof__Profile *pp;
	uint8_t *raw;
	size_t len;
	char *a, *b;

	fixture_build_off_cpu(&orig);
	ck_assert_int_eq(ember_pprof_encode(&orig, &raw, &len), 0);
	pp = ember__pprof__profile__unpack(NULL, len, raw);
	ck_assert_ptr_nonnull(pp);
	ck_assert_uint_eq(pp->n_sample_type, 3);
	ck_assert_str_eq(pp->string_table[pp->sample_type[2]->type], "off_cpu");
	ck_assert_str_eq(pp->string_table[pp->sample_type[2]->unit], "nanoseconds");
	ck_assert_str_eq(pp->string_table[pp->default_sample_type], "samples");
	for (size_t i = 0; i < pp->n_sample; i++) {
		const Ember__Pprof__Sample *s = pp->sample[i];
		bool wait = false;

		ck_assert_uint_eq(s->n_value, 3);
		/* CPU samples carry 0 off CPU, off-CPU samples 0 in the CPU columns. */
		ck_assert((s->value[0] > 0) != (s->value[2] > 0));
		ck_assert_int_eq(s->value[1], s->value[0] * 10000000);
		for (size_t j = 0; j < s->n_label; j++)
			wait |= !strcmp(pp->string_table[s->label[j]->key], "wait");
		ck_assert(wait == (s->value[2] > 0));
	}
	ember__pprof__profile__free_unpacked(pp, NULL);
	ck_assert_int_eq(read_bytes(&back, raw, len), 0);
	ck_assert(back.off_cpu);
	ck_assert_uint_eq(back.total_count, 12);
	ck_assert_uint_eq(back.total_off_cpu_ns, 4000000000ull);
	orig.view = back.view = EMBER_VIEW_OFF_CPU;
	a = folded_of(&orig);
	b = folded_of(&back);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	for (size_t i = 0; i < back.samples.len; i++) {
		const struct ember_sample *s = ember_profile_sample(&back, (uint32_t)i);

		if (s->off_cpu_ns == 1000000000ull)
			ck_assert_str_eq(ember_profile_str(&back, s->key.wait), "uninterruptible");
		else if (s->off_cpu_ns)
			ck_assert_str_eq(ember_profile_str(&back, s->key.wait), "futex");
	}
	free(raw);
	ember_profile_free(&orig);
	ember_profile_free(&back);
}
END_TEST

START_TEST(links_round_trip_as_trace_and_span_labels)
{
	static const char link[] = "4bf92f3577b34da6a3ce929d0e0e4736"
				   "00f067aa0ba902b7";
	struct ember_profile orig, back;
	struct ember_sample_key key;
	Ember__Pprof__Profile *pp;
	size_t len, linked = 0;
	uint8_t *raw;

	fixture_build(&orig);
	key = ember_profile_sample(&orig, 0)->key;
	ck_assert_int_eq(ember_profile_intern_cstr(&orig, link, &key.link), 0);
	ck_assert_int_eq(ember_profile_add_sample(&orig, &key, 3, 0), 0);
	ck_assert_int_eq(ember_pprof_encode(&orig, &raw, &len), 0);
	pp = ember__pprof__profile__unpack(NULL, len, raw);
	ck_assert_ptr_nonnull(pp);
	for (size_t i = 0; i < pp->n_sample; i++) {
		const char *trace = NULL, *span = NULL;

		for (size_t j = 0; j < pp->sample[i]->n_label; j++) {
			const Ember__Pprof__Label *l = pp->sample[i]->label[j];

			if (!strcmp(pp->string_table[l->key], "trace_id"))
				trace = pp->string_table[l->str];
			else if (!strcmp(pp->string_table[l->key], "span_id"))
				span = pp->string_table[l->str];
		}
		ck_assert((trace != NULL) == (span != NULL));
		if (!trace)
			continue;
		linked++;
		ck_assert_str_eq(trace, "4bf92f3577b34da6a3ce929d0e0e4736");
		ck_assert_str_eq(span, "00f067aa0ba902b7");
		ck_assert_int_eq(pp->sample[i]->value[0], 3);
	}
	ck_assert_uint_eq(linked, 1);
	ember__pprof__profile__free_unpacked(pp, NULL);
	ck_assert_int_eq(read_bytes(&back, raw, len), 0);
	linked = 0;
	for (size_t i = 0; i < back.samples.len; i++) {
		const struct ember_sample *s = ember_profile_sample(&back, (uint32_t)i);

		if (!s->key.link)
			continue;
		linked++;
		ck_assert_str_eq(ember_profile_str(&back, s->key.link), link);
		ck_assert_uint_eq(s->count, 3);
	}
	ck_assert_uint_eq(linked, 1);
	free(raw);
	ember_profile_free(&orig);
	ember_profile_free(&back);
}
END_TEST

START_TEST(reads_uncompressed_and_keeps_inline_frames_and_kernel_kind)
{
	struct ember_profile orig, back;
	struct ember_mapping km = {.start = 0xffffffff81000000ull, .limit = 0xffffffff82000000ull};
	struct ember_sample_key key = {.pid = 1, .tid = 1};
	struct ember_line lines[2];
	uint32_t locs[2], map;
	uint8_t *buf;
	size_t len;
	char *text;
	const struct ember_stack *st;

	ck_assert_int_eq(ember_profile_init(&orig), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&orig, "[kernel.kallsyms]", &km.filename), 0);
	ck_assert_int_eq(ember_profile_add_mapping(&orig, &km, &map), 0);
	lines[0].function = fixture_fn(&orig, "ksys_read");
	lines[0].line = 0;
	ck_assert_int_eq(ember_profile_add_location(&orig, map, EMBER_FRAME_KERNEL,
	                                            0xffffffff81001000ull, lines, 1, &locs[0]),
	                 0);
	lines[0].function = fixture_fn(&orig, "inlined");
	lines[0].line = 12;
	lines[1].function = fixture_fn(&orig, "outer");
	lines[1].line = 30;
	ck_assert_int_eq(ember_profile_add_location(&orig, EMBER_NONE, EMBER_FRAME_NATIVE, 0x1000,
	                                            lines, 2, &locs[1]),
	                 0);
	ck_assert_int_eq(ember_profile_add_stack(&orig, locs, 2, &key.stack), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&orig, "cat", &key.comm), 0);
	ck_assert_int_eq(ember_profile_add_sample(&orig, &key, 3, 0), 0);
	ck_assert_int_eq(ember_pprof_encode(&orig, &buf, &len), 0);
	ck_assert_int_eq(ember_input_detect(buf, len), EMBER_INPUT_PPROF);
	ck_assert_int_eq(read_bytes(&back, buf, len), 0);
	text = folded_of(&back);
	ck_assert_str_eq(text, "cat;outer;inlined;ksys_read 3\n");
	st = ember_profile_stack(&back, ember_profile_sample(&back, 0)->key.stack);
	ck_assert_uint_eq(
	    ember_profile_location(&back, ember_profile_stack_locations(&back, st)[0])->kind,
	    EMBER_FRAME_KERNEL);
	ck_assert_uint_eq(
	    ember_profile_location(&back, ember_profile_stack_locations(&back, st)[1])->nlines, 2);
	free(text);
	free(buf);
	ember_profile_free(&orig);
	ember_profile_free(&back);
}
END_TEST

/* A hand-made profile whose references point nowhere. */
START_TEST(dangling_references_become_unknown_frames_and_are_counted)
{
	static char *strings[] = {"", "samples", "count", "fn", "comm", "proc"};
	Ember__Pprof__Profile prof = EMBER__PPROF__PROFILE__INIT;
	Ember__Pprof__ValueType vt = EMBER__PPROF__VALUE_TYPE__INIT, *vts[1] = {&vt};
	Ember__Pprof__Function fn = EMBER__PPROF__FUNCTION__INIT, *fns[1] = {&fn};
	Ember__Pprof__Line line = EMBER__PPROF__LINE__INIT, bad_line = EMBER__PPROF__LINE__INIT;
	Ember__Pprof__Line *lines[2] = {&line, &bad_line};
	Ember__Pprof__Location loc = EMBER__PPROF__LOCATION__INIT, *locs[1] = {&loc};
	Ember__Pprof__Label label = EMBER__PPROF__LABEL__INIT, *labels[1] = {&label};
	Ember__Pprof__Sample s = EMBER__PPROF__SAMPLE__INIT, s2 = EMBER__PPROF__SAMPLE__INIT;
	Ember__Pprof__Sample *samples[2] = {&s, &s2};
	uint64_t ids[3] = {7, 999, 7};
	int64_t value[1] = {5}, value2[1] = {-1};
	int64_t comments[2] = {12345, 0};
	struct ember_profile p;
	uint8_t *buf;
	size_t len;
	char *text;

	vt.type = 1;
	vt.unit = 2;
	fn.id = 3;
	fn.name = 3;
	fn.filename = 1000; /* out of range */
	line.function_id = 3;
	bad_line.function_id = 42; /* no such function */
	loc.id = 7;
	loc.mapping_id = 5; /* no such mapping */
	loc.n_line = 2;
	loc.line = lines;
	label.key = 4;
	label.str = -9; /* out of range */
	s.n_location_id = 3;
	s.location_id = ids;
	s.n_value = 1;
	s.value = value;
	s.n_label = 1;
	s.label = labels;
	s2.n_location_id = 1;
	s2.location_id = ids;
	s2.n_value = 1;
	s2.value = value2;
	prof.n_sample_type = 1;
	prof.sample_type = vts;
	prof.n_function = 1;
	prof.function = fns;
	prof.n_location = 1;
	prof.location = locs;
	prof.n_sample = 2;
	prof.sample = samples;
	prof.n_string_table = 6;
	prof.string_table = strings;
	prof.n_comment = 2;
	prof.comment = comments;
	len = ember__pprof__profile__get_packed_size(&prof);
	buf = malloc(len);
	ember__pprof__profile__pack(&prof, buf);
	ck_assert_int_eq(read_bytes(&p, buf, len), 0);
	text = folded_of(&p);
	ck_assert_str_eq(text, "[unknown];fn;[unknown];fn 5\n");
	/* filename, line, mapping, location 999, label string, negative value, comment */
	ck_assert_uint_eq(ember_profile_stat_get(&p, "report.bad_references"), 7);
	free(text);
	free(buf);
	ember_profile_free(&p);
}
END_TEST

START_TEST(locations_that_share_an_address_stay_apart)
{
	static char *strings[] = {"", "samples", "count", "a", "b"};
	Ember__Pprof__Profile prof = EMBER__PPROF__PROFILE__INIT;
	Ember__Pprof__ValueType vt = EMBER__PPROF__VALUE_TYPE__INIT, *vts[1] = {&vt};
	Ember__Pprof__Function fa = EMBER__PPROF__FUNCTION__INIT, fb = EMBER__PPROF__FUNCTION__INIT;
	Ember__Pprof__Function *fns[2] = {&fa, &fb};
	Ember__Pprof__Line la = EMBER__PPROF__LINE__INIT, lb = EMBER__PPROF__LINE__INIT;
	Ember__Pprof__Line *lines_a[1] = {&la}, *lines_b[1] = {&lb};
	Ember__Pprof__Location a = EMBER__PPROF__LOCATION__INIT, b = EMBER__PPROF__LOCATION__INIT;
	Ember__Pprof__Location *locs[2] = {&a, &b};
	Ember__Pprof__Sample s = EMBER__PPROF__SAMPLE__INIT, *samples[1] = {&s};
	uint64_t ids[2] = {2, 1};
	int64_t value[1] = {1};
	struct ember_profile p;
	uint8_t *buf;
	size_t len;
	char *text;

	vt.type = 1;
	vt.unit = 2;
	fa.id = 1;
	fa.name = 3;
	fb.id = 2;
	fb.name = 4;
	la.function_id = 1;
	lb.function_id = 2;
	a.id = 1; /* both at address 0, as converters often write */
	a.n_line = 1;
	a.line = lines_a;
	b.id = 2;
	b.n_line = 1;
	b.line = lines_b;
	s.n_location_id = 2;
	s.location_id = ids;
	s.n_value = 1;
	s.value = value;
	prof.n_sample_type = 1;
	prof.sample_type = vts;
	prof.n_function = 2;
	prof.function = fns;
	prof.n_location = 2;
	prof.location = locs;
	prof.n_sample = 1;
	prof.sample = samples;
	prof.n_string_table = 5;
	prof.string_table = strings;
	len = ember__pprof__profile__get_packed_size(&prof);
	buf = malloc(len);
	ember__pprof__profile__pack(&prof, buf);
	ck_assert_int_eq(read_bytes(&p, buf, len), 0);
	text = folded_of(&p);
	ck_assert_str_eq(text, "[unknown];a;b 1\n");
	free(text);
	free(buf);
	ember_profile_free(&p);
}
END_TEST

static uint8_t *gzip_of(const uint8_t *data, size_t len, size_t *out_len)
{
	uLongf cap = compressBound(len) + 64;
	uint8_t *out = malloc(cap);
	z_stream z = {0};

	ck_assert_int_eq(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = cap - z.avail_out;
	deflateEnd(&z);
	return out;
}

START_TEST(gunzip_enforces_its_cap)
{
	size_t n = 100000, gz_len, out_len;
	uint8_t *zeros = calloc(1, n), *gz = gzip_of(zeros, n, &gz_len), *out;

	/* A bomb: 100 kB from a few hundred bytes. */
	ck_assert_uint_lt(gz_len, 1000);
	ck_assert_int_eq(ember_gunzip(gz, gz_len, n - 1, &out, &out_len), -EFBIG);
	ck_assert_ptr_null(out);
	ck_assert_int_eq(ember_gunzip(gz, gz_len, n, &out, &out_len), 0);
	ck_assert_uint_eq(out_len, n);
	free(out);
	ck_assert_int_eq(ember_gunzip(gz, gz_len, 10 * n, &out, &out_len), 0);
	ck_assert_uint_eq(out_len, n);
	free(out);
	/* Truncated and corrupted streams are errors, not crashes. */
	ck_assert_int_eq(ember_gunzip(gz, gz_len / 2, 10 * n, &out, &out_len), -EINVAL);
	gz[gz_len - 6] ^= 0x55; /* the CRC-32 of the trailer */
	ck_assert_int_eq(ember_gunzip(gz, gz_len, 10 * n, &out, &out_len), -EINVAL);
	free(zeros);
	free(gz);
}
END_TEST

START_TEST(garbage_is_rejected)
{
	struct ember_profile p;
	static const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01, 0x02};
	static const uint8_t gz_junk[] = {0x1f, 0x8b, 0x08, 0x00, 0x01, 0x02, 0x03};

	ck_assert_int_eq(read_bytes(&p, junk, sizeof(junk)), -EINVAL);
	ember_profile_free(&p);
	ck_assert_int_eq(read_bytes(&p, gz_junk, sizeof(gz_junk)), -EINVAL);
	ember_profile_free(&p);
	ck_assert_int_eq(ember_input_detect(junk, sizeof(junk)), EMBER_INPUT_PPROF);
	ck_assert_int_eq(ember_input_detect((const uint8_t *)"a;b 1\n", 6), EMBER_INPUT_FOLDED);
}
END_TEST

static Suite *in_pprof_suite(void)
{
	Suite *s = suite_create("in_pprof");
	TCase *tc = tcase_create("in_pprof");

	tcase_add_test(tc, round_trips_the_writer_gzipped);
	tcase_add_test(tc, reads_uncompressed_and_keeps_inline_frames_and_kernel_kind);
	tcase_add_test(tc, dangling_references_become_unknown_frames_and_are_counted);
	tcase_add_test(tc, locations_that_share_an_address_stay_apart);
	tcase_add_test(tc, gunzip_enforces_its_cap);
	tcase_add_test(tc, garbage_is_rejected);
	tcase_add_test(tc, off_cpu_time_round_trips_as_a_third_sample_type);
	tcase_add_test(tc, links_round_trip_as_trace_and_span_labels);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(in_pprof_suite)
