// SPDX-License-Identifier: Apache-2.0
/*
 * The process context reader (OTEP 4719) on contexts laid out byte by byte here: the payload
 * encoded by hand (protobuf's wire format, not ember's generated code), the header in a fake
 * memory; then what a hostile or careless publisher does: a wrong signature or version, an
 * update in progress, a context rewritten while it is read, a payload past the cap, a
 * pointer to nothing, a payload that is no protobuf, odd keys, values and too many of them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "symbolizer/process/maps_parser.h"
#include "symbolizer/process/process_context.h"
#include "tests/fuzz/fuzz_mem.h"
#include "tests/workloads/otel_ctx_pb.h"

/* ProcessContext{resource{attributes: the pairs}, attributes: threadlocal.schema_version}. */
static void context_payload(struct pb *out)
{
	struct pb resource = {0};

	pb_key_value(&resource, 1, "service.name", "checkout", 0);
	pb_key_value(&resource, 1, "deployment.environment", "prod", 0);
	pb_key_value(&resource, 1, "process.pid", NULL, 1);
	pb_key_value(&resource, 1, "service.name", "second", 0); /* a duplicate: the first stands */
	pb_key_value(&resource, 1, "bad=key", "x", 0);
	pb_key_value(&resource, 1, "multi", "line\nvalue", 0);
	pb_bytes(out, 1, resource.b, resource.n);
	pb_key_value(out, 2, "threadlocal.schema_version", "tlsdesc_v1_dev", 0);
}

/* A memory of a header at FUZZ_MEM_BASE and the payload right after it. */
struct image {
	uint8_t b[16384];
	size_t n;
};

static void header(struct image *im, const char *sig, uint32_t version, uint32_t size,
                   uint64_t published, uint64_t payload)
{
	memcpy(im->b, sig, 8);
	memcpy(im->b + 8, &version, 4);
	memcpy(im->b + 12, &size, 4);
	memcpy(im->b + 16, &published, 8);
	memcpy(im->b + 24, &payload, 8);
}

static void image(struct image *im, const struct pb *payload)
{
	header(im, "OTEL_CTX", 2, (uint32_t)payload->n, 12345, FUZZ_MEM_BASE + 32);
	memcpy(im->b + 32, payload->b, payload->n);
	im->n = 32 + payload->n;
}

static int read_image(struct image *im, struct ember_process_context *c)
{
	struct fuzz_mem m = {im->b, im->n};

	return ember_process_context_read(fuzz_mem_read, &m, FUZZ_MEM_BASE, c);
}

START_TEST(reads_a_published_context)
{
	struct ember_process_context c;
	struct image im;
	struct pb p = {0};

	context_payload(&p);
	image(&im, &p);
	ck_assert_int_eq(read_image(&im, &c), 0);
	ck_assert_uint_eq(c.published_ns, 12345);
	ck_assert_str_eq(c.resource,
	                 "service.name=checkout\ndeployment.environment=prod\nprocess.pid=1\n");
	ck_assert_str_eq(c.attributes, "threadlocal.schema_version=tlsdesc_v1_dev\n");
	ck_assert_uint_eq(c.dropped, 3); /* the duplicate, the key with '=', the two-line value */
}
END_TEST

START_TEST(refuses_what_is_no_whole_context)
{
	struct ember_process_context c;
	struct image im;
	struct pb p = {0};

	context_payload(&p);
	image(&im, &p);
	header(&im, "OTEL_CTY", 2, (uint32_t)p.n, 1, FUZZ_MEM_BASE + 32);
	ck_assert_int_eq(read_image(&im, &c), -ENOENT);
	header(&im, "OTEL_CTX", 3, (uint32_t)p.n, 1, FUZZ_MEM_BASE + 32);
	ck_assert_int_eq(read_image(&im, &c), -ENOENT);
	header(&im, "OTEL_CTX", 2, (uint32_t)p.n, 0, FUZZ_MEM_BASE + 32); /* being updated */
	ck_assert_int_eq(read_image(&im, &c), -EAGAIN);
	header(&im, "OTEL_CTX", 2, EMBER_PROCESS_CONTEXT_MAX_PAYLOAD + 1, 1, FUZZ_MEM_BASE + 32);
	ck_assert_int_eq(read_image(&im, &c), -E2BIG);
	header(&im, "OTEL_CTX", 2, (uint32_t)p.n, 1, 0xdead0000); /* a pointer to nothing */
	ck_assert_int_eq(read_image(&im, &c), -EFAULT);
	header(&im, "OTEL_CTX", 2, 16, 1, FUZZ_MEM_BASE); /* the header is no ProcessContext */
	ck_assert_int_eq(read_image(&im, &c), -EBADMSG);
	header(&im, "OTEL_CTX", 2, 0, 1, 0); /* empty: nothing published, but whole */
	ck_assert_int_eq(read_image(&im, &c), 0);
	ck_assert_str_eq(c.resource, "");
}
END_TEST

/* A memory whose publication time changes on each header read for the first torn reads. */
struct tearing {
	struct fuzz_mem m;
	uint8_t *b;
	int torn, reads;
};

static int tearing_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct tearing *t = ctx;
	int err = fuzz_mem_read(&t->m, addr, buf, len);

	/* After each payload read, the publisher writes a new context (time + 1). */
	if (!err && addr != FUZZ_MEM_BASE && addr != FUZZ_MEM_BASE + 16 && t->reads++ < t->torn) {
		uint64_t ts;

		memcpy(&ts, t->b + 16, 8);
		ts++;
		memcpy(t->b + 16, &ts, 8);
	}
	return err;
}

START_TEST(a_context_rewritten_while_read_is_read_again)
{
	struct ember_process_context c;
	struct image im;
	struct pb p = {0};
	struct tearing t;

	context_payload(&p);
	image(&im, &p);
	t = (struct tearing){{im.b, im.n}, im.b, 2, 0};
	ck_assert_int_eq(ember_process_context_read(tearing_read, &t, FUZZ_MEM_BASE, &c), 0);
	ck_assert_uint_eq(c.published_ns, 12347);
	ck_assert_str_eq(c.attributes, "threadlocal.schema_version=tlsdesc_v1_dev\n");
	t = (struct tearing){{im.b, im.n}, im.b, 1000, 0};
	ck_assert_int_eq(ember_process_context_read(tearing_read, &t, FUZZ_MEM_BASE, &c), -EAGAIN);
}
END_TEST

START_TEST(attributes_are_bounded)
{
	struct ember_process_context c;
	struct pb resource = {0}, p = {0};
	char key[32], big[1100];

	for (int i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		pb_key_value(&resource, 1, key, "v", 0);
	}
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	pb_key_value(&resource, 1, "big", big, 0);
	pb_bytes(&p, 1, resource.b, resource.n);
	ck_assert_int_eq(ember_process_context_parse(p.b, p.n, &c), 0);
	ck_assert_uint_eq(c.dropped, 40 - EMBER_PROCESS_CONTEXT_MAX_ATTRS + 1);
	ck_assert_ptr_nonnull(strstr(c.resource, "k31=v\n"));
	ck_assert_ptr_null(strstr(c.resource, "k32="));
	ck_assert_ptr_null(strstr(c.resource, "big="));
}
END_TEST

START_TEST(the_thread_contexts_key_map_is_kept)
{
	static const char *const keys[] = {"http.route", "bad=key", "worker"};
	struct ember_process_context c;
	struct pb p = {0};

	pb_key_value(&p, 2, "threadlocal.schema_version", "tlsdesc_v1_dev", 0);
	pb_key_strings(&p, 2, "threadlocal.attribute_key_map", keys, 3);
	ck_assert_int_eq(ember_process_context_parse(p.b, p.n, &c), 0);
	/* Its names by index; one that cannot be a key is "" (its attribute goes unnamed). */
	ck_assert_uint_eq(c.nkeys, 3);
	ck_assert_str_eq(c.keys[0], "http.route");
	ck_assert_str_eq(c.keys[1], "");
	ck_assert_str_eq(c.keys[2], "worker");
	ck_assert_str_eq(c.attributes, "threadlocal.schema_version=tlsdesc_v1_dev\n");
	ck_assert_uint_eq(c.dropped, 0);
}
END_TEST

START_TEST(maps_name_the_context)
{
	static const char maps[] =
	    "55d1c0a02000-55d1c0a07000 r-xp 00002000 fd:01 1234567 /usr/bin/app\n"
	    "7f0a1c000000-7f0a1c001000 r--s 00000000 00:01 77 /memfd:OTEL_CTX (deleted)\n";
	static const char anon[] =
	    "7f0a1c000000-7f0a1c001000 rw-p 00000000 00:00 0 [anon:OTEL_CTX]\n";
	static const char unreadable[] =
	    "7f0a1c000000-7f0a1c001000 ---p 00000000 00:00 0 [anon:OTEL_CTX]\n";
	struct ember_maps m;

	ck_assert_int_eq(ember_maps_parse(maps, strlen(maps), &m), 0);
	ck_assert_uint_eq(m.context_addr, 0x7f0a1c000000);
	ck_assert_int_eq(ember_maps_keep_executable(&m), 0);
	ck_assert_uint_eq(m.count, 1);
	ck_assert_uint_eq(m.context_addr, 0x7f0a1c000000); /* kept with the executable ones */
	ember_maps_free(&m);
	ck_assert_int_eq(ember_maps_parse(anon, strlen(anon), &m), 0);
	ck_assert_uint_eq(m.context_addr, 0x7f0a1c000000);
	ember_maps_free(&m);
	ck_assert_int_eq(ember_maps_parse(unreadable, strlen(unreadable), &m), 0);
	ck_assert_uint_eq(m.context_addr, 0);
	ember_maps_free(&m);
}
END_TEST

static Suite *process_context_suite(void)
{
	Suite *s = suite_create("process_context");
	TCase *tc = tcase_create("process_context");

	tcase_add_test(tc, reads_a_published_context);
	tcase_add_test(tc, refuses_what_is_no_whole_context);
	tcase_add_test(tc, a_context_rewritten_while_read_is_read_again);
	tcase_add_test(tc, attributes_are_bounded);
	tcase_add_test(tc, maps_name_the_context);
	tcase_add_test(tc, the_thread_contexts_key_map_is_kept);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(process_context_suite)
