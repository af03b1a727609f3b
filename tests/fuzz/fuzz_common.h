/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every reader's fuzz target does with a profile it managed to read:
 * write it in every format, so that hostile names and shapes also reach the
 * frame tree and the writers (HTML escaping above all), and decode what each
 * writer wrote: pprof and OTLP unpacked with protobuf-c (their schema), every
 * string of them, the folded text and the HTML page strict UTF-8 (a backend
 * refuses a whole OTLP request for one bad string), the folded lines "stack
 * count", the page's data ending its script element only where the page does.
 * A writer that wrote something else aborts the target (a finding).
 *
 * tests/unit/test_hostile_names.c uses the same checks on names no reader
 * would produce.
 */
#ifndef EMBER_TESTS_FUZZ_COMMON_H
#define EMBER_TESTS_FUZZ_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp/profiles_service.pb-c.h"
#include "pprof.pb-c.h"
#include "symbolizer/formats/gzip.h"
#include "symbolizer/formats/profile_writer.h"
#include "symbolizer/profile/profile.h"

/* Where the check failed: the fuzz target aborts (libFuzzer keeps the input); a test says. */
static inline void fuzz_fail(const char *format, const char *what)
{
	fprintf(stderr, "fuzz_common: %s output: %s\n", format, what);
	abort();
}

/*
 * Length of the UTF-8 sequence at s (at most n bytes), or 0 when it is not one: strict
 * (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
 */
static inline size_t fuzz_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;

		return n >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;

		return n >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
		               (s[3] & 0xc0) == 0x80
		           ? 4
		           : 0;
	}
	return 0;
}

static inline bool fuzz_utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		size_t k = fuzz_utf8_seq(u + i, n - i);

		if (!k)
			return false;
		i += k;
	}
	return true;
}

/* Every string field of m and of the messages in it, at any depth: strict UTF-8. */
static inline bool fuzz_strings_valid(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *at = (const char *)m + f->offset;
		size_t n = 1;
		const void *const *items = (const void *const *)at;

		if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		/* A member of a oneof is there only when the oneof's case names it. */
		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(const uint32_t *)((const char *)m + f->quantifier_offset) != f->id)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			n = *(const size_t *)((const char *)m + f->quantifier_offset);
			items = *(const void *const *const *)at;
		}
		for (size_t k = 0; k < n; k++) {
			const void *v = items[k];

			if (!v)
				continue;
			if (f->type == PROTOBUF_C_TYPE_STRING ? !fuzz_utf8_valid(v, strlen(v))
			                                      : !fuzz_strings_valid(v))
				return false;
		}
	}
	return true;
}

/* A pprof file as written: gzip, then a profile.proto Profile whose strings are UTF-8. */
static inline void fuzz_check_pprof(const char *buf, size_t len)
{
	uint8_t *raw;
	size_t n;
	Ember__Pprof__Profile *p;

	if (ember_gunzip((const uint8_t *)buf, len, (size_t)1 << 31, &raw, &n))
		fuzz_fail("pprof", "not gzip");
	p = ember__pprof__profile__unpack(NULL, n, raw);
	free(raw);
	if (!p)
		fuzz_fail("pprof", "protobuf-c cannot unpack it");
	if (p->n_string_table < 1 || p->string_table[0][0])
		fuzz_fail("pprof", "its string table does not start with \"\"");
	if (!fuzz_strings_valid(&p->base))
		fuzz_fail("pprof", "a string is not UTF-8");
	ember__pprof__profile__free_unpacked(p, NULL);
}

/* An OTLP request as written: an ExportProfilesServiceRequest whose strings are UTF-8. */
static inline void fuzz_check_otlp(const char *buf, size_t len)
{
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest *r =
	    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
	        NULL, len, (const uint8_t *)buf);

	if (!r)
		fuzz_fail("otlp", "protobuf-c cannot unpack it");
	if (!fuzz_strings_valid(&r->base))
		fuzz_fail("otlp", "a string is not UTF-8");
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
	    r, NULL);
}

/* Folded stacks: UTF-8 lines "frame;frame;... COUNT" with a count above 0. */
static inline void fuzz_check_folded(const char *buf, size_t len)
{
	if (!fuzz_utf8_valid(buf, len))
		fuzz_fail("folded", "not UTF-8");
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(buf + i, '\n', len - i), *sp;
		size_t end = nl ? (size_t)(nl - buf) : len;
		unsigned long long count = 0;

		if (!nl)
			fuzz_fail("folded", "a line without its newline");
		sp = memrchr(buf + i, ' ', end - i);
		if (!sp || sp == buf + i || sp + 1 == buf + end)
			fuzz_fail("folded", "a line without a stack and a count");
		for (const char *c = sp + 1; c < buf + end; c++) {
			if (*c < '0' || *c > '9')
				fuzz_fail("folded", "a count that is not a number");
			count = count * 10 + (unsigned)(*c - '0');
		}
		if (!count)
			fuzz_fail("folded", "a count of 0");
		i = end + 1;
	}
}

/* The page: UTF-8, and its data (JSON in a script element) ends that element only once. */
static inline void fuzz_check_html(const char *buf, size_t len)
{
	const char *data = "<script type=\"application/json\" id=\"ember-data\">", *at, *end;

	if (!fuzz_utf8_valid(buf, len))
		fuzz_fail("html", "not UTF-8");
	at = memmem(buf, len, data, strlen(data));
	if (!at)
		fuzz_fail("html", "no data element");
	at += strlen(data);
	end = memmem(at, len - (size_t)(at - buf), "</script>", 9);
	if (!end || memmem(at, (size_t)(end - at), "<!--", 4) || memchr(at, '<', (size_t)(end - at)))
		fuzz_fail("html", "the data holds markup");
}

/* Checks what format f wrote, as above. */
static inline void fuzz_check_format(enum ember_format f, const char *buf, size_t len)
{
	switch (f) {
	case EMBER_FORMAT_FOLDED:
		fuzz_check_folded(buf, len);
		break;
	case EMBER_FORMAT_PPROF:
		fuzz_check_pprof(buf, len);
		break;
	case EMBER_FORMAT_HTML:
		fuzz_check_html(buf, len);
		break;
	case EMBER_FORMAT_OTLP:
		fuzz_check_otlp(buf, len);
		break;
	default:
		break;
	}
}

/* Writes p in every format and checks each. */
static inline void fuzz_write_all_formats(const struct ember_profile *p)
{
	for (int f = 0; f < EMBER_FORMAT_MAX; f++) {
		char *buf;
		size_t len;

		if (ember_format_encode((enum ember_format)f, p, &buf, &len))
			continue;
		fuzz_check_format((enum ember_format)f, buf, len);
		free(buf);
	}
}

#endif
