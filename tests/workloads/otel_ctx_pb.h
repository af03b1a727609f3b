/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A protobuf writer of the few shapes a ProcessContext (OTEP 4719) takes, by hand from the
 * wire format: what tests/workloads/otel_ctx.c publishes and what the unit test of ember's
 * reader feeds it, independent of ember's generated code.
 */
#ifndef EMBER_TESTS_WORKLOADS_OTEL_CTX_PB_H
#define EMBER_TESTS_WORKLOADS_OTEL_CTX_PB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct pb {
	uint8_t b[8192];
	size_t n;
};

static inline void pb_varint(struct pb *p, uint64_t v)
{
	do {
		p->b[p->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

/* A length-delimited field. */
static inline void pb_bytes(struct pb *p, unsigned int field, const void *data, size_t len)
{
	pb_varint(p, field << 3 | 2);
	pb_varint(p, len);
	memcpy(p->b + p->n, data, len);
	p->n += len;
}

/* KeyValue{key, AnyValue{string_value s}} as field, or with s NULL AnyValue{int_value num}. */
static inline void pb_key_value(struct pb *out, unsigned int field, const char *key,
                                const char *s, int64_t num)
{
	static struct pb value, kv; /* 16 KiB: not on the stack */

	value.n = kv.n = 0;
	if (s) {
		pb_bytes(&value, 1, s, strlen(s));
	} else {
		pb_varint(&value, 3 << 3 | 0);
		pb_varint(&value, (uint64_t)num);
	}
	pb_bytes(&kv, 1, key, strlen(key));
	pb_bytes(&kv, 2, value.b, value.n);
	pb_bytes(out, field, kv.b, kv.n);
}

/* KeyValue{key, AnyValue{array_value: ArrayValue{values: AnyValue{string_value}...}}}. */
static inline void pb_key_strings(struct pb *out, unsigned int field, const char *key,
                                  const char *const *strs, size_t n)
{
	static struct pb one, array, value, kv;

	array.n = value.n = kv.n = 0;
	for (size_t i = 0; i < n; i++) {
		one.n = 0;
		pb_bytes(&one, 1, strs[i], strlen(strs[i]));
		pb_bytes(&array, 1, one.b, one.n);
	}
	pb_bytes(&value, 5, array.b, array.n);
	pb_bytes(&kv, 1, key, strlen(key));
	pb_bytes(&kv, 2, value.b, value.n);
	pb_bytes(out, field, kv.b, kv.n);
}

#endif
