// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/export/export_config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/cleanup.h"
#include "shared/err.h"
#include "shared/parse.h"
#include "shared/str.h"
#include "symbolizer/export/curl_lib.h"

#define TLS_FILE_MAX  (1u << 20)
#define MAX_ADDRESSES 8
#define HTTP_PORT     4318
#define GRPC_PORT     4317

/* Where distributions keep the CA bundle, tried when no CA file is configured. */
static const char *const system_ca_bundles[] = {
    "/etc/ssl/certs/ca-certificates.crt", /* Debian, Ubuntu, Alpine */
    "/etc/pki/tls/certs/ca-bundle.crt",   /* Fedora, RHEL */
    "/etc/ssl/ca-bundle.pem",             /* openSUSE */
    "/etc/ssl/cert.pem",
};

static int fail(char *err, size_t size, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t size, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && size) {
		va_start(ap, fmt);
		vsnprintf(err, size, fmt, ap);
		va_end(ap);
	}
	return code;
}

void ember_export_config_init(struct ember_export_config *c)
{
	memset(c, 0, sizeof(*c));
	c->gzip = true;
	c->timeout_ms = EMBER_OTLP_DEFAULT_TIMEOUT_MS;
	c->max_elapsed_ms = EMBER_OTLP_DEFAULT_MAX_ELAPSED_MS;
	c->initial_backoff_ms = 1000;
	c->max_backoff_ms = 30000;
	c->queue_bytes = EMBER_OTLP_DEFAULT_QUEUE_BYTES;
	c->max_request_bytes = EMBER_OTLP_DEFAULT_MAX_REQUEST;
	c->ca_fd = c->cert_fd = c->key_fd = -1;
}

void ember_export_config_free(struct ember_export_config *c)
{
	ember_closep(&c->ca_fd);
	ember_closep(&c->cert_fd);
	ember_closep(&c->key_fd);
	c->ca_fd = c->cert_fd = c->key_fd = -1;
	free(c->ca.data);
	free(c->cert.data);
	if (c->key.data) {
		explicit_bzero(c->key.data, c->key.len);
		free(c->key.data);
	}
	memset(c, 0, sizeof(*c));
}

static bool host_char_ok(char ch, bool v6)
{
	return isalnum((unsigned char)ch) || ch == '.' || ch == '-' || ch == '_' ||
	       (v6 && (ch == ':' || ch == '%'));
}

/* Only ever holds what libcurl returned: the library is loaded then. */
static void curl_freep(char **p)
{
	if (*p)
		ember_curl(NULL, 0)->free(*p);
}

/* A part of u, or NULL when it has none; freed with curl_freep. */
static char *url_part(CURLU *u, CURLUPart what)
{
	char *s = NULL;

	return ember_curl(NULL, 0)->url_get(u, what, &s, 0) == CURLUE_OK ? s : NULL;
}

/* Where the request goes: the URL's path (and query), or the protocol's own. */
static int request_path(struct ember_export_config *c, CURLU *u, const char *url, char *out,
                        size_t size, char *err, size_t err_size)
{
	__attribute__((cleanup(curl_freep))) char *path = url_part(u, CURLUPART_PATH);
	__attribute__((cleanup(curl_freep))) char *query = url_part(u, CURLUPART_QUERY);
	bool root = (!path || !strcmp(path, "/")) && !query;
	int n;

	if (c->protocol == EMBER_OTLP_GRPC && !root)
		return fail(err, err_size, -EINVAL,
		            "a gRPC endpoint takes no path ('%s'): give grpc://HOST:PORT", url);
	if (c->protocol == EMBER_OTLP_GRPC || root)
		n = snprintf(out, size, "%s",
		             c->protocol == EMBER_OTLP_GRPC ? EMBER_OTLP_GRPC_PATH
		                                            : EMBER_OTLP_HTTP_PATH);
	else
		n = snprintf(out, size, "%s%s%s", path ? path : "/", query ? "?" : "",
		             query ? query : "");
	if (n < 0 || (size_t)n >= size)
		return fail(err, err_size, -EINVAL, "the URL '%s' is too long", url);
	for (const char *p = out; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return fail(err, err_size, -EINVAL, "bad character in the path of '%s'",
			            url);
	return 0;
}

/* The URL's parts, read by libcurl's URL parser, checked and kept in c. */
static int parse_url(struct ember_export_config *c, CURLU *u, const char *url, char *err,
                     size_t err_size)
{
	static const struct {
		const char *scheme;
		bool grpc, tls;
	} schemes[] = {
	    {"http", false, false},
	    {"https", false, true},
	    {"grpc", true, false},
	    {"grpcs", true, true},
	};
	__attribute__((cleanup(curl_freep))) char *scheme = NULL, *user = NULL, *pass = NULL,
						  *host = NULL, *zone = NULL, *port = NULL;
	char path[sizeof(c->url)];
	CURLUcode rc =
	    ember_curl(NULL, 0)->url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME);
	size_t i = 0, host_len;
	uint64_t num;
	bool v6;
	int n;

	if (rc == CURLUE_BAD_PORT_NUMBER)
		return fail(err, err_size, -EINVAL, "bad port in '%s': give 1 to 65535", url);
	if (rc || !(scheme = url_part(u, CURLUPART_SCHEME)))
		i = ARRAY_SIZE(schemes);
	while (i < ARRAY_SIZE(schemes) && strcasecmp(scheme, schemes[i].scheme))
		i++;
	if (i == ARRAY_SIZE(schemes))
		return fail(err, err_size, -EINVAL,
		            "'%s' is not an OTLP endpoint: give http://, https://, grpc:// or "
		            "grpcs:// and a host, e.g. http://127.0.0.1:4318",
		            url);
	c->tls = schemes[i].tls;
	if (schemes[i].grpc)
		c->protocol = EMBER_OTLP_GRPC;
	if ((user = url_part(u, CURLUPART_USER)) || (pass = url_part(u, CURLUPART_PASSWORD)))
		return fail(err, err_size, -EINVAL,
		            "credentials in the URL '%s' are not supported: send them as a header "
		            "(--otlp-header 'Authorization=Basic ...')",
		            url);
	host = url_part(u, CURLUPART_HOST);
	zone = url_part(u, CURLUPART_ZONEID);
	v6 = host && host[0] == '[';
	n = host ? snprintf(c->host, sizeof(c->host), "%.*s%s%s", (int)(strlen(host) - 2 * v6),
	                    host + v6, zone ? "%" : "", zone ? zone : "")
	         : 0;
	host_len = n > 0 ? (size_t)n : 0;
	if (!host_len || host_len >= sizeof(c->host))
		return fail(err, err_size, -EINVAL, "no host (or a too long one) in '%s'", url);
	for (i = 0; i < host_len; i++)
		if (!host_char_ok(c->host[i], v6))
			return fail(err, err_size, -EINVAL, "bad character in the host of '%s'",
			            url);
	num = c->protocol == EMBER_OTLP_GRPC ? GRPC_PORT : HTTP_PORT;
	if ((port = url_part(u, CURLUPART_PORT)) && ember_parse_u64(port, 1, 65535, &num))
		return fail(err, err_size, -EINVAL, "bad port in '%s': give 1 to 65535", url);
	c->port = (uint16_t)num;
	if ((n = request_path(c, u, url, path, sizeof(path), err, err_size)))
		return n;
	/* In a URL a zone's '%' is written %25. */
	n = snprintf(c->url, sizeof(c->url), "%s://%s%.*s%s%s%s:%u%s", c->tls ? "https" : "http",
	             v6 ? "[" : "", (int)(zone ? host_len - strlen(zone) - 1 : host_len), c->host,
	             zone ? "%25" : "", zone ? zone : "", v6 ? "]" : "", c->port, path);
	if (n < 0 || (size_t)n >= sizeof(c->url))
		return fail(err, err_size, -EINVAL, "the URL '%s' is too long", url);
	if (c->protocol == EMBER_OTLP_GRPC)
		snprintf(c->display, sizeof(c->display), "%s://%s%s%s:%u (gRPC)",
		         c->tls ? "grpcs" : "grpc", v6 ? "[" : "", c->host, v6 ? "]" : "", c->port);
	else
		snprintf(c->display, sizeof(c->display), "%s", c->url);
	return 0;
}

int ember_export_config_set_url(struct ember_export_config *c, const char *url, char *err,
                                size_t err_size)
{
	const struct ember_curl *api = ember_curl(err, err_size);
	CURLU *u;
	int r;

	if (!api)
		return -ELIBACC;
	u = api->url();
	r = u ? parse_url(c, u, url, err, err_size)
	      : fail(err, err_size, -ENOMEM, "out of memory reading the URL '%s'", url);
	api->url_cleanup(u);
	return r;
}

static bool header_name_ok(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("!#$%&'*+-.^_`|~", s[i]))
			return false;
	return true;
}

static int add_header(struct ember_export_config *c, const char *name, size_t name_len,
                      const char *value)
{
	int n;

	if (!header_name_ok(name, name_len))
		return -EINVAL;
	for (const char *v = value; *v; v++)
		if (*v == '\r' || *v == '\n')
			return -EINVAL;
	/* A later setting of the same header replaces the earlier one. */
	for (size_t i = 0; i < c->nheaders; i++)
		if (!strncasecmp(c->headers[i], name, name_len) && c->headers[i][name_len] == ':') {
			memcpy(c->headers[i], c->headers[--c->nheaders], sizeof(c->headers[i]));
			break;
		}
	if (c->nheaders == EMBER_OTLP_MAX_HEADERS)
		return -E2BIG;
	while (*value == ' ' || *value == '\t')
		value++;
	n = snprintf(c->headers[c->nheaders], sizeof(c->headers[0]), "%.*s: %s", (int)name_len,
	             name, value);
	if (n < 0 || (size_t)n >= sizeof(c->headers[0]))
		return -E2BIG;
	c->nheaders++;
	return 0;
}

int ember_export_config_add_header(struct ember_export_config *c, const char *spec)
{
	size_t name_len = strcspn(spec, "=:");

	if (!spec[name_len])
		return -EINVAL;
	return add_header(c, spec, name_len, spec + name_len + 1);
}

static int hex_value(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = (char)tolower((unsigned char)ch);
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* Percent-decodes s[0..len) into out (size bytes), trimming blanks. Returns 0 or -EINVAL. */
static int percent_decode(const char *s, size_t len, char *out, size_t size)
{
	size_t n = 0;

	while (len && (*s == ' ' || *s == '\t'))
		s++, len--;
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];

		if (ch == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return -EINVAL;
			hi = hex_value(s[i + 1]);
			lo = hex_value(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -EINVAL;
			ch = (char)(hi * 16 + lo);
			i += 2;
		}
		if (!ch || ch == '\n' || ch == '\r' || n + 1 >= size)
			return -EINVAL;
		out[n++] = ch;
	}
	out[n] = '\0';
	return 0;
}

/* Calls fn for each "key=value" of a comma-separated list; values percent-decoded. */
static int for_each_pair(const char *list, int (*fn)(void *ctx, const char *key, const char *value),
                         void *ctx)
{
	char key[256], value[1024];

	while (list && *list) {
		size_t len = strcspn(list, ","), klen;
		const char *eq = memchr(list, '=', len);
		int err;

		if (len) {
			if (!eq)
				return -EINVAL;
			klen = (size_t)(eq - list);
			if (percent_decode(list, klen, key, sizeof(key)) || !key[0] ||
			    strchr(key, '=') ||
			    percent_decode(eq + 1, len - klen - 1, value, sizeof(value)))
				return -EINVAL;
			err = fn(ctx, key, value);
			if (err)
				return err;
		}
		list += len + (list[len] == ',');
	}
	return 0;
}

static int header_pair(void *ctx, const char *key, const char *value)
{
	return add_header(ctx, key, strlen(key), value);
}

/* The profiles-specific variable, else the general one. */
static const char *otlp_env(const char *(*getenv_fn)(const char *), const char *suffix)
{
	char name[96];
	const char *v;

	snprintf(name, sizeof(name), "OTEL_EXPORTER_OTLP_PROFILES_%s", suffix);
	v = getenv_fn(name);
	if (v && *v)
		return v;
	snprintf(name, sizeof(name), "OTEL_EXPORTER_OTLP_%s", suffix);
	v = getenv_fn(name);
	return v && *v ? v : NULL;
}

static int env_protocol(struct ember_export_config *c, const char *(*getenv_fn)(const char *),
                        char *err, size_t err_size)
{
	const char *v = otlp_env(getenv_fn, "PROTOCOL");

	if (!v || !strcmp(v, "http/protobuf"))
		c->protocol = EMBER_OTLP_HTTP_PROTOBUF;
	else if (!strcmp(v, "grpc"))
		c->protocol = EMBER_OTLP_GRPC;
	else
		return fail(err, err_size, -EINVAL,
		            "OTEL_EXPORTER_OTLP_PROTOCOL '%s' is not supported: use grpc or "
		            "http/protobuf",
		            v);
	return 0;
}

/* OTEL_EXPORTER_OTLP_ENDPOINT is a base URL: the signal's path goes below its own. */
static int env_endpoint(struct ember_export_config *c, const char *(*getenv_fn)(const char *),
                        char *err, size_t err_size)
{
	const char *specific = getenv_fn("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	const char *base = getenv_fn("OTEL_EXPORTER_OTLP_ENDPOINT");
	char url[2048];
	size_t len;

	if (specific && *specific)
		return ember_export_config_set_url(c, specific, err, err_size);
	if (!base || !*base)
		return fail(err, err_size, -ENOENT,
		            "no OTLP endpoint: give --otlp URL or set OTEL_EXPORTER_OTLP_ENDPOINT");
	len = strlen(base);
	while (len && base[len - 1] == '/')
		len--;
	if (c->protocol == EMBER_OTLP_GRPC || !strncasecmp(base, "grpc", 4))
		snprintf(url, sizeof(url), "%.*s", (int)len, base);
	else
		snprintf(url, sizeof(url), "%.*s%s", (int)len, base, EMBER_OTLP_HTTP_PATH);
	return ember_export_config_set_url(c, url, err, err_size);
}

int ember_export_config_from(struct ember_export_config *c, const char *url,
                             const char *(*getenv_fn)(const char *name), char *err, size_t err_size)
{
	const char *v;
	uint64_t ms;
	int e;

	if ((e = env_protocol(c, getenv_fn, err, err_size)))
		return e;
	e = url ? ember_export_config_set_url(c, url, err, err_size)
	        : env_endpoint(c, getenv_fn, err, err_size);
	if (e)
		return e;
	if ((v = getenv_fn("OTEL_EXPORTER_OTLP_HEADERS")) && for_each_pair(v, header_pair, c))
		return fail(err, err_size, -EINVAL,
		            "OTEL_EXPORTER_OTLP_HEADERS is not a list of name=value");
	if ((v = getenv_fn("OTEL_EXPORTER_OTLP_PROFILES_HEADERS")) &&
	    for_each_pair(v, header_pair, c))
		return fail(err, err_size, -EINVAL,
		            "OTEL_EXPORTER_OTLP_PROFILES_HEADERS is not a list of name=value");
	if ((v = otlp_env(getenv_fn, "TIMEOUT"))) {
		if (ember_parse_u64(v, 1, 3600000, &ms))
			return fail(err, err_size, -EINVAL,
			            "OTEL_EXPORTER_OTLP_TIMEOUT '%s': give milliseconds", v);
		c->timeout_ms = ms;
	}
	if ((v = otlp_env(getenv_fn, "COMPRESSION"))) {
		if (strcmp(v, "gzip") && strcmp(v, "none"))
			return fail(err, err_size, -EINVAL,
			            "OTEL_EXPORTER_OTLP_COMPRESSION '%s': use gzip or none", v);
		c->gzip = !strcmp(v, "gzip");
	}
	if ((v = otlp_env(getenv_fn, "CERTIFICATE")))
		ember_strlcpy(c->ca_file, v, sizeof(c->ca_file));
	if ((v = otlp_env(getenv_fn, "CLIENT_CERTIFICATE")))
		ember_strlcpy(c->cert_file, v, sizeof(c->cert_file));
	if ((v = otlp_env(getenv_fn, "CLIENT_KEY")))
		ember_strlcpy(c->key_file, v, sizeof(c->key_file));
	return 0;
}

/* Reads a TLS file from its descriptor (which it closes) into out. */
static int read_fd(int *fdp, struct ember_blob *out)
{
	_cleanup_close_ int fd = TAKE_FD(*fdp);
	struct stat st;
	size_t got = 0;
	char *buf;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > TLS_FILE_MAX)
		return -EINVAL;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	while (got < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	out->data = buf;
	out->len = got;
	return 0;
}

static int open_file(const char *path, int *fd)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	return *fd < 0 ? neg_errno() : 0;
}

int ember_export_config_open_tls(struct ember_export_config *c, char *err, size_t err_size)
{
	const char *env_ca = getenv("SSL_CERT_FILE");
	int e;

	if (c->ca_file[0] && c->ca_fd < 0) {
		if ((e = open_file(c->ca_file, &c->ca_fd)))
			return fail(err, err_size, e, "cannot read the CA file %s: %s", c->ca_file,
			            strerror(-e));
	} else if (c->tls && c->ca_fd < 0) {
		e = -ENOENT;
		if (env_ca && *env_ca)
			e = open_file(env_ca, &c->ca_fd);
		for (size_t i = 0; e && i < ARRAY_SIZE(system_ca_bundles); i++)
			e = open_file(system_ca_bundles[i], &c->ca_fd);
		if (e)
			return fail(err, err_size, e,
			            "no CA bundle found for TLS: install ca-certificates or give "
			            "--otlp-ca FILE");
	}
	if (c->cert_file[0] && c->cert_fd < 0 && (e = open_file(c->cert_file, &c->cert_fd)))
		return fail(err, err_size, e, "cannot read the client certificate %s: %s",
		            c->cert_file, strerror(-e));
	if (c->key_file[0] && c->key_fd < 0 && (e = open_file(c->key_file, &c->key_fd)))
		return fail(err, err_size, e, "cannot read the client key %s: %s", c->key_file,
		            strerror(-e));
	if (!c->cert_file[0] != !c->key_file[0])
		return fail(err, err_size, -EINVAL,
		            "a client certificate needs its key and a key its certificate: give "
		            "both --otlp-cert and --otlp-key");
	return 0;
}

/* The TLS files' contents, from the descriptors ember_export_config_open_tls left. */
static int load_tls(struct ember_export_config *c, char *err, size_t err_size)
{
	int e = ember_export_config_open_tls(c, err, err_size);

	if (!e && c->ca_fd >= 0 && (e = read_fd(&c->ca_fd, &c->ca)))
		return fail(err, err_size, e, "cannot read the CA file %s: %s", c->ca_file,
		            strerror(-e));
	if (!e && c->cert_fd >= 0 && (e = read_fd(&c->cert_fd, &c->cert)))
		return fail(err, err_size, e, "cannot read the client certificate %s: %s",
		            c->cert_file, strerror(-e));
	if (!e && c->key_fd >= 0 && (e = read_fd(&c->key_fd, &c->key)))
		return fail(err, err_size, e, "cannot read the client key %s: %s", c->key_file,
		            strerror(-e));
	return e;
}

static bool is_ip_literal(const char *host)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* The sandbox forbids the name service: resolve now and pin the addresses. */
static int resolve(struct ember_export_config *c, char *err, size_t err_size)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res, *ai;
	size_t len;
	int e, naddr = 0;

	c->resolve[0] = '\0';
	if (is_ip_literal(c->host))
		return 0;
	e = getaddrinfo(c->host, NULL, &hints, &res);
	if (e)
		return fail(err, err_size, -EHOSTUNREACH,
		            "cannot resolve the OTLP endpoint's host '%s': %s; check the URL and "
		            "the name service",
		            c->host, gai_strerror(e));
	len = (size_t)snprintf(c->resolve, sizeof(c->resolve), "%s:%u:", c->host, c->port);
	for (ai = res; ai && naddr < MAX_ADDRESSES && len < sizeof(c->resolve); ai = ai->ai_next) {
		char addr[INET6_ADDRSTRLEN];
		const void *src =
		    ai->ai_family == AF_INET6
			? (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr
			: (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr;
		int n;

		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    !inet_ntop(ai->ai_family, src, addr, sizeof(addr)) || strstr(c->resolve, addr))
			continue;
		n = snprintf(c->resolve + len, sizeof(c->resolve) - len,
		             ai->ai_family == AF_INET6 ? "%s[%s]" : "%s%s", naddr ? "," : "", addr);
		if (n < 0 || (size_t)n >= sizeof(c->resolve) - len)
			break;
		len += (size_t)n;
		naddr++;
	}
	freeaddrinfo(res);
	if (!naddr)
		return fail(err, err_size, -EHOSTUNREACH, "'%s' has no IPv4 or IPv6 address",
		            c->host);
	return 0;
}

static bool str_ok(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

int ember_export_config_check(const struct ember_export_config *c)
{
	if (c->protocol > EMBER_OTLP_GRPC || !str_ok(c->url, sizeof(c->url)) || !c->url[0] ||
	    !str_ok(c->display, sizeof(c->display)) || !str_ok(c->host, sizeof(c->host)) ||
	    !c->host[0] || !c->port || c->nheaders > EMBER_OTLP_MAX_HEADERS || !c->timeout_ms ||
	    c->queue_bytes < 4096 || c->max_request_bytes < EMBER_OTLP_MIN_MAX_REQUEST ||
	    !c->max_elapsed_ms || !c->initial_backoff_ms ||
	    c->max_backoff_ms < c->initial_backoff_ms || !str_ok(c->ca_file, sizeof(c->ca_file)) ||
	    !str_ok(c->cert_file, sizeof(c->cert_file)) ||
	    !str_ok(c->key_file, sizeof(c->key_file)) || (c->cert_file[0] && c->cert_fd < 0) ||
	    (c->key_file[0] && c->key_fd < 0) || (c->tls && c->ca_fd < 0) || c->ca.data ||
	    c->cert.data || c->key.data || c->resolve[0])
		return -EINVAL;
	for (size_t i = 0; i < c->nheaders; i++)
		if (!str_ok(c->headers[i], sizeof(c->headers[i])) || !strchr(c->headers[i], ':') ||
		    strpbrk(c->headers[i], "\r\n"))
			return -EINVAL;
	return 0;
}

int ember_export_config_prepare(struct ember_export_config *c, char *err, size_t err_size)
{
	int e = load_tls(c, err, err_size);

	return e ? e : resolve(c, err, err_size);
}

struct resource_ctx {
	char *service, *attrs;
	size_t service_size, attrs_size, attrs_len;
	bool service_from_env;
};

static int resource_pair(void *ctx, const char *key, const char *value)
{
	struct resource_ctx *r = ctx;
	int n;

	if (!strcmp(key, "service.name") && !r->service_from_env)
		ember_strlcpy(r->service, value, r->service_size);
	n = snprintf(r->attrs + r->attrs_len, r->attrs_size - r->attrs_len, "%s=%s\n", key, value);
	if (n < 0 || (size_t)n >= r->attrs_size - r->attrs_len)
		return -E2BIG;
	r->attrs_len += (size_t)n;
	return 0;
}

int ember_resource_config_from(const char *(*getenv_fn)(const char *name), char *service,
                               size_t service_size, char *attrs, size_t attrs_size)
{
	const char *name = getenv_fn("OTEL_SERVICE_NAME"), *list;
	struct resource_ctx r = {service, attrs, service_size, attrs_size, 0, false};

	if (name && *name) {
		ember_strlcpy(service, name, service_size);
		r.service_from_env = true;
	}
	attrs[0] = '\0';
	list = getenv_fn("OTEL_RESOURCE_ATTRIBUTES");
	return list ? for_each_pair(list, resource_pair, &r) : 0;
}
