/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process's own account of itself, as OpenTelemetry's process context (OTEP 4719) has it
 * publish one: a mapping named OTEL_CTX whose first 32 bytes are a header (signature
 * "OTEL_CTX", version 2, the payload's size, when it was published, where the payload is)
 * and whose payload is a protobuf ProcessContext (a resource and further attributes).
 *
 * Everything here is hostile input: the header's fields, the pointer, the payload and each
 * string in it are the process's to choose, and it may rewrite them while they are read
 * (a zero publication time marks an update in progress; a time that changed between the
 * header and the end of the read, a torn one). A context is taken only whole, within
 * EMBER_PROCESS_CONTEXT_MAX_PAYLOAD bytes, and only attributes with a plain key and a
 * scalar value, EMBER_PROCESS_CONTEXT_MAX_ATTRS of them, within
 * EMBER_PROCESS_CONTEXT_MAX_LINES bytes in all.
 */
#ifndef EMBER_SYMBOLIZER_PROCESS_PROCESS_CONTEXT_H
#define EMBER_SYMBOLIZER_PROCESS_PROCESS_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#define EMBER_PROCESS_CONTEXT_HEADER      32
#define EMBER_PROCESS_CONTEXT_VERSION     2
#define EMBER_PROCESS_CONTEXT_MAX_PAYLOAD (64u << 10)
#define EMBER_PROCESS_CONTEXT_MAX_ATTRS   32
#define EMBER_PROCESS_CONTEXT_MAX_LINES   2048
#define EMBER_PROCESS_CONTEXT_TRIES       3 /* reads of one that keeps changing */
/* Thread contexts' attribute names (threadlocal.attribute_key_map): how many, how long. */
#define EMBER_PROCESS_CONTEXT_MAX_KEYS 64
#define EMBER_PROCESS_CONTEXT_MAX_KEY  63

struct ember_process_context {
	uint64_t published_ns;
	/* The resource's attributes as "key=value\n" lines, in the order published (a key
	 * seen twice: the first). Values: strings as they are, numbers and booleans as text. */
	char resource[EMBER_PROCESS_CONTEXT_MAX_LINES];
	/* The other attributes, the same way (threadlocal.schema_version, ...). */
	char attributes[EMBER_PROCESS_CONTEXT_MAX_LINES];
	uint32_t dropped; /* attributes left out: not scalar, an odd key, past a bound */
	/* The names of the thread contexts' attributes (OTEP 4947), by their index in a
	 * record: the array threadlocal.attribute_key_map, its first MAX_KEYS strings ("" for
	 * one that is not a string or is too long). */
	char keys[EMBER_PROCESS_CONTEXT_MAX_KEYS][EMBER_PROCESS_CONTEXT_MAX_KEY + 1];
	uint32_t nkeys;
};

/* Reads len bytes of the process at addr: 0, or a negative errno. */
typedef int (*ember_process_context_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * Reads the context whose header is at addr (the OTEL_CTX mapping's start) and parses it
 * into out. 0; -ENOENT: no context there (signature or version wrong); -EAGAIN: it was being
 * updated at every try; -E2BIG: its payload is larger than the cap; -EBADMSG: the payload
 * is no ProcessContext; -EFAULT or another read error.
 */
int ember_process_context_read(ember_process_context_read_fn read, void *read_ctx, uint64_t addr,
                               struct ember_process_context *out);

/* Parses a ProcessContext payload of len bytes into out (its published_ns untouched). */
int ember_process_context_parse(const uint8_t *payload, size_t len,
                                struct ember_process_context *out);

#endif
