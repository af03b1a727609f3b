/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One attempt to deliver one ExportProfilesServiceRequest, with libcurl:
 *   OTLP/HTTP  POST <path>, Content-Type application/x-protobuf, optionally
 *              Content-Encoding gzip; the answer is an
 *              ExportProfilesServiceResponse (2xx) or a google.rpc.Status.
 *   OTLP/gRPC  POST /opentelemetry.proto.collector.profiles.v1development.
 *              ProfilesService/Export over HTTP/2 (cleartext with prior
 *              knowledge, or TLS with ALPN), the message in a 5-byte gRPC
 *              frame (optionally gzip-compressed), the outcome in the
 *              grpc-status trailer.
 * The connection is kept between attempts. The transport never resolves a
 * name or opens a file: the configuration pinned the addresses and loaded
 * the TLS material before the sandbox closed.
 *
 * Everything the server sends is untrusted: sizes are capped and parsing
 * failures are outcomes, not crashes.
 */
#ifndef EMBER_SYMBOLIZER_EXPORT_OTLP_TRANSPORT_H
#define EMBER_SYMBOLIZER_EXPORT_OTLP_TRANSPORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/export/export_config.h"

#define EMBER_OTLP_MAX_RESPONSE (1u << 20)

enum ember_send_outcome {
	EMBER_SEND_OK = 0,   /* delivered (perhaps partly rejected: see rejected_profiles) */
	EMBER_SEND_RETRY,    /* transient: try again later */
	EMBER_SEND_REJECTED, /* permanent: the receiver will never take it */
	EMBER_SEND_ABORTED,  /* the caller asked to stop */
};

/* gRPC status codes ember tells apart. */
enum {
	EMBER_GRPC_OK = 0,
	EMBER_GRPC_CANCELLED = 1,
	EMBER_GRPC_UNKNOWN = 2,
	EMBER_GRPC_INVALID_ARGUMENT = 3,
	EMBER_GRPC_DEADLINE_EXCEEDED = 4,
	EMBER_GRPC_PERMISSION_DENIED = 7,
	EMBER_GRPC_RESOURCE_EXHAUSTED = 8,
	EMBER_GRPC_ABORTED = 10,
	EMBER_GRPC_OUT_OF_RANGE = 11,
	EMBER_GRPC_UNIMPLEMENTED = 12,
	EMBER_GRPC_INTERNAL = 13,
	EMBER_GRPC_UNAVAILABLE = 14,
	EMBER_GRPC_DATA_LOSS = 15,
	EMBER_GRPC_UNAUTHENTICATED = 16,
};

struct ember_send_result {
	enum ember_send_outcome outcome;
	int http_status;           /* 0 when no HTTP answer arrived */
	int grpc_status;           /* gRPC only; -1 when none arrived */
	uint64_t retry_after_ms;   /* from Retry-After / RetryInfo / pushback; 0: none */
	int64_t rejected_profiles; /* partial success */
	char message[256];         /* what went wrong, or the partial-success message */
};

struct ember_transport;

/* Sets up libcurl for cfg (which must stay alive). Returns 0 or a negative errno. */
int ember_transport_create(const struct ember_export_config *cfg, struct ember_transport **out);
void ember_transport_destroy(struct ember_transport *t);

/*
 * Sends body (already gzip-compressed when compressed is true) and waits at
 * most timeout_ms for the answer. The attempt ends early, as ABORTED, when
 * *abort becomes true.
 */
void ember_transport_send(struct ember_transport *t, const uint8_t *body, size_t len,
                          bool compressed, uint64_t timeout_ms, const atomic_bool *abort,
                          struct ember_send_result *r);

/* The retry decision of the OTLP specification for an HTTP status / a gRPC status. */
enum ember_send_outcome ember_otlp_http_outcome(int http_status);
enum ember_send_outcome ember_otlp_grpc_outcome(int grpc_status);
/* The gRPC status an HTTP status stands for when no grpc-status arrived. */
int ember_grpc_status_from_http(int http_status);

/*
 * Parses the body of a gRPC answer: the first length-prefixed message
 * (inflated when flagged compressed and encoding is "gzip"), decoded as an
 * ExportProfilesServiceResponse into r's partial-success fields. Returns 0,
 * or -EBADMSG for a malformed body (an empty body is fine).
 */
int ember_grpc_parse_response(const uint8_t *body, size_t len, const char *encoding,
                              struct ember_send_result *r);
/* Frames msg for gRPC: 1 byte compressed flag, 4 bytes big-endian length. */
int ember_grpc_frame(const uint8_t *msg, size_t len, bool compressed, uint8_t **out,
                     size_t *out_len);
/*
 * Reads the retry delay out of a grpc-status-details-bin value (base64 of a
 * google.rpc.Status with a google.rpc.RetryInfo detail). Returns the delay
 * in milliseconds, or 0.
 */
uint64_t ember_grpc_retry_delay_ms(const char *b64, size_t len);
/* Parses an OTLP/HTTP body: an ExportProfilesServiceResponse after a 2xx,
 * else a google.rpc.Status whose message goes into r->message. */
void ember_http_parse_response(const uint8_t *body, size_t len, const char *content_type,
                               struct ember_send_result *r);

#endif
