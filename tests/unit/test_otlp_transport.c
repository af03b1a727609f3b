// SPDX-License-Identifier: Apache-2.0
/* The transport's pure parts: retry decisions, gRPC framing, answers, RetryInfo, gzip. */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "otlp/profiles_service.pb-c.h"
#include "otlp/rpc_status.pb-c.h"
#include "symbolizer/formats/gzip.h"
#include "symbolizer/export/otlp_transport.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse
    Response;
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesPartialSuccess
    Partial;

static uint8_t *pack_partial(int64_t rejected, const char *msg, size_t *len)
{
	Response r;
	Partial p;
	uint8_t *buf;

	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__init(
	    &r);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_partial_success__init(
	    &p);
	p.rejected_profiles = rejected;
	p.error_message = (char *)msg;
	r.partial_success = &p;
	*len =
	    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__get_packed_size(
		&r);
	buf = malloc(*len + 1);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__pack(
	    &r, buf);
	return buf;
}

START_TEST(retry_decisions_follow_the_otlp_specification)
{
	ck_assert_int_eq(ember_otlp_http_outcome(200), EMBER_SEND_OK);
	ck_assert_int_eq(ember_otlp_http_outcome(204), EMBER_SEND_OK);
	for (int s = 0; s < 4; s++)
		ck_assert_int_eq(ember_otlp_http_outcome((int[]){429, 502, 503, 504}[s]),
		                 EMBER_SEND_RETRY);
	for (int s = 0; s < 6; s++)
		ck_assert_int_eq(ember_otlp_http_outcome((int[]){400, 401, 403, 404, 413, 500}[s]),
		                 EMBER_SEND_REJECTED);
	ck_assert_int_eq(ember_otlp_grpc_outcome(EMBER_GRPC_OK), EMBER_SEND_OK);
	ck_assert_int_eq(ember_otlp_grpc_outcome(EMBER_GRPC_UNAVAILABLE), EMBER_SEND_RETRY);
	ck_assert_int_eq(ember_otlp_grpc_outcome(EMBER_GRPC_RESOURCE_EXHAUSTED), EMBER_SEND_RETRY);
	ck_assert_int_eq(ember_otlp_grpc_outcome(EMBER_GRPC_DEADLINE_EXCEEDED), EMBER_SEND_RETRY);
	ck_assert_int_eq(ember_otlp_grpc_outcome(EMBER_GRPC_INVALID_ARGUMENT), EMBER_SEND_REJECTED);
	ck_assert_int_eq(ember_otlp_grpc_outcome(EMBER_GRPC_UNAUTHENTICATED), EMBER_SEND_REJECTED);
	ck_assert_int_eq(ember_otlp_grpc_outcome(EMBER_GRPC_UNIMPLEMENTED), EMBER_SEND_REJECTED);
	ck_assert_int_eq(ember_grpc_status_from_http(503), EMBER_GRPC_UNAVAILABLE);
	ck_assert_int_eq(ember_grpc_status_from_http(404), EMBER_GRPC_UNIMPLEMENTED);
	ck_assert_int_eq(ember_grpc_status_from_http(400), EMBER_GRPC_INTERNAL);
}
END_TEST

START_TEST(grpc_frames_and_answers)
{
	struct ember_send_result r = {0};
	uint8_t *msg, *frame, *z;
	size_t len, flen, zlen;

	msg = pack_partial(3, "too many samples", &len);
	ck_assert_int_eq(ember_grpc_frame(msg, len, false, &frame, &flen), 0);
	ck_assert_uint_eq(flen, len + 5);
	ck_assert_uint_eq(frame[0], 0);
	ck_assert_uint_eq((size_t)frame[4] | (size_t)frame[3] << 8, len);
	ck_assert_int_eq(ember_grpc_parse_response(frame, flen, NULL, &r), 0);
	ck_assert_int_eq(r.rejected_profiles, 3);
	ck_assert_str_eq(r.message, "too many samples");
	free(frame);
	/* Compressed with gzip: flag 1, and the encoding must say so. */
	ck_assert_int_eq(ember_gzip(msg, len, &z, &zlen), 0);
	ck_assert_int_eq(ember_grpc_frame(z, zlen, true, &frame, &flen), 0);
	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(ember_grpc_parse_response(frame, flen, "gzip", &r), 0);
	ck_assert_int_eq(r.rejected_profiles, 3);
	ck_assert_int_eq(ember_grpc_parse_response(frame, flen, NULL, &r), -EBADMSG);
	ck_assert_int_eq(ember_grpc_parse_response(frame, flen, "deflate", &r), -EBADMSG);
	/* Malformed: short, bad flag, length beyond the body. Empty is fine. */
	ck_assert_int_eq(ember_grpc_parse_response(frame, 4, "gzip", &r), -EBADMSG);
	frame[0] = 2;
	ck_assert_int_eq(ember_grpc_parse_response(frame, flen, "gzip", &r), -EBADMSG);
	frame[0] = 0;
	frame[1] = 0x7f;
	ck_assert_int_eq(ember_grpc_parse_response(frame, flen, "gzip", &r), -EBADMSG);
	ck_assert_int_eq(ember_grpc_parse_response(frame, 0, NULL, &r), 0);
	free(frame);
	free(z);
	free(msg);
}
END_TEST

/* base64 of a google.rpc.Status carrying RetryInfo{retry_delay: seconds.nanos}. */
static char *retry_status_b64(int64_t seconds, int32_t nanos, const char *type_url)
{
	Google__Rpc__Duration d;
	Google__Rpc__RetryInfo ri;
	Google__Rpc__Any any, *anys[1] = {&any};
	Google__Rpc__Status st;
	uint8_t ribuf[64], stbuf[256];
	size_t stlen;
	char *b64 = malloc(512);

	google__rpc__duration__init(&d);
	google__rpc__retry_info__init(&ri);
	google__rpc__any__init(&any);
	google__rpc__status__init(&st);
	d.seconds = seconds;
	d.nanos = nanos;
	ri.retry_delay = &d;
	any.type_url = (char *)type_url;
	any.value.len = google__rpc__retry_info__pack(&ri, ribuf);
	any.value.data = ribuf;
	st.code = 14;
	st.message = "busy";
	st.details = anys;
	st.n_details = 1;
	stlen = google__rpc__status__pack(&st, stbuf);
	sodium_bin2base64(b64, 512, stbuf, stlen, sodium_base64_VARIANT_ORIGINAL);
	return b64;
}

START_TEST(retry_info_in_status_details)
{
	char *b64 = retry_status_b64(2, 500000000, "type.googleapis.com/google.rpc.RetryInfo");

	ck_assert_uint_eq(ember_grpc_retry_delay_ms(b64, strlen(b64)), 2500);
	free(b64);
	b64 = retry_status_b64(2, 0, "type.googleapis.com/google.rpc.DebugInfo");
	ck_assert_uint_eq(ember_grpc_retry_delay_ms(b64, strlen(b64)), 0);
	free(b64);
	b64 = retry_status_b64(-5, 0, "type.googleapis.com/google.rpc.RetryInfo");
	ck_assert_uint_eq(ember_grpc_retry_delay_ms(b64, strlen(b64)), 0);
	free(b64);
	b64 = retry_status_b64(INT64_MAX, 0, "type.googleapis.com/google.rpc.RetryInfo");
	ck_assert_uint_eq(ember_grpc_retry_delay_ms(b64, strlen(b64)), 3600ull * 1000);
	free(b64);
	ck_assert_uint_eq(ember_grpc_retry_delay_ms("!!!not base64", 13), 0);
	ck_assert_uint_eq(ember_grpc_retry_delay_ms("", 0), 0);
}
END_TEST

START_TEST(http_answers)
{
	struct ember_send_result r = {.http_status = 200};
	Google__Rpc__Status st;
	uint8_t *msg, buf[128];
	size_t len;

	msg = pack_partial(1, "dropped one", &len);
	ember_http_parse_response(msg, len, "application/x-protobuf", &r);
	ck_assert_int_eq(r.rejected_profiles, 1);
	ck_assert_str_eq(r.message, "dropped one");
	/* Not protobuf: not decoded. */
	memset(&r, 0, sizeof(r));
	r.http_status = 200;
	ember_http_parse_response(msg, len, "application/json", &r);
	ck_assert_int_eq(r.rejected_profiles, 0);
	free(msg);
	/* An error answer is a google.rpc.Status ... */
	google__rpc__status__init(&st);
	st.code = 3;
	st.message = "bad \n profile";
	len = google__rpc__status__pack(&st, buf);
	memset(&r, 0, sizeof(r));
	r.http_status = 400;
	ember_http_parse_response(buf, len, "application/x-protobuf", &r);
	ck_assert_str_eq(r.message, "bad ? profile");
	/* ... or text, kept printable. */
	memset(&r, 0, sizeof(r));
	r.http_status = 404;
	ember_http_parse_response((const uint8_t *)"no\x01such", 7, "text/plain", &r);
	ck_assert_str_eq(r.message, "no?such");
}
END_TEST

START_TEST(gzip_round_trip_and_bomb_cap)
{
	size_t n = 1 << 20, zlen, outlen;
	uint8_t *data = calloc(n, 1), *z, *out;

	ck_assert_int_eq(ember_gzip(data, n, &z, &zlen), 0);
	ck_assert_uint_lt(zlen, 4096);
	ck_assert_int_eq(ember_gunzip(z, zlen, n, &out, &outlen), 0);
	ck_assert_uint_eq(outlen, n);
	ck_assert_int_eq(memcmp(out, data, n), 0);
	free(out);
	/* More than allowed: refused, not allocated. */
	ck_assert_int_eq(ember_gunzip(z, zlen, n / 2, &out, &outlen), -EFBIG);
	/* Truncated or garbage. */
	ck_assert_int_eq(ember_gunzip(z, zlen / 2, n, &out, &outlen), -EINVAL);
	ck_assert_int_eq(ember_gunzip(data, 100, n, &out, &outlen), -EINVAL);
	free(z);
	free(data);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("otlp_transport");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, retry_decisions_follow_the_otlp_specification);
	tcase_add_test(tc, grpc_frames_and_answers);
	tcase_add_test(tc, retry_info_in_status_details);
	tcase_add_test(tc, http_answers);
	tcase_add_test(tc, gzip_round_trip_and_bomb_cap);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
