// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/export/otlp_transport.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "symbolizer/export/curl_lib.h"
#include "symbolizer/formats/gzip.h"
#include "otlp/profiles_service.pb-c.h"
#include "otlp/rpc_status.pb-c.h"
#include "shared/parse.h"
#include "shared/str.h"
#include "shared/vec.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse
    OtlpResponse;

#define MAX_RETRY_DELAY_MS     (3600ull * 1000ull)
#define MAX_CONNECT_TIMEOUT_MS 10000
#define GRPC_FRAME_HEADER      5
#define DETAILS_MAX            4096

struct ember_transport {
	const struct ember_export_config *cfg;
	const struct ember_curl *api;
	CURL *curl;
	struct curl_slist *resolve;
	char errbuf[CURL_ERROR_SIZE];
	/* The answer of the current attempt. */
	uint8_t *body;
	size_t body_len, body_cap;
	bool body_truncated;
	char content_type[128];
	char grpc_encoding[32];
	char grpc_message[256];
	char grpc_details[DETAILS_MAX];
	int grpc_status;
	uint64_t pushback_ms;
	const atomic_bool *abort;
};

enum ember_send_outcome ember_otlp_http_outcome(int http_status)
{
	if (http_status >= 200 && http_status < 300)
		return EMBER_SEND_OK;
	switch (http_status) {
	case 429:
	case 502:
	case 503:
	case 504:
		return EMBER_SEND_RETRY;
	default:
		return EMBER_SEND_REJECTED;
	}
}

enum ember_send_outcome ember_otlp_grpc_outcome(int grpc_status)
{
	switch (grpc_status) {
	case EMBER_GRPC_OK:
		return EMBER_SEND_OK;
	case EMBER_GRPC_CANCELLED:
	case EMBER_GRPC_DEADLINE_EXCEEDED:
	case EMBER_GRPC_RESOURCE_EXHAUSTED:
	case EMBER_GRPC_ABORTED:
	case EMBER_GRPC_OUT_OF_RANGE:
	case EMBER_GRPC_UNAVAILABLE:
	case EMBER_GRPC_DATA_LOSS:
		return EMBER_SEND_RETRY;
	default:
		return EMBER_SEND_REJECTED;
	}
}

int ember_grpc_status_from_http(int http_status)
{
	switch (http_status) {
	case 400:
		return EMBER_GRPC_INTERNAL;
	case 401:
		return EMBER_GRPC_UNAUTHENTICATED;
	case 403:
		return EMBER_GRPC_PERMISSION_DENIED;
	case 404:
		return EMBER_GRPC_UNIMPLEMENTED;
	case 429:
	case 502:
	case 503:
	case 504:
		return EMBER_GRPC_UNAVAILABLE;
	default:
		return EMBER_GRPC_UNKNOWN;
	}
}

/* Copies text that came from the network, keeping only printable ASCII. */
static void copy_printable(char *dst, size_t size, const char *src, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < size; i++)
		dst[n++] = isprint((unsigned char)src[i]) ? src[i] : '?';
	dst[n] = '\0';
}

static void set_partial_success(struct ember_send_result *r, const uint8_t *msg, size_t len)
{
	OtlpResponse *resp =
	    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__unpack(
		NULL, len, msg);

	if (!resp)
		return;
	if (resp->partial_success) {
		r->rejected_profiles = resp->partial_success->rejected_profiles;
		if (resp->partial_success->error_message)
			copy_printable(r->message, sizeof(r->message),
			               resp->partial_success->error_message,
			               strlen(resp->partial_success->error_message));
	}
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__free_unpacked(
	    resp, NULL);
}

int ember_grpc_parse_response(const uint8_t *body, size_t len, const char *encoding,
                              struct ember_send_result *r)
{
	uint32_t msg_len;
	uint8_t *inflated = NULL;
	size_t inflated_len;

	if (!len)
		return 0;
	if (len < GRPC_FRAME_HEADER || body[0] > 1)
		return -EBADMSG;
	msg_len =
	    (uint32_t)body[1] << 24 | (uint32_t)body[2] << 16 | (uint32_t)body[3] << 8 | body[4];
	if (msg_len > len - GRPC_FRAME_HEADER)
		return -EBADMSG;
	if (body[0] == 1) {
		if (!encoding || strcasecmp(encoding, "gzip"))
			return -EBADMSG;
		if (ember_gunzip(body + GRPC_FRAME_HEADER, msg_len, EMBER_OTLP_MAX_RESPONSE,
		                 &inflated, &inflated_len))
			return -EBADMSG;
		set_partial_success(r, inflated, inflated_len);
		free(inflated);
		return 0;
	}
	set_partial_success(r, body + GRPC_FRAME_HEADER, msg_len);
	return 0;
}

int ember_grpc_frame(const uint8_t *msg, size_t len, bool compressed, uint8_t **out,
                     size_t *out_len)
{
	uint8_t *f;

	if (len > UINT32_MAX)
		return -E2BIG;
	f = malloc(len + GRPC_FRAME_HEADER);
	if (!f)
		return -ENOMEM;
	f[0] = compressed ? 1 : 0;
	f[1] = (uint8_t)(len >> 24);
	f[2] = (uint8_t)(len >> 16);
	f[3] = (uint8_t)(len >> 8);
	f[4] = (uint8_t)len;
	if (len)
		memcpy(f + GRPC_FRAME_HEADER, msg, len);
	*out = f;
	*out_len = len + GRPC_FRAME_HEADER;
	return 0;
}

uint64_t ember_grpc_retry_delay_ms(const char *b64, size_t len)
{
	unsigned char bin[DETAILS_MAX];
	size_t bin_len = 0;
	Google__Rpc__Status *st;
	uint64_t delay = 0;

	while (len && (b64[len - 1] == '=' || isspace((unsigned char)b64[len - 1])))
		len--;
	if (!len || sodium_base642bin(bin, sizeof(bin), b64, len, " \t", &bin_len, NULL,
	                              sodium_base64_VARIANT_ORIGINAL_NO_PADDING))
		return 0;
	st = google__rpc__status__unpack(NULL, bin_len, bin);
	if (!st)
		return 0;
	for (size_t i = 0; i < st->n_details && !delay; i++) {
		const Google__Rpc__Any *any = st->details[i];
		Google__Rpc__RetryInfo *ri;

		if (!any->type_url || !ember_str_ends_with(any->type_url, "/google.rpc.RetryInfo"))
			continue;
		ri = google__rpc__retry_info__unpack(NULL, any->value.len, any->value.data);
		if (!ri)
			continue;
		if (ri->retry_delay && ri->retry_delay->seconds >= 0 &&
		    ri->retry_delay->nanos >= 0) {
			uint64_t s = (uint64_t)ri->retry_delay->seconds;

			delay = s > MAX_RETRY_DELAY_MS / 1000
			            ? MAX_RETRY_DELAY_MS
			            : s * 1000 + (uint64_t)ri->retry_delay->nanos / 1000000;
		}
		google__rpc__retry_info__free_unpacked(ri, NULL);
	}
	google__rpc__status__free_unpacked(st, NULL);
	return delay;
}

static bool is_protobuf(const char *content_type)
{
	return !strncasecmp(content_type, "application/x-protobuf", 22) ||
	       !strncasecmp(content_type, "application/protobuf", 20);
}

void ember_http_parse_response(const uint8_t *body, size_t len, const char *content_type,
                               struct ember_send_result *r)
{
	if (r->http_status >= 200 && r->http_status < 300) {
		if (len && is_protobuf(content_type))
			set_partial_success(r, body, len);
		return;
	}
	if (len && is_protobuf(content_type)) {
		Google__Rpc__Status *st = google__rpc__status__unpack(NULL, len, body);

		if (st) {
			if (st->message)
				copy_printable(r->message, sizeof(r->message), st->message,
				               strlen(st->message));
			google__rpc__status__free_unpacked(st, NULL);
		}
		return;
	}
	copy_printable(r->message, sizeof(r->message), (const char *)body, len < 200 ? len : 200);
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct ember_transport *t = ctx;
	size_t len = size * n, room = EMBER_OTLP_MAX_RESPONSE - t->body_len;

	if (len > room) {
		t->body_truncated = true;
		len = room;
	}
	if (len) {
		if (EMBER_ENSURE(t->body, t->body_cap, t->body_len + len, EMBER_OTLP_MAX_RESPONSE))
			return 0;
		memcpy(t->body + t->body_len, data, len);
		t->body_len += len;
	}
	return size * n;
}

/* "name: value\r\n" -> value without blanks, when the name matches. */
static bool header_value(const char *line, size_t len, const char *name, const char **value,
                         size_t *vlen)
{
	size_t nlen = strlen(name);

	if (len <= nlen || strncasecmp(line, name, nlen) || line[nlen] != ':')
		return false;
	line += nlen + 1;
	len -= nlen + 1;
	while (len && (*line == ' ' || *line == '\t'))
		line++, len--;
	while (len && isspace((unsigned char)line[len - 1]))
		len--;
	*value = line;
	*vlen = len;
	return true;
}

/* Percent-decodes a grpc-message value into dst. */
static void grpc_message_decode(char *dst, size_t size, const char *v, size_t len)
{
	char tmp[256];
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < sizeof(tmp); i++) {
		if (v[i] == '%' && i + 2 < len && isxdigit((unsigned char)v[i + 1]) &&
		    isxdigit((unsigned char)v[i + 2])) {
			char hex[3] = {v[i + 1], v[i + 2], 0};

			tmp[n++] = (char)strtol(hex, NULL, 16);
			i += 2;
		} else {
			tmp[n++] = v[i];
		}
	}
	copy_printable(dst, size, tmp, n);
}

/* Headers and, for HTTP/2, trailers (grpc-status arrives as a trailer). */
static size_t on_header(char *line, size_t size, size_t n, void *ctx)
{
	struct ember_transport *t = ctx;
	size_t len = size * n, vlen;
	const char *v;
	char num[16];
	uint64_t value;

	if (header_value(line, len, "content-type", &v, &vlen))
		copy_printable(t->content_type, sizeof(t->content_type), v, vlen);
	else if (header_value(line, len, "grpc-encoding", &v, &vlen))
		copy_printable(t->grpc_encoding, sizeof(t->grpc_encoding), v, vlen);
	else if (header_value(line, len, "grpc-message", &v, &vlen))
		grpc_message_decode(t->grpc_message, sizeof(t->grpc_message), v, vlen);
	else if (header_value(line, len, "grpc-status-details-bin", &v, &vlen))
		copy_printable(t->grpc_details, sizeof(t->grpc_details), v, vlen);
	else if (header_value(line, len, "grpc-status", &v, &vlen) && vlen < sizeof(num)) {
		memcpy(num, v, vlen);
		num[vlen] = '\0';
		t->grpc_status =
		    ember_parse_u64(num, 0, 99, &value) ? EMBER_GRPC_UNKNOWN : (int)value;
	} else if (header_value(line, len, "grpc-retry-pushback-ms", &v, &vlen) &&
	           vlen < sizeof(num)) {
		memcpy(num, v, vlen);
		num[vlen] = '\0';
		if (!ember_parse_u64(num, 0, MAX_RETRY_DELAY_MS, &value))
			t->pushback_ms = value;
	}
	return len;
}

static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
	struct ember_transport *t = ctx;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return t->abort && atomic_load(t->abort) ? 1 : 0;
}

#define SETOPT(h, opt, val)                                                                        \
	do {                                                                                       \
		if (t->api->easy_setopt((h), (opt), (val)) != CURLE_OK)                            \
			return -EINVAL;                                                            \
	} while (0)

static int blob_option(const struct ember_transport *t, CURLoption opt, const struct ember_blob *b)
{
	struct curl_blob blob = {b->data, b->len, CURL_BLOB_COPY};

	return b->data && t->api->easy_setopt(t->curl, opt, &blob) != CURLE_OK ? -EINVAL : 0;
}

static int setup(struct ember_transport *t)
{
	const struct ember_export_config *c = t->cfg;
	CURL *h = t->curl;

	SETOPT(h, CURLOPT_URL, c->url);
	SETOPT(h, CURLOPT_NOSIGNAL, 1L);
	SETOPT(h, CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(h, CURLOPT_FOLLOWLOCATION, 0L);
	/* Proxies would need a name lookup the sandbox forbids: never use one. */
	SETOPT(h, CURLOPT_PROXY, "");
	SETOPT(h, CURLOPT_ERRORBUFFER, t->errbuf);
	SETOPT(h, CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(h, CURLOPT_WRITEDATA, t);
	SETOPT(h, CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(h, CURLOPT_HEADERDATA, t);
	SETOPT(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	SETOPT(h, CURLOPT_XFERINFODATA, t);
	SETOPT(h, CURLOPT_NOPROGRESS, 0L);
	SETOPT(h, CURLOPT_TCP_KEEPALIVE, 1L);
	SETOPT(h, CURLOPT_USERAGENT, "ember/" EMBER_VERSION);
	if (c->resolve[0]) {
		t->resolve = t->api->slist_append(NULL, c->resolve);
		if (!t->resolve)
			return -ENOMEM;
		SETOPT(h, CURLOPT_RESOLVE, t->resolve);
	}
	if (c->protocol == EMBER_OTLP_GRPC) {
		SETOPT(h, CURLOPT_HTTP_VERSION,
		       c->tls ? (long)CURL_HTTP_VERSION_2TLS
		              : (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
		/* libcurl before 8.0 breaks a reused prior-knowledge HTTP/2 connection
		 * ("Error in the HTTP2 framing layer", curl/curl#10634): one per export. */
		if (!c->tls && t->api->version_info(CURLVERSION_NOW)->version_num < 0x080000)
			SETOPT(h, CURLOPT_FORBID_REUSE, 1L);
	} else
		SETOPT(h, CURLOPT_ACCEPT_ENCODING, "gzip");
	if (c->tls) {
		/* Only the material loaded before the sandbox: no CA directory lookups. */
		SETOPT(h, CURLOPT_CAPATH, NULL);
		SETOPT(h, CURLOPT_CAINFO, NULL);
		if (blob_option(t, CURLOPT_CAINFO_BLOB, &c->ca) ||
		    blob_option(t, CURLOPT_SSLCERT_BLOB, &c->cert) ||
		    blob_option(t, CURLOPT_SSLKEY_BLOB, &c->key))
			return -EINVAL;
		if (c->cert.data) {
			SETOPT(h, CURLOPT_SSLCERTTYPE, "PEM");
			SETOPT(h, CURLOPT_SSLKEYTYPE, "PEM");
		}
	}
	return 0;
}

int ember_transport_create(const struct ember_export_config *cfg, struct ember_transport **out)
{
	const struct ember_curl *api = ember_curl(NULL, 0);
	const curl_version_info_data *v;
	struct ember_transport *t;
	int err;

	if (!api)
		return -ELIBACC;
	v = api->version_info(CURLVERSION_NOW);
	if (cfg->protocol == EMBER_OTLP_GRPC && !(v->features & CURL_VERSION_HTTP2))
		return -EPROTONOSUPPORT;
	if (cfg->tls && !(v->features & CURL_VERSION_SSL))
		return -EPROTONOSUPPORT;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->cfg = cfg;
	t->api = api;
	t->curl = api->easy_init();
	if (!t->curl) {
		free(t);
		return -ENOMEM;
	}
	err = setup(t);
	if (err) {
		ember_transport_destroy(t);
		return err;
	}
	*out = t;
	return 0;
}

void ember_transport_destroy(struct ember_transport *t)
{
	if (!t)
		return;
	t->api->easy_cleanup(t->curl);
	t->api->slist_free_all(t->resolve);
	free(t->body);
	free(t);
}

static struct curl_slist *request_headers(const struct ember_transport *t, bool compressed,
                                          uint64_t timeout_ms)
{
	const struct ember_export_config *c = t->cfg;
	struct curl_slist *l = NULL, *next;
	char line[64];

#define ADD(s)                                                                                     \
	do {                                                                                       \
		next = t->api->slist_append(l, (s));                                               \
		if (!next)                                                                         \
			goto fail;                                                                 \
		l = next;                                                                          \
	} while (0)
	if (c->protocol == EMBER_OTLP_GRPC) {
		ADD("Content-Type: application/grpc");
		ADD("TE: trailers");
		ADD("grpc-accept-encoding: gzip,identity");
		if (compressed)
			ADD("grpc-encoding: gzip");
		snprintf(line, sizeof(line), "grpc-timeout: %" PRIu64 "m", timeout_ms);
		ADD(line);
	} else {
		ADD("Content-Type: application/x-protobuf");
		if (compressed)
			ADD("Content-Encoding: gzip");
	}
	/* No "Expect: 100-continue" round trip before large bodies. */
	ADD("Expect:");
	for (size_t i = 0; i < c->nheaders; i++)
		ADD(c->headers[i]);
#undef ADD
	return l;
fail:
	t->api->slist_free_all(l);
	return NULL;
}

static void reset_answer(struct ember_transport *t)
{
	free(t->body);
	t->body = NULL;
	t->body_len = t->body_cap = 0;
	t->body_truncated = false;
	t->content_type[0] = t->grpc_encoding[0] = t->grpc_message[0] = t->grpc_details[0] = '\0';
	t->grpc_status = -1;
	t->pushback_ms = 0;
	t->errbuf[0] = '\0';
}

static void grpc_result(struct ember_transport *t, struct ember_send_result *r)
{
	if (r->http_status != 200) {
		r->grpc_status = t->grpc_status >= 0 ? t->grpc_status
		                                     : ember_grpc_status_from_http(r->http_status);
		snprintf(r->message, sizeof(r->message), "HTTP status %d%s%.200s", r->http_status,
		         t->grpc_message[0] ? ": " : "", t->grpc_message);
		r->outcome = ember_otlp_grpc_outcome(r->grpc_status);
		return;
	}
	if (t->grpc_status < 0) {
		/* The stream ended without a status (a receiver going away): try again. */
		r->outcome = EMBER_SEND_RETRY;
		snprintf(r->message, sizeof(r->message), "the answer had no grpc-status");
		return;
	}
	r->grpc_status = t->grpc_status;
	r->outcome = ember_otlp_grpc_outcome(t->grpc_status);
	if (r->outcome == EMBER_SEND_OK) {
		if (t->body_truncated ||
		    ember_grpc_parse_response(t->body, t->body_len, t->grpc_encoding, r))
			snprintf(r->message, sizeof(r->message), "malformed gRPC answer (ignored)");
		return;
	}
	copy_printable(r->message, sizeof(r->message), t->grpc_message, strlen(t->grpc_message));
	if (t->pushback_ms)
		r->retry_after_ms = t->pushback_ms;
	else if (t->grpc_details[0])
		r->retry_after_ms =
		    ember_grpc_retry_delay_ms(t->grpc_details, strlen(t->grpc_details));
}

static void http_result(struct ember_transport *t, struct ember_send_result *r)
{
	curl_off_t retry_after = 0;

	r->outcome = ember_otlp_http_outcome(r->http_status);
	ember_http_parse_response(t->body, t->body_len, t->content_type, r);
	if (r->outcome == EMBER_SEND_RETRY &&
	    t->api->easy_getinfo(t->curl, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK &&
	    retry_after > 0)
		r->retry_after_ms = (uint64_t)retry_after > MAX_RETRY_DELAY_MS / 1000
		                        ? MAX_RETRY_DELAY_MS
		                        : (uint64_t)retry_after * 1000;
}

void ember_transport_send(struct ember_transport *t, const uint8_t *body, size_t len,
                          bool compressed, uint64_t timeout_ms, const atomic_bool *abort,
                          struct ember_send_result *r)
{
	const struct ember_export_config *c = t->cfg;
	uint8_t *framed = NULL;
	struct curl_slist *headers;
	long status = 0;
	CURLcode rc;

	memset(r, 0, sizeof(*r));
	r->grpc_status = -1;
	r->outcome = EMBER_SEND_RETRY;
	reset_answer(t);
	t->abort = abort;
	if (c->protocol == EMBER_OTLP_GRPC) {
		if (ember_grpc_frame(body, len, compressed, &framed, &len)) {
			snprintf(r->message, sizeof(r->message), "out of memory");
			return;
		}
		body = framed;
	}
	headers = request_headers(t, compressed, timeout_ms);
	if (!headers || t->api->easy_setopt(t->curl, CURLOPT_HTTPHEADER, headers) != CURLE_OK ||
	    t->api->easy_setopt(t->curl, CURLOPT_POSTFIELDS, body) != CURLE_OK ||
	    t->api->easy_setopt(t->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len) !=
	        CURLE_OK ||
	    t->api->easy_setopt(t->curl, CURLOPT_TIMEOUT_MS, (long)timeout_ms) != CURLE_OK ||
	    t->api->easy_setopt(t->curl, CURLOPT_CONNECTTIMEOUT_MS,
	                        (long)(timeout_ms < MAX_CONNECT_TIMEOUT_MS
	                                   ? timeout_ms
	                                   : MAX_CONNECT_TIMEOUT_MS)) != CURLE_OK) {
		snprintf(r->message, sizeof(r->message), "cannot set up the request");
		goto out;
	}
	rc = t->api->easy_perform(t->curl);
	t->api->easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
	r->http_status = (int)status;
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		r->outcome = EMBER_SEND_ABORTED;
		snprintf(r->message, sizeof(r->message), "abandoned");
	} else if (rc != CURLE_OK) {
		/* Refused, unreachable, timed out, reset, TLS failure: the network, maybe
		 * a receiver that restarts. Worth another try later. */
		r->outcome = EMBER_SEND_RETRY;
		snprintf(r->message, sizeof(r->message), "%s",
		         t->errbuf[0] ? t->errbuf : t->api->easy_strerror(rc));
	} else if (c->protocol == EMBER_OTLP_GRPC) {
		grpc_result(t, r);
	} else {
		http_result(t, r);
	}
out:
	t->api->easy_setopt(t->curl, CURLOPT_HTTPHEADER, NULL);
	t->api->slist_free_all(headers);
	free(framed);
	t->abort = NULL;
}
