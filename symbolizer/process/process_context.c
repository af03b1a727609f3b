// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/process/process_context.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp/process_context.pb-c.h"

typedef Opentelemetry__Proto__Processcontext__V1development__ProcessContext ProcessContext;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;

#define MAX_KEY   256
#define MAX_VALUE 1024

/* The header as OTEP 4719 lays it out, in the process's (native) byte order. */
struct header {
	char signature[8]; /* "OTEL_CTX", written last by the publisher */
	uint32_t version;
	uint32_t payload_size;
	uint64_t published_ns; /* 0 while it is being updated */
	uint64_t payload;      /* its address */
};

_Static_assert(sizeof(struct header) == EMBER_PROCESS_CONTEXT_HEADER, "OTEP 4719's header");

/* Appends "key=value\n" to lines when the key is plain and it all fits: true, or false. */
static bool add_line(char *lines, const char *key, const char *value)
{
	size_t have = strlen(lines), klen = strlen(key), vlen = strlen(value);

	if (!klen || klen > MAX_KEY || vlen > MAX_VALUE || strpbrk(key, "=\n") ||
	    strchr(value, '\n') || have + klen + vlen + 3 > EMBER_PROCESS_CONTEXT_MAX_LINES)
		return false;
	/* A key published twice: the first stands (the specification leaves it undefined). */
	for (const char *l = lines; *l; l = strchr(l, '\n') + 1)
		if (!strncmp(l, key, klen) && l[klen] == '=')
			return false;
	snprintf(lines + have, EMBER_PROCESS_CONTEXT_MAX_LINES - have, "%s=%s\n", key, value);
	return true;
}

/* A scalar value as text: true, or false for arrays, maps, bytes and a missing value. */
static bool value_text(const AnyValue *v, char *buf, size_t size, const char **out)
{
	if (!v)
		return false;
	switch (v->value_case) {
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
		*out = v->string_value;
		return true;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
		*out = v->bool_value ? "true" : "false";
		return true;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
		snprintf(buf, size, "%" PRId64, v->int_value);
		*out = buf;
		return true;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
		snprintf(buf, size, "%.17g", v->double_value);
		*out = buf;
		return true;
	default:
		return false;
	}
}

#define ANY_VALUE_ARRAY 5 /* AnyValue.array_value: ember's .proto leaves it out (see below) */

/* A varint at *p (below end): 0, or -EBADMSG. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	*out = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		*out |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -EBADMSG;
}

/* One element of the key map (an AnyValue's bytes) into key: a plain string, or "". */
static void take_key(const uint8_t *data, size_t len, char *key)
{
	AnyValue *v = opentelemetry__proto__common__v1__any_value__unpack(NULL, len, data);

	key[0] = '\0';
	if (v && v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE &&
	    v->string_value && strlen(v->string_value) <= EMBER_PROCESS_CONTEXT_MAX_KEY &&
	    !strpbrk(v->string_value, "=\n"))
		strcpy(key, v->string_value);
	if (v)
		opentelemetry__proto__common__v1__any_value__free_unpacked(v, NULL);
}

/*
 * threadlocal.attribute_key_map: an array of strings, the thread contexts' key names. An
 * array may hold arrays, and protobuf-c unpacks nested messages by recursion, whose depth a
 * 64 KiB payload would choose: ember's AnyValue has no array_value, so the array stays
 * unknown bytes, walked here one level deep.
 */
static bool take_key_map(const KeyValue *kv, struct ember_process_context *out)
{
	const ProtobufCMessageUnknownField *f = NULL;
	const uint8_t *p, *end;
	uint64_t len;

	if (!kv->key || strcmp(kv->key, "threadlocal.attribute_key_map") || !kv->value)
		return false;
	for (unsigned i = 0; i < kv->value->base.n_unknown_fields; i++)
		if (kv->value->base.unknown_fields[i].tag == ANY_VALUE_ARRAY &&
		    kv->value->base.unknown_fields[i].wire_type ==
		        PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
			f = &kv->value->base.unknown_fields[i];
	if (!f)
		return false;
	/* protobuf-c keeps an unknown field's bytes after its tag: the length, then the array. */
	p = f->data;
	end = f->data + f->len;
	if (varint(&p, end, &len) || len != (uint64_t)(end - p))
		return true;
	out->nkeys = 0;
	while (p < end && out->nkeys < EMBER_PROCESS_CONTEXT_MAX_KEYS) {
		uint64_t tag;

		if (varint(&p, end, &tag) ||
		    tag != (1 << 3 | PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED) ||
		    varint(&p, end, &len) || len > (uint64_t)(end - p))
			break; /* ArrayValue.values = 1 only */
		take_key(p, (size_t)len, out->keys[out->nkeys++]);
		p += len;
	}
	return true;
}

static void take_attributes(KeyValue *const *kvs, size_t n, char *lines, uint32_t *dropped,
                            struct ember_process_context *key_map)
{
	for (size_t i = 0; i < n; i++) {
		char num[64];
		const char *value;

		if (key_map && take_key_map(kvs[i], key_map))
			continue;
		if (i >= EMBER_PROCESS_CONTEXT_MAX_ATTRS || !kvs[i]->key ||
		    !value_text(kvs[i]->value, num, sizeof(num), &value) ||
		    !add_line(lines, kvs[i]->key, value))
			(*dropped)++;
	}
}

int ember_process_context_parse(const uint8_t *payload, size_t len,
                                struct ember_process_context *out)
{
	ProcessContext *pc;

	out->resource[0] = out->attributes[0] = '\0';
	out->dropped = out->nkeys = 0;
	if (len > EMBER_PROCESS_CONTEXT_MAX_PAYLOAD)
		return -E2BIG;
	pc = opentelemetry__proto__processcontext__v1development__process_context__unpack(NULL, len,
	                                                                                   payload);
	if (!pc)
		return -EBADMSG;
	if (pc->resource)
		take_attributes(pc->resource->attributes, pc->resource->n_attributes, out->resource,
		                &out->dropped, NULL);
	take_attributes(pc->attributes, pc->n_attributes, out->attributes, &out->dropped, out);
	opentelemetry__proto__processcontext__v1development__process_context__free_unpacked(pc,
	                                                                                    NULL);
	return 0;
}

/* One consistent read: the header, the payload, and the header's time again, unchanged. */
static int read_once(ember_process_context_read_fn read, void *read_ctx, uint64_t addr,
                     uint8_t *payload, struct header *h)
{
	uint64_t again;
	int err;

	if ((err = read(read_ctx, addr, h, sizeof(*h))))
		return err;
	if (memcmp(h->signature, "OTEL_CTX", 8) || h->version != EMBER_PROCESS_CONTEXT_VERSION)
		return -ENOENT;
	if (!h->published_ns)
		return -EAGAIN;
	if (h->payload_size > EMBER_PROCESS_CONTEXT_MAX_PAYLOAD)
		return -E2BIG;
	if (h->payload_size && (err = read(read_ctx, h->payload, payload, h->payload_size)))
		return err;
	if ((err = read(read_ctx, addr + offsetof(struct header, published_ns), &again,
	                sizeof(again))))
		return err;
	return again == h->published_ns ? 0 : -EAGAIN;
}

int ember_process_context_read(ember_process_context_read_fn read, void *read_ctx, uint64_t addr,
                               struct ember_process_context *out)
{
	uint8_t *payload = malloc(EMBER_PROCESS_CONTEXT_MAX_PAYLOAD);
	struct header h;
	int err = -EAGAIN;

	if (!payload)
		return -ENOMEM;
	for (int i = 0; i < EMBER_PROCESS_CONTEXT_TRIES && err == -EAGAIN; i++)
		err = read_once(read, read_ctx, addr, payload, &h);
	if (!err)
		err = ember_process_context_parse(payload, h.payload_size, out);
	if (!err)
		out->published_ns = h.published_ns;
	free(payload);
	return err;
}
