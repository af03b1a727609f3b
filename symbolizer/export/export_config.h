/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where and how profiles are shipped: the endpoint (an --otlp URL or the
 * standard OTEL_EXPORTER_OTLP_* / OTEL_EXPORTER_OTLP_PROFILES_* environment
 * variables), headers, TLS material, compression, timeouts and the delivery
 * queue. The front end builds it from the options and the environment and
 * opens the TLS files (as whoever ran it); the symbolizer, never root, reads
 * them from those descriptors into memory (the transport hands them to
 * libcurl as blobs) and resolves the endpoint's addresses once, before its
 * sandbox closes: no DNS answer is parsed by a privileged process.
 *
 * URL schemes: http:// and https:// speak OTLP/HTTP (binary protobuf; the
 * path defaults to /v1development/profiles) unless OTEL_EXPORTER_OTLP_PROTOCOL
 * says grpc; grpc:// (cleartext HTTP/2) and grpcs:// (TLS) speak OTLP/gRPC.
 */
#ifndef EMBER_SYMBOLIZER_EXPORT_EXPORT_CONFIG_H
#define EMBER_SYMBOLIZER_EXPORT_EXPORT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/str.h"

#define EMBER_OTLP_MAX_HEADERS 32
#define EMBER_OTLP_HEADER_LEN  1024
#define EMBER_OTLP_HTTP_PATH   "/v1development/profiles"
#define EMBER_OTLP_GRPC_PATH                                                                       \
	"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
#define EMBER_OTLP_DEFAULT_INTERVAL_MS    10000
#define EMBER_OTLP_DEFAULT_TIMEOUT_MS     10000
#define EMBER_OTLP_DEFAULT_QUEUE_BYTES    (8u << 20)
/* Under the 4 MiB a default Collector's gRPC server and Pyroscope take, with room to spare. */
#define EMBER_OTLP_DEFAULT_MAX_REQUEST ((4u << 20) - (256u << 10))
#define EMBER_OTLP_MIN_MAX_REQUEST     (64u << 10)
#define EMBER_OTLP_DEFAULT_DEADLINE_MS    30000
#define EMBER_OTLP_DEFAULT_MAX_ELAPSED_MS (300u * 1000u)

enum ember_otlp_protocol {
	EMBER_OTLP_HTTP_PROTOBUF = 0,
	EMBER_OTLP_GRPC,
};

struct ember_blob {
	void *data;
	size_t len;
};

struct ember_export_config {
	enum ember_otlp_protocol protocol;
	bool tls;
	char url[2048];     /* what libcurl posts to: scheme (http/https), host, port, path */
	char display[2048]; /* the endpoint as users write it, for messages */
	char host[256];     /* as written in the URL, without brackets */
	uint16_t port;
	char headers[EMBER_OTLP_MAX_HEADERS][EMBER_OTLP_HEADER_LEN]; /* "Name: value" */
	size_t nheaders;
	bool gzip;
	uint64_t timeout_ms;     /* one attempt */
	uint64_t max_elapsed_ms; /* retries of one batch stop after this */
	uint64_t initial_backoff_ms, max_backoff_ms;
	size_t queue_bytes;       /* bound of the delivery queue */
	size_t max_request_bytes; /* larger profiles go as several requests */
	char ca_file[1024], cert_file[1024], key_file[1024]; /* as configured: for messages */
	/* The TLS files, opened by ember_export_config_open_tls (the front end): -1 none. */
	int ca_fd, cert_fd, key_fd;

	/* Filled by ember_export_config_prepare, before the sandbox closes. */
	struct ember_blob ca, cert, key;
	char resolve[1024]; /* "host:port:addr[,addr]..." for CURLOPT_RESOLVE */
};

/* Defaults: gzip, 10 s timeout, no TLS files, 8 MiB queue, requests of at most 3.75 MiB, backoff 1 s
 * doubling to 30 s, 5 min per batch. */
void ember_export_config_init(struct ember_export_config *c);
void ember_export_config_free(struct ember_export_config *c);

/*
 * Sets the endpoint from a URL (NULL: from OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT
 * or OTEL_EXPORTER_OTLP_ENDPOINT) and reads the other OTEL_EXPORTER_OTLP_*
 * variables through getenv_fn (getenv, or a test double). Explicit options
 * set afterwards override them. On error, err (size err_size) says what is
 * wrong and what to do; returns 0 or -EINVAL/-ENOENT (no endpoint at all).
 */
int ember_export_config_from(struct ember_export_config *c, const char *url,
                             const char *(*getenv_fn)(const char *name), char *err,
                             size_t err_size);

/* Parses "scheme://host[:port][/path]" into c. Returns 0 or -EINVAL with a message. */
int ember_export_config_set_url(struct ember_export_config *c, const char *url, char *err,
                                size_t err_size);
/* Adds "Name=value" or "Name: value" as a header. Returns 0 or -EINVAL/-E2BIG. */
int ember_export_config_add_header(struct ember_export_config *c, const char *spec);

/*
 * Checks a configuration handed over whole (the symbolizer's, from the front end): strings
 * that end in their arrays, headers without line breaks, numbers in range, a descriptor for
 * every TLS file named, nothing prepared yet. Returns 0 or -EINVAL.
 */
int ember_export_config_check(const struct ember_export_config *c);
/*
 * Opens the TLS files the configuration names (the CA bundle, the system's when TLS is used
 * without one; a client certificate and key), where it has no descriptor for them yet.
 * The front end calls it, as the user who ran it, and hands the descriptors on. Returns 0
 * or a negative errno with a message in err.
 */
int ember_export_config_open_tls(struct ember_export_config *c, char *err, size_t err_size);
/*
 * Reads the TLS files into memory (from their descriptors, opening what has none) and
 * resolves the endpoint's host. Returns 0 or a negative errno with a message in err.
 */
int ember_export_config_prepare(struct ember_export_config *c, char *err, size_t err_size);

/*
 * Resource configuration from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
 * ("k=v,k2=v2", values percent-decoded): service (may stay unchanged) and
 * attrs as "key=value\n" lines. Returns 0 or -EINVAL for a malformed list.
 */
int ember_resource_config_from(const char *(*getenv_fn)(const char *name), char *service,
                               size_t service_size, char *attrs, size_t attrs_size);


#endif
