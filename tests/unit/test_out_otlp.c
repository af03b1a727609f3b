// SPDX-License-Identifier: Apache-2.0
/*
 * OTLP profiles: decode what the writer produced with the generated parser
 * and check the content and the dictionary rules (zero entry at index 0, no
 * duplicates, every index in range); then let protoc decode it with the
 * upstream schema as an independent oracle.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "otlp/profiles_service.pb-c.h"
#include "profile_fixture.h"
#include "shared/str.h"
#include "symbolizer/formats/out_otlp.h"
#include "symbolizer/formats/profile_writer.h"
#include <sodium.h>

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
    Request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Profile;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Resource__V1__Resource Resource;

static Request *encode(const struct ember_profile *p, size_t *nprofiles)
{
	uint8_t *buf;
	size_t len;
	Request *r;

	ck_assert_int_eq(ember_otlp_encode(p, &buf, &len, nprofiles), 0);
	r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
	    NULL, len, buf);
	ck_assert_ptr_nonnull(r);
	free(buf);
	return r;
}

static void unpacked_free(Request *r)
{
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
	    r, NULL);
}

static const char *str(const Dict *d, int32_t i)
{
	ck_assert_int_ge(i, 0);
	ck_assert_int_lt(i, (int32_t)d->n_string_table);
	return d->string_table[i];
}

/* The value of attribute key among the indices, or NULL. */
static const AnyValue *attr(const Dict *d, const int32_t *idx, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_gt(idx[i], 0);
		ck_assert_int_lt(idx[i], (int32_t)d->n_attribute_table);
		if (!strcmp(str(d, d->attribute_table[idx[i]]->key_strindex), key))
			return d->attribute_table[idx[i]]->value;
	}
	return NULL;
}

static const AnyValue *resource_attr(const Resource *r, const char *key)
{
	for (size_t i = 0; i < r->n_attributes; i++)
		if (!strcmp(r->attributes[i]->key, key))
			return r->attributes[i]->value;
	return NULL;
}

/* Every entry packs to distinct bytes; index 0 packs to nothing (the zero value). */
static void check_table(const ProtobufCMessage *const *items, size_t n, const char *what)
{
	uint8_t *packed[4096];
	size_t len[4096] = {0};

	ck_assert_msg(n >= 1, "%s: no zero entry", what);
	ck_assert_uint_lt(n, 4096);
	for (size_t i = 0; i < n; i++) {
		len[i] = protobuf_c_message_get_packed_size(items[i]);
		packed[i] = malloc(len[i] + 1);
		protobuf_c_message_pack(items[i], packed[i]);
	}
	ck_assert_msg(len[0] == 0, "%s[0] is not the zero value", what);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			ck_assert_msg(len[i] != len[j] || memcmp(packed[i], packed[j], len[i]),
			              "%s[%zu] and [%zu] are equal", what, i, j);
	for (size_t i = 0; i < n; i++)
		free(packed[i]);
}

#define CHECK_TABLE(d, field)                                                                      \
	check_table((const ProtobufCMessage *const *)(d)->field, (d)->n_##field, #field)

static void check_dictionary(const Dict *d)
{
	ck_assert_uint_ge(d->n_string_table, 1);
	ck_assert_str_eq(d->string_table[0], "");
	for (size_t i = 0; i < d->n_string_table; i++)
		for (size_t j = i + 1; j < d->n_string_table; j++)
			ck_assert_msg(strcmp(d->string_table[i], d->string_table[j]),
			              "string %zu and %zu are both '%s'", i, j, d->string_table[i]);
	CHECK_TABLE(d, mapping_table);
	CHECK_TABLE(d, location_table);
	CHECK_TABLE(d, function_table);
	CHECK_TABLE(d, link_table);
	CHECK_TABLE(d, attribute_table);
	CHECK_TABLE(d, stack_table);
	for (size_t i = 1; i < d->n_mapping_table; i++)
		str(d, d->mapping_table[i]->filename_strindex);
	for (size_t i = 1; i < d->n_function_table; i++) {
		str(d, d->function_table[i]->name_strindex);
		str(d, d->function_table[i]->system_name_strindex);
		str(d, d->function_table[i]->filename_strindex);
	}
	for (size_t i = 1; i < d->n_location_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Location *l =
		    d->location_table[i];

		ck_assert_int_ge(l->mapping_index, 0);
		ck_assert_int_lt(l->mapping_index, (int32_t)d->n_mapping_table);
		for (size_t j = 0; j < l->n_lines; j++) {
			ck_assert_int_gt(l->lines[j]->function_index, 0);
			ck_assert_int_lt(l->lines[j]->function_index, (int32_t)d->n_function_table);
		}
	}
	for (size_t i = 1; i < d->n_stack_table; i++)
		for (size_t j = 0; j < d->stack_table[i]->n_location_indices; j++) {
			ck_assert_int_gt(d->stack_table[i]->location_indices[j], 0);
			ck_assert_int_lt(d->stack_table[i]->location_indices[j],
			                 (int32_t)d->n_location_table);
		}
	for (size_t i = 1; i < d->n_attribute_table; i++) {
		str(d, d->attribute_table[i]->key_strindex);
		ck_assert_ptr_nonnull(d->attribute_table[i]->value);
	}
}

/* Name of the leaf function of a sample. */
static const char *leaf(const Dict *d, const Sample *s)
{
	const Opentelemetry__Proto__Profiles__V1development__Stack *st;
	const Opentelemetry__Proto__Profiles__V1development__Location *l;

	ck_assert_int_gt(s->stack_index, 0);
	ck_assert_int_lt(s->stack_index, (int32_t)d->n_stack_table);
	st = d->stack_table[s->stack_index];
	l = d->location_table[st->location_indices[0]];
	if (!l->n_lines) { /* named as the other writers name it: file+0xOFFSET */
		static char name[256];
		const Opentelemetry__Proto__Profiles__V1development__Mapping *m =
		    d->mapping_table[l->mapping_index];
		const char *file = str(d, m->filename_strindex), *slash = strrchr(file, '/');

		snprintf(name, sizeof(name), "%s+0x%" PRIx64, slash ? slash + 1 : file,
		         l->address - m->memory_start + m->file_offset);
		return name;
	}
	return str(d, d->function_table[l->lines[0]->function_index]->name_strindex);
}

/* What a sample counts: its values, or one per timestamp when it has none. */
static int64_t sample_total(const Sample *s)
{
	int64_t t = s->n_values ? 0 : (int64_t)s->n_timestamps_unix_nano;

	for (size_t i = 0; i < s->n_values; i++)
		t += s->values[i];
	return t;
}

START_TEST(encodes_one_resource_per_process_and_a_valid_dictionary)
{
	struct ember_profile p;
	size_t nprofiles;
	Request *r;
	const Dict *d;
	int64_t total = 0, leaf_a = 0, unsym = 0;

	fixture_build(&p);
	ember_strlcpy(p.host, "node-7", sizeof(p.host));
	r = encode(&p, &nprofiles);
	d = r->dictionary;
	ck_assert_ptr_nonnull(d);
	check_dictionary(d);
	ck_assert_uint_eq(r->n_resource_profiles, 2);
	ck_assert_uint_eq(nprofiles, 2);
	for (size_t i = 0; i < r->n_resource_profiles; i++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp =
		    r->resource_profiles[i];
		const Opentelemetry__Proto__Profiles__V1development__Profile *prof;
		const AnyValue *pid = resource_attr(rp->resource, "process.pid");
		const AnyValue *svc = resource_attr(rp->resource, "service.name");
		const AnyValue *host = resource_attr(rp->resource, "host.name");
		const AnyValue *exe = resource_attr(rp->resource, "process.executable.name");

		ck_assert_ptr_nonnull(pid);
		ck_assert_int_eq(pid->int_value, i == 0 ? 10 : 20);
		ck_assert_str_eq(svc->string_value,
		                 i == 0 ? "unknown_service:app" : "unknown_service:other");
		ck_assert_str_eq(host->string_value, "node-7");
		ck_assert_str_eq(exe->string_value, i == 0 ? "app" : "other");
		ck_assert_ptr_null(resource_attr(rp->resource, "container.id"));
		ck_assert_uint_eq(rp->n_scope_profiles, 1);
		ck_assert_str_eq(rp->scope_profiles[0]->scope->name, "ember");
		ck_assert_str_eq(rp->scope_profiles[0]->scope->version, EMBER_VERSION);
		ck_assert_uint_eq(rp->scope_profiles[0]->n_profiles, 1);
		prof = rp->scope_profiles[0]->profiles[0];
		ck_assert_str_eq(str(d, prof->sample_type->type_strindex), "samples");
		ck_assert_str_eq(str(d, prof->sample_type->unit_strindex), "count");
		ck_assert_str_eq(str(d, prof->period_type->type_strindex), "cpu");
		ck_assert_str_eq(str(d, prof->period_type->unit_strindex), "nanoseconds");
		ck_assert_int_eq(prof->period, 10000000);
		ck_assert_uint_eq(prof->time_unix_nano, p.start_ns);
		ck_assert_uint_eq(prof->duration_nano, 5000000000ull);
		ck_assert_uint_eq(prof->profile_id.len, 16);
		for (size_t j = 0; j < prof->n_samples; j++) {
			const Sample *s = prof->samples[j];
			const AnyValue *tid =
			    attr(d, s->attribute_indices, s->n_attribute_indices, "thread.id");
			const AnyValue *cpu = attr(d, s->attribute_indices, s->n_attribute_indices,
			                           "cpu.logical_number");

			/* Not every fixture sample has timestamps: one total per sample. */
			ck_assert_uint_eq(s->n_values, 1);
			ck_assert_uint_eq(s->n_timestamps_unix_nano, 0);
			ck_assert_ptr_nonnull(tid);
			ck_assert_int_eq(tid->int_value, i == 0 ? 11 : 20);
			ck_assert_int_eq(cpu->int_value, 1);
			if (i == 0)
				ck_assert_str_eq(attr(d, s->attribute_indices,
				                      s->n_attribute_indices, "thread.name")
				                     ->string_value,
				                 "app-worker");
			total += sample_total(s);
			if (!strcmp(leaf(d, s), "leaf_a"))
				leaf_a += sample_total(s);
			if (!strcmp(leaf(d, s), "libfoo.so+0x1234"))
				unsym += sample_total(s);
		}
	}
	ck_assert_int_eq(total, 12);
	ck_assert_int_eq(leaf_a, 6);
	ck_assert_int_eq(unsym, 1);
	/* Mapping of the app carries its GNU build id; locations their frame type. */
	ck_assert_uint_eq(d->n_mapping_table, 3);
	{
		const AnyValue *bid = NULL, *ft;

		for (size_t i = 1; i < d->n_mapping_table; i++)
			if (!strcmp(str(d, d->mapping_table[i]->filename_strindex), "/usr/bin/app"))
				bid = attr(d, d->mapping_table[i]->attribute_indices,
				           d->mapping_table[i]->n_attribute_indices,
				           "process.executable.build_id.gnu");
		ck_assert_ptr_nonnull(bid);
		ck_assert_str_eq(bid->string_value, "0123abcd");
		ft = attr(d, d->location_table[1]->attribute_indices,
		          d->location_table[1]->n_attribute_indices, "profile.frame.type");
		ck_assert_ptr_nonnull(ft);
		ck_assert_str_eq(ft->string_value, "native");
	}
	unpacked_free(r);
	ember_profile_free(&p);
}
END_TEST

START_TEST(timestamped_samples_carry_timestamps_alone)
{
	struct ember_profile p;
	struct ember_sample_key key = {.pid = 5, .tid = 5, .cpu = EMBER_NONE};
	uint32_t stack, loc;
	Request *r;
	const Opentelemetry__Proto__Profiles__V1development__Profile *prof;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	p.start_ns = 1000;
	p.end_ns = 2000;
	p.period_ns = 1000000000ull / 99;
	{
		struct ember_line line = {.function = fixture_fn(&p, "spin")};

		ck_assert_int_eq(ember_profile_add_location(&p, EMBER_NONE, EMBER_FRAME_UNKNOWN,
		                                            0x1234, &line, 1, &loc),
		                 0);
	}
	ck_assert_int_eq(ember_profile_add_stack(&p, &loc, 1, &stack), 0);
	key.stack = stack;
	/* One sample read after the interval ended: the range must widen to cover it. */
	for (uint64_t t = 0; t < 5; t++)
		ck_assert_int_eq(ember_profile_add_sample(&p, &key, 1, 1500 + t * 200), 0);
	r = encode(&p, NULL);
	check_dictionary(r->dictionary);
	prof = r->resource_profiles[0]->scope_profiles[0]->profiles[0];
	ck_assert_int_eq(prof->period, 10101010);
	ck_assert_uint_eq(prof->n_samples, 1);
	/* Each timestamp counts one: Pyroscope refuses a CPU sample with several values. */
	ck_assert_uint_eq(prof->samples[0]->n_values, 0);
	ck_assert_uint_eq(prof->samples[0]->n_timestamps_unix_nano, 5);
	for (size_t i = 0; i < 5; i++) {
		ck_assert_uint_ge(prof->samples[0]->timestamps_unix_nano[i], prof->time_unix_nano);
		ck_assert_uint_lt(prof->samples[0]->timestamps_unix_nano[i],
		                  prof->time_unix_nano + prof->duration_nano);
	}
	/* No cpu known: no cpu attribute; the frame without mapping has no frame type. */
	ck_assert_ptr_null(attr(r->dictionary, prof->samples[0]->attribute_indices,
	                        prof->samples[0]->n_attribute_indices, "cpu.logical_number"));
	ck_assert_uint_eq(r->dictionary->location_table[1]->n_attribute_indices, 0);
	ck_assert_int_eq(r->dictionary->location_table[1]->mapping_index, 0);
	unpacked_free(r);
	ember_profile_free(&p);
}
END_TEST

/* Trace a.. and span b.., the hex of a link (EMBER_LINK_HEX). */
#define LINK_A                                                                                     \
	"0af7651916cd43dd8448eb211c80319c"                                                         \
	"b7ad6b7169203331"
#define LINK_B                                                                                     \
	"4bf92f3577b34da6a3ce929d0e0e4736"                                                         \
	"00f067aa0ba902b7"

START_TEST(samples_carry_their_spans_links)
{
	static const char *const links[] = {LINK_A, LINK_A, LINK_B, NULL, LINK_A};
	struct ember_profile p;
	struct ember_sample_key key = {.tid = 5, .cpu = EMBER_NONE};
	const Dict *d;
	uint32_t loc;
	Request *r;
	int32_t a = -1;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	p.start_ns = 1000;
	p.end_ns = 2000;
	p.period_ns = 1000000;
	{
		struct ember_line line = {.function = fixture_fn(&p, "handle")};

		ck_assert_int_eq(ember_profile_add_location(&p, EMBER_NONE, EMBER_FRAME_UNKNOWN,
		                                            0x1234, &line, 1, &loc),
		                 0);
	}
	ck_assert_int_eq(ember_profile_add_stack(&p, &loc, 1, &key.stack), 0);
	/* One stack under two spans and none, in process 5; the first span again in 6. */
	for (size_t i = 0; i < 5; i++) {
		key.pid = i < 4 ? 5 : 6;
		key.link = 0;
		if (links[i])
			ck_assert_int_eq(ember_profile_intern_cstr(&p, links[i], &key.link), 0);
		ck_assert_int_eq(ember_profile_add_sample(&p, &key, 1, 1100 + i), 0);
	}
	r = encode(&p, NULL);
	d = r->dictionary;
	check_dictionary(d);
	/* The zero link (empty, as Parca wants it) and one per span: deduplicated. */
	ck_assert_uint_eq(d->n_link_table, 3);
	for (size_t i = 0; i < r->n_resource_profiles; i++) {
		const Profile *prof = r->resource_profiles[i]->scope_profiles[0]->profiles[0];

		/* Process 5: the same stack is three samples, told apart by their links. */
		ck_assert_uint_eq(prof->n_samples, i == 0 ? 3 : 1);
		for (size_t j = 0; j < prof->n_samples; j++) {
			const Sample *s = prof->samples[j];
			const Opentelemetry__Proto__Profiles__V1development__Link *l =
			    d->link_table[s->link_index];
			char hex[EMBER_LINK_HEX + 1];

			ck_assert_int_lt(s->link_index, (int32_t)d->n_link_table);
			if (!s->link_index) {
				ck_assert_uint_eq(s->n_timestamps_unix_nano, 1);
				continue;
			}
			ck_assert_uint_eq(l->trace_id.len, 16);
			ck_assert_uint_eq(l->span_id.len, 8);
			sodium_bin2hex(hex, 33, l->trace_id.data, 16);
			sodium_bin2hex(hex + 32, 17, l->span_id.data, 8);
			if (!strcmp(hex, LINK_A)) {
				/* Twice in process 5, once in 6: one entry. */
				ck_assert_uint_eq(s->n_timestamps_unix_nano, i == 0 ? 2 : 1);
				ck_assert(a < 0 || a == s->link_index);
				a = s->link_index;
			} else {
				ck_assert_str_eq(hex, LINK_B);
				ck_assert_uint_eq(s->n_timestamps_unix_nano, 1);
			}
		}
	}
	ck_assert_int_gt(a, 0);
	unpacked_free(r);
	ember_profile_free(&p);
}
END_TEST

START_TEST(goroutine_labels_are_sample_attributes)
{
	struct ember_profile p;
	struct ember_sample_key key = {.pid = 7, .tid = 8, .cpu = EMBER_NONE};
	const Sample *s;
	const Dict *d;
	uint32_t loc;
	Request *r;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	p.start_ns = 1000;
	p.end_ns = 2000;
	p.period_ns = 1000000;
	{
		struct ember_line line = {.function = fixture_fn(&p, "main.spanA")};

		ck_assert_int_eq(ember_profile_add_location(&p, EMBER_NONE, EMBER_FRAME_GO, 0x1234,
		                                            &line, 1, &loc),
		                 0);
	}
	ck_assert_int_eq(ember_profile_add_stack(&p, &loc, 1, &key.stack), 0);
	/* A label named as one of ember's own attributes does not replace it. */
	ck_assert_int_eq(
	    ember_profile_intern_cstr(&p, "span=a\nthread.id=99\nworker=1\n", &key.labels), 0);
	ck_assert_int_eq(ember_profile_add_sample(&p, &key, 1, 1500), 0);
	r = encode(&p, NULL);
	d = r->dictionary;
	check_dictionary(d);
	s = r->resource_profiles[0]->scope_profiles[0]->profiles[0]->samples[0];
	ck_assert_str_eq(
	    attr(d, s->attribute_indices, s->n_attribute_indices, "span")->string_value, "a");
	ck_assert_str_eq(
	    attr(d, s->attribute_indices, s->n_attribute_indices, "worker")->string_value, "1");
	ck_assert_int_eq(
	    attr(d, s->attribute_indices, s->n_attribute_indices, "thread.id")->int_value, 8);
	ck_assert_uint_eq(s->n_attribute_indices, 3);
	unpacked_free(r);
	ember_profile_free(&p);
}
END_TEST

START_TEST(off_cpu_time_is_a_second_profile_per_process)
{
	struct ember_profile p;
	Request *r;
	const Dict *d;
	size_t nres;
	int64_t off = 0;

	fixture_build_off_cpu(&p);
	r = encode(&p, &nres);
	d = r->dictionary;
	check_dictionary(d);
	ck_assert_uint_eq(nres, 2);
	for (size_t i = 0; i < r->n_resource_profiles; i++) {
		const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
		    r->resource_profiles[i]->scope_profiles[0];
		bool app =
		    resource_attr(r->resource_profiles[i]->resource, "process.pid")->int_value ==
		    10;

		/* app has CPU samples and off-CPU time, other CPU samples only. */
		ck_assert_uint_eq(sp->n_profiles, app ? 2 : 1);
		ck_assert_str_eq(str(d, sp->profiles[0]->sample_type->type_strindex), "samples");
		if (!app)
			continue;
		ck_assert_str_eq(str(d, sp->profiles[1]->sample_type->type_strindex), "off_cpu");
		ck_assert_str_eq(str(d, sp->profiles[1]->sample_type->unit_strindex),
		                 "nanoseconds");
		ck_assert_uint_eq(sp->profiles[1]->n_samples, 2);
		/* Present (Parca refuses a Profile without one), empty, and no period. */
		ck_assert_ptr_nonnull(sp->profiles[1]->period_type);
		ck_assert_int_eq(sp->profiles[1]->period_type->type_strindex, 0);
		ck_assert_int_eq(sp->profiles[1]->period_type->unit_strindex, 0);
		ck_assert_int_eq(sp->profiles[1]->period, 0);
		ck_assert_ptr_nonnull(sp->profiles[0]->period_type);
		ck_assert_str_eq(str(d, sp->profiles[0]->period_type->type_strindex), "cpu");
		for (size_t j = 0; j < sp->profiles[1]->n_samples; j++) {
			const Sample *s = sp->profiles[1]->samples[j];
			const AnyValue *w =
			    attr(d, s->attribute_indices, s->n_attribute_indices, "off_cpu.wait");

			ck_assert_ptr_nonnull(w);
			ck_assert_uint_eq(s->n_values, 1);
			ck_assert_uint_eq(s->n_timestamps_unix_nano, 0);
			ck_assert_str_eq(w->string_value, s->values[0] == 3000000000ll
			                                      ? "futex"
			                                      : "uninterruptible");
			off += s->values[0];
		}
		/* The CPU profile keeps its timestamps per sample. */
		for (size_t j = 0; j < sp->profiles[0]->n_samples; j++)
			ck_assert_ptr_null(attr(d, sp->profiles[0]->samples[j]->attribute_indices,
			                        sp->profiles[0]->samples[j]->n_attribute_indices,
			                        "off_cpu.wait"));
	}
	ck_assert_int_eq(off, 4000000000ll);
	unpacked_free(r);
	ember_profile_free(&p);
}
END_TEST

START_TEST(process_facts_and_configuration_become_resource_attributes)
{
	struct ember_profile p;
	struct ember_process_attrs pa = {.pid = 10};
	const Resource *res;
	Request *r;

	fixture_build(&p);
	ember_strlcpy(p.service_name, "checkout", sizeof(p.service_name));
	ember_strlcpy(p.resource_attrs,
	              "deployment.environment=prod\nservice.name=ignored\nteam=a=b\n",
	              sizeof(p.resource_attrs));
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "/opt/shop/bin/checkoutd", &pa.exe_path), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(
			     &p, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			     &pa.container_id),
	                 0);
	ck_assert_int_eq(ember_profile_set_process(&p, &pa), 0);
	ck_assert_ptr_nonnull(ember_profile_find_process(&p, 10));
	ck_assert_ptr_null(ember_profile_find_process(&p, 20));
	r = encode(&p, NULL);
	res = r->resource_profiles[0]->resource;
	ck_assert_str_eq(resource_attr(res, "service.name")->string_value, "checkout");
	ck_assert_str_eq(resource_attr(res, "process.executable.path")->string_value,
	                 "/opt/shop/bin/checkoutd");
	ck_assert_str_eq(resource_attr(res, "process.executable.name")->string_value, "checkoutd");
	ck_assert_uint_eq(strlen(resource_attr(res, "container.id")->string_value), 64);
	ck_assert_str_eq(resource_attr(res, "deployment.environment")->string_value, "prod");
	ck_assert_str_eq(resource_attr(res, "team")->string_value, "a=b");
	{
		size_t nservice = 0;

		for (size_t i = 0; i < res->n_attributes; i++)
			nservice += !strcmp(res->attributes[i]->key, "service.name");
		ck_assert_uint_eq(nservice, 1);
	}
	/* The other process has no facts: no path, no container. */
	res = r->resource_profiles[1]->resource;
	ck_assert_ptr_null(resource_attr(res, "process.executable.path"));
	ck_assert_ptr_null(resource_attr(res, "container.id"));
	ck_assert_str_eq(resource_attr(res, "service.name")->string_value, "checkout");
	unpacked_free(r);
	ember_profile_free(&p);
}
END_TEST

/* nprocs processes (pid 100 on), each with nstacks stacks of 3 frames whose leaf is its own. */
static void build_many(struct ember_profile *p, int nprocs, int nstacks)
{
	struct ember_mapping m = {.start = 0x400000, .limit = 0x900000};
	uint32_t map, locs[3], stack;
	char name[64];

	fixture_init(p);
	ck_assert_int_eq(ember_profile_intern_cstr(p, "/usr/bin/many", &m.filename), 0);
	ck_assert_int_eq(ember_profile_add_mapping(p, &m, &map), 0);
	locs[2] = fixture_loc(p, map, 0x401000, "main");
	locs[1] = fixture_loc(p, map, 0x402000, "work");
	for (int pr = 0; pr < nprocs; pr++) {
		struct ember_sample_key key = {.pid = 100 + (uint32_t)pr, .tid = 100 + (uint32_t)pr};

		snprintf(name, sizeof(name), "proc%d", pr);
		ck_assert_int_eq(ember_profile_intern_cstr(p, name, &key.comm), 0);
		for (int i = 0; i < nstacks; i++) {
			snprintf(name, sizeof(name), "leaf_of_process_%d_number_%d", pr, i);
			locs[0] = fixture_loc(p, map, 0x500000 + (uint64_t)(pr * nstacks + i) * 16,
			                      name);
			ck_assert_int_eq(ember_profile_add_stack(p, locs, 3, &stack), 0);
			key.stack = stack;
			ck_assert_int_eq(ember_profile_add_sample(p, &key, 1 + (uint64_t)(i % 3), 0),
			                 0);
		}
	}
}

struct split_seen {
	size_t requests, max_len;
	uint64_t sink_samples;
	uint64_t per_pid[64];     /* samples counted in the requests, by pid - 100 */
	unsigned int seen_in[64]; /* how many requests hold the process */
};

static int take_request(void *ctx, uint8_t *buf, size_t len, uint64_t nsamples)
{
	struct split_seen *seen = ctx;
	Request *r =
	    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, buf);

	ck_assert_ptr_nonnull(r);
	/* Each of Check's asserts costs a write: the first request's dictionary only. */
	if (!seen->requests)
		check_dictionary(r->dictionary);
	seen->requests++;
	seen->max_len = len > seen->max_len ? len : seen->max_len;
	seen->sink_samples += nsamples;
	for (size_t i = 0; i < r->n_resource_profiles; i++) {
		int64_t pid = resource_attr(r->resource_profiles[i]->resource, "process.pid")->int_value;
		const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
		    r->resource_profiles[i]->scope_profiles[0];

		ck_assert(pid >= 100 && pid < 164);
		seen->seen_in[pid - 100]++;
		for (size_t j = 0; j < sp->n_profiles; j++)
			for (size_t k = 0; k < sp->profiles[j]->n_samples; k++)
				seen->per_pid[pid - 100] += (uint64_t)sample_total(sp->profiles[j]->samples[k]);
	}
	unpacked_free(r);
	free(buf);
	return 0;
}

/*
 * What a process published of itself (OTEP 4719) joins its resource: its service.name over
 * --service-name and the guess, its other attributes over the configured ones; never over
 * ember's facts (a process cannot claim another pid or executable).
 */
START_TEST(a_process_context_joins_its_resource)
{
	struct ember_profile p;
	struct ember_process_attrs pa = {.pid = 10};
	const Resource *res;
	Request *r;

	fixture_build(&p);
	ember_strlcpy(p.service_name, "configured", sizeof(p.service_name));
	ember_strlcpy(p.resource_attrs, "deployment.environment=configured\nteam=a\n",
	              sizeof(p.resource_attrs));
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "/opt/shop/bin/checkoutd", &pa.exe_path), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&p,
	                                           "service.name=checkout\nprocess.pid=1\n"
	                                           "process.executable.name=sshd\n"
	                                           "deployment.environment=prod\n",
	                                           &pa.context),
	                 0);
	ck_assert_int_eq(ember_profile_set_process(&p, &pa), 0);
	r = encode(&p, NULL);
	res = r->resource_profiles[0]->resource;
	ck_assert_str_eq(resource_attr(res, "service.name")->string_value, "checkout");
	ck_assert_int_eq(resource_attr(res, "process.pid")->int_value, 10);
	ck_assert_str_eq(resource_attr(res, "process.executable.name")->string_value, "checkoutd");
	ck_assert_str_eq(resource_attr(res, "deployment.environment")->string_value, "prod");
	ck_assert_str_eq(resource_attr(res, "team")->string_value, "a");
	for (size_t i = 0; i < res->n_attributes; i++)
		for (size_t j = i + 1; j < res->n_attributes; j++)
			ck_assert_str_ne(res->attributes[i]->key, res->attributes[j]->key);
	/* The other process published nothing: the configured name. */
	ck_assert_str_eq(resource_attr(r->resource_profiles[1]->resource, "service.name")->string_value,
	                 "configured");
	unpacked_free(r);
	ember_profile_free(&p);
}
END_TEST

START_TEST(large_profiles_go_as_requests_under_the_limit)
{
	struct ember_profile p;
	struct split_seen seen = {0};
	uint64_t want[64] = {0}, total = 0;
	uint8_t *buf;
	size_t len, max;

	build_many(&p, 20, 30);
	for (size_t i = 0; i < p.samples.len; i++) {
		const struct ember_sample *s = ember_profile_sample(&p, (uint32_t)i);

		want[s->key.pid - 100] += s->count;
		total += s->count;
	}
	ck_assert_int_eq(ember_otlp_encode(&p, &buf, &len, NULL), 0);
	free(buf);
	/* Under the limit: one request, as ember_otlp_encode makes it. */
	ck_assert_int_eq(ember_otlp_encode_split(&p, len, take_request, &seen), 0);
	ck_assert_uint_eq(seen.requests, 1);
	ck_assert_uint_eq(seen.max_len, len);
	/* A fifth of it: several requests, each under the limit, every sample in one of them,
	 * and each process whole in one request (a process alone is far smaller). */
	max = len / 5;
	memset(&seen, 0, sizeof(seen));
	ck_assert_int_eq(ember_otlp_encode_split(&p, max, take_request, &seen), 0);
	ck_assert_uint_ge(seen.requests, 5);
	ck_assert_uint_le(seen.max_len, max);
	ck_assert_uint_eq(seen.sink_samples, total);
	for (int pr = 0; pr < 20; pr++) {
		ck_assert_uint_eq(seen.per_pid[pr], want[pr]);
		ck_assert_uint_eq(seen.seen_in[pr], 1);
	}
	ember_profile_free(&p);

	/* One process larger than the limit: its samples in several requests, each with its
	 * resource, none lost. */
	build_many(&p, 1, 300);
	ck_assert_int_eq(ember_otlp_encode(&p, &buf, &len, NULL), 0);
	free(buf);
	memset(&seen, 0, sizeof(seen));
	ck_assert_int_eq(ember_otlp_encode_split(&p, len / 3, take_request, &seen), 0);
	ck_assert_uint_ge(seen.requests, 3);
	ck_assert_uint_le(seen.max_len, len / 3);
	ck_assert_uint_eq(seen.seen_in[0], seen.requests);
	ck_assert_uint_eq(seen.per_pid[0], seen.sink_samples);
	ck_assert_uint_eq(seen.sink_samples, (uint64_t)100 * (1 + 2 + 3));
	ember_profile_free(&p);
}
END_TEST

/* The OTLP location of the profile's location id, and its mapping. */
static const Opentelemetry__Proto__Profiles__V1development__Location *
otlp_location(const Dict *d, uint64_t address, int32_t mapping)
{
	for (size_t i = 1; i < d->n_location_table; i++)
		if (d->location_table[i]->address == address &&
		    d->location_table[i]->mapping_index == mapping)
			return d->location_table[i];
	ck_abort_msg("no location at %#" PRIx64, address);
	return NULL;
}

static int32_t otlp_mapping(const Dict *d, const char *file)
{
	for (size_t i = 1; i < d->n_mapping_table; i++)
		if (!strcmp(str(d, d->mapping_table[i]->filename_strindex), file))
			return (int32_t)i;
	ck_abort_msg("no mapping of %s", file);
	return 0;
}

/*
 * libc mapped at 0x7f0000000000 from file offset 0x1000, which is ELF address 0x1000: OTLP
 * carries the ELF address (what a backend resolves against the file its build id names). A
 * frame ember could not name goes as a bare address: no made-up function name, which would
 * tell Pyroscope the mapping is named. With backend symbols, every frame of a file with a
 * GNU build id goes so; others (no build id, no file) keep their names.
 */
START_TEST(addresses_are_elf_addresses_and_unnamed_frames_bare)
{
	struct ember_mapping libc = {.start = 0x7f0000000000,
	                             .limit = 0x7f0000100000,
	                             .file_offset = 0x1000,
	                             .has_file_vaddr = true,
	                             .file_vaddr = 0x1000};
	struct ember_mapping app = {.start = 0x400000, .limit = 0x500000, .has_file_vaddr = true,
	                            .file_vaddr = 0x400000};
	struct ember_sample_key key = {.pid = 10, .tid = 10, .cpu = 0};
	uint32_t libc_map, app_map, locs[4], stack;
	struct ember_profile p;

	fixture_init(&p);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "/usr/lib/libc.so.6", &libc.filename), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "c0ffee", &libc.gnu_build_id), 0);
	ck_assert_int_eq(ember_profile_add_mapping(&p, &libc, &libc_map), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "/usr/bin/app", &app.filename), 0);
	ck_assert_int_eq(ember_profile_add_mapping(&p, &app, &app_map), 0);
	ck_assert_int_eq(ember_profile_intern_cstr(&p, "app", &key.comm), 0);
	locs[0] = fixture_loc(&p, libc_map, 0x7f0000000600, NULL);
	locs[1] = fixture_loc(&p, libc_map, 0x7f0000000500, "memcpy");
	locs[2] = fixture_loc(&p, app_map, 0x401000, "main");
	locs[3] = fixture_loc(&p, EMBER_NONE, 0x10, "interpreted");
	ck_assert_int_eq(ember_profile_add_stack(&p, locs, 4, &stack), 0);
	key.stack = stack;
	ck_assert_int_eq(ember_profile_add_sample(&p, &key, 1, 0), 0);
	/* A second process loaded the same libc elsewhere: in ELF addresses, the same mapping,
	 * locations and stack (check_dictionary fails on duplicates). */
	libc.start += 0x1000000000;
	libc.limit += 0x1000000000;
	ck_assert_int_eq(ember_profile_add_mapping(&p, &libc, &libc_map), 0);
	locs[0] = fixture_loc(&p, libc_map, 0x7f1000000600, NULL);
	locs[1] = fixture_loc(&p, libc_map, 0x7f1000000500, "memcpy");
	ck_assert_int_eq(ember_profile_add_stack(&p, locs, 4, &stack), 0);
	key.stack = stack;
	key.pid = key.tid = 11;
	ck_assert_int_eq(ember_profile_add_sample(&p, &key, 1, 0), 0);

	for (int side = EMBER_OTLP_SYMBOLS_HOST; side < EMBER_OTLP_SYMBOLS_MAX; side++) {
		Request *r;
		const Dict *d;
		int32_t lm, am;
		const Opentelemetry__Proto__Profiles__V1development__Location *unnamed, *named;

		p.otlp_symbols = (uint32_t)side;
		r = encode(&p, NULL);
		d = r->dictionary;
		check_dictionary(d);
		lm = otlp_mapping(d, "/usr/lib/libc.so.6");
		am = otlp_mapping(d, "/usr/bin/app");
		ck_assert_uint_eq(d->mapping_table[lm]->memory_start, 0x1000);
		ck_assert_uint_eq(d->mapping_table[lm]->memory_limit, 0x101000);
		ck_assert_uint_eq(d->mapping_table[lm]->file_offset, 0x1000);
		unnamed = otlp_location(d, 0x1600, lm);
		named = otlp_location(d, 0x1500, lm);
		ck_assert_uint_eq(unnamed->n_lines, 0);
		for (size_t i = 1; i < d->n_function_table; i++)
			ck_assert_ptr_null(strstr(str(d, d->function_table[i]->name_strindex), "+0x"));
		if (side == EMBER_OTLP_SYMBOLS_HOST) {
			ck_assert_uint_eq(named->n_lines, 1);
			ck_assert_str_eq(
			    str(d, d->function_table[named->lines[0]->function_index]->name_strindex),
			    "memcpy");
		} else {
			ck_assert_uint_eq(named->n_lines, 0);
		}
		ck_assert_uint_eq(otlp_location(d, 0x401000, am)->n_lines, 1);
		ck_assert_uint_eq(otlp_location(d, 0x10, 0)->n_lines, 1);
		ck_assert_uint_eq(d->n_mapping_table, 3);
		ck_assert_uint_eq(d->n_location_table, 5);
		ck_assert_uint_eq(d->n_stack_table, 2);
		unpacked_free(r);
	}
	ember_profile_free(&p);
}
END_TEST

START_TEST(empty_profile_is_a_valid_request)
{
	struct ember_profile p;
	Request *r;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	r = encode(&p, NULL);
	ck_assert_uint_eq(r->n_resource_profiles, 0);
	check_dictionary(r->dictionary);
	unpacked_free(r);
	ember_profile_free(&p);
}
END_TEST

START_TEST(output_table_knows_otlp)
{
	enum ember_format f;

	ck_assert_int_eq(ember_format_from_path("x.otlp", &f), 0);
	ck_assert_int_eq(f, EMBER_FORMAT_OTLP);
	ck_assert_int_eq(ember_format_parse("otlp", &f), 0);
	ck_assert_str_eq(ember_format_name(EMBER_FORMAT_OTLP), "otlp");
}
END_TEST

/* protoc prints fields its schema does not know by number ("  12: 5"). */
static bool has_unknown_field(const char *text)
{
	for (const char *line = text; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *c = line;

		while (*c == ' ')
			c++;
		if (*c >= '0' && *c <= '9') {
			while (*c >= '0' && *c <= '9')
				c++;
			if (*c == ':' || *c == ' ')
				return true;
		}
	}
	return false;
}

/* protoc decodes the bytes with the upstream schema (tests/upstream). */
START_TEST(upstream_schema_decodes_it)
{
	const char *src = getenv("EMBER_SOURCE_DIR");
	char dir[1024], cmd[4096], path[] = "/tmp/ember-otlp-XXXXXX", out[1 << 16];
	struct ember_profile p;
	size_t n;
	uint8_t *buf;
	size_t len;
	FILE *f;
	int fd, status;

	snprintf(dir, sizeof(dir), "%s/tests/upstream/opentelemetry-proto", src ? src : "..");
	ck_assert_msg(!access(dir, R_OK), "%s: %s", dir, strerror(errno));
	if (system("command -v protoc >/dev/null 2>&1"))
		EMBER_SKIP("protoc is missing (Debian: protobuf-compiler)");
	fixture_build(&p);
	ck_assert_int_eq(ember_otlp_encode(&p, &buf, &len, NULL), 0);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
	snprintf(cmd, sizeof(cmd),
	         "protoc -I'%s' "
	         "--decode=opentelemetry.proto.collector.profiles.v1development."
	         "ExportProfilesServiceRequest "
	         "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto "
	         "< '%s' 2>&1",
	         dir, path);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	status = pclose(f);
	unlink(path);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "protoc: %s", out);
	ck_assert_ptr_nonnull(strstr(out, "string_table: \"leaf_a\""));
	ck_assert_ptr_nonnull(strstr(out, "key: \"process.pid\""));
	ck_assert_ptr_nonnull(strstr(out, "stack_table {"));
	/* Nothing the upstream schema does not know (unknown fields print as numbers). */
	ck_assert_msg(!has_unknown_field(out), "unknown field in: %s", out);
	free(buf);
	ember_profile_free(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("out_otlp");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, encodes_one_resource_per_process_and_a_valid_dictionary);
	tcase_add_test(tc, timestamped_samples_carry_timestamps_alone);
	tcase_add_test(tc, process_facts_and_configuration_become_resource_attributes);
	tcase_add_test(tc, empty_profile_is_a_valid_request);
	tcase_add_test(tc, addresses_are_elf_addresses_and_unnamed_frames_bare);
	tcase_add_test(tc, output_table_knows_otlp);
	tcase_add_test(tc, upstream_schema_decodes_it);
	tcase_add_test(tc, off_cpu_time_is_a_second_profile_per_process);
	tcase_add_test(tc, samples_carry_their_spans_links);
	tcase_add_test(tc, goroutine_labels_are_sample_attributes);
	tcase_add_test(tc, large_profiles_go_as_requests_under_the_limit);
	tcase_add_test(tc, a_process_context_joins_its_resource);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
