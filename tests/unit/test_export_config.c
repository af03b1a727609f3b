// SPDX-License-Identifier: Apache-2.0
/* Export configuration: URLs, the OTEL_EXPORTER_OTLP_* variables, headers, TLS files, resolution.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "shared/parse.h"
#include "shared/str.h"
#include "symbolizer/export/export_config.h"

/* A fake environment: NAME=VALUE strings, NULL-terminated. */
static const char *const *fake_env;

static const char *fake_getenv(const char *name)
{
	size_t n = strlen(name);

	for (const char *const *e = fake_env; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static int from(struct ember_export_config *c, const char *url, const char *const *env, char *err,
                size_t size)
{
	fake_env = env;
	ember_export_config_init(c);
	return ember_export_config_from(c, url, fake_getenv, err, size);
}

START_TEST(urls_pick_protocol_tls_port_and_path)
{
	struct ember_export_config c;
	char err[256];

	ck_assert_int_eq(from(&c, "http://127.0.0.1:4318", NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(c.protocol, EMBER_OTLP_HTTP_PROTOBUF);
	ck_assert(!c.tls);
	ck_assert_str_eq(c.url, "http://127.0.0.1:4318/v1development/profiles");
	ember_export_config_free(&c);

	ck_assert_int_eq(
	    from(&c, "https://collector.example:443/custom/path", NULL, err, sizeof(err)), 0);
	ck_assert(c.tls);
	ck_assert_str_eq(c.host, "collector.example");
	ck_assert_str_eq(c.url, "https://collector.example:443/custom/path");
	ember_export_config_free(&c);

	ck_assert_int_eq(from(&c, "http://otel", NULL, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.port, 4318);
	ember_export_config_free(&c);

	ck_assert_int_eq(from(&c, "grpc://127.0.0.1", NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(c.protocol, EMBER_OTLP_GRPC);
	ck_assert_uint_eq(c.port, 4317);
	ck_assert_str_eq(c.url, "http://127.0.0.1:4317/opentelemetry.proto.collector.profiles."
	                        "v1development.ProfilesService/Export");
	ck_assert_str_eq(c.display, "grpc://127.0.0.1:4317 (gRPC)");
	ember_export_config_free(&c);

	ck_assert_int_eq(from(&c, "grpcs://[::1]:9000/", NULL, err, sizeof(err)), 0);
	ck_assert(c.tls);
	ck_assert_str_eq(c.host, "::1");
	ck_assert_str_eq(c.url, "https://[::1]:9000/opentelemetry.proto.collector.profiles."
	                        "v1development.ProfilesService/Export");
	ember_export_config_free(&c);

	/* The scheme in any case; a query stays with the path; a fragment is not sent. */
	ck_assert_int_eq(from(&c, "HTTPS://h.example/p/q?tenant=a#frag", NULL, err, sizeof(err)),
	                 0);
	ck_assert(c.tls);
	ck_assert_str_eq(c.url, "https://h.example:4318/p/q?tenant=a");
	ember_export_config_free(&c);

	/* An IPv6 link-local address keeps its zone. */
	ck_assert_int_eq(from(&c, "http://[fe80::1%25eth0]:4000", NULL, err, sizeof(err)), 0);
	ck_assert_str_eq(c.host, "fe80::1%eth0");
	ck_assert_uint_eq(c.port, 4000);
	ck_assert_str_eq(c.url, "http://[fe80::1%25eth0]:4000/v1development/profiles");
	ember_export_config_free(&c);
}
END_TEST

START_TEST(bad_urls_say_what_to_do)
{
	static const char *const bad[] = {
	    "127.0.0.1:4318", "ftp://x",          "http://",
	    "http://:4318",   "http://h:0",       "http://h:99999",
	    "http://h:12ab",  "http://user:pw@h", "grpc://h:4317/some/path",
	    "http://[::1",    "http://h h",       "http://h/a b",
	};
	struct ember_export_config c;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(from(&c, bad[i], NULL, err, sizeof(err)) == -EINVAL, "%s accepted",
		              bad[i]);
		ck_assert_msg(err[0], "no message for %s", bad[i]);
		ember_export_config_free(&c);
	}
	ck_assert_int_eq(from(&c, "http://user@h", NULL, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--otlp-header"));
	ember_export_config_free(&c);
}
END_TEST

START_TEST(environment_variables_follow_the_specification)
{
	static const char *const env[] = {
	    "OTEL_EXPORTER_OTLP_ENDPOINT=http://base:4318/otlp/",
	    "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20abc, X-Scope-OrgID = tenant1",
	    "OTEL_EXPORTER_OTLP_PROFILES_HEADERS=x-scope-orgid=tenant2",
	    "OTEL_EXPORTER_OTLP_TIMEOUT=2500",
	    "OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT=1500",
	    "OTEL_EXPORTER_OTLP_COMPRESSION=none",
	    "OTEL_EXPORTER_OTLP_CERTIFICATE=/etc/ca.pem",
	    "OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE=/etc/c.pem",
	    "OTEL_EXPORTER_OTLP_CLIENT_KEY=/etc/k.pem",
	    NULL,
	};
	struct ember_export_config c;
	char err[256];
	bool auth = false, org = false;

	ck_assert_int_eq(from(&c, NULL, env, err, sizeof(err)), 0);
	/* The general endpoint is a base: the signal's path goes below it. */
	ck_assert_str_eq(c.url, "http://base:4318/otlp/v1development/profiles");
	ck_assert_uint_eq(c.timeout_ms, 1500);
	ck_assert(!c.gzip);
	ck_assert_str_eq(c.ca_file, "/etc/ca.pem");
	ck_assert_str_eq(c.cert_file, "/etc/c.pem");
	ck_assert_str_eq(c.key_file, "/etc/k.pem");
	ck_assert_uint_eq(c.nheaders, 2);
	for (size_t i = 0; i < c.nheaders; i++) {
		auth |= !strcmp(c.headers[i], "Authorization: Bearer abc");
		/* The profiles-specific header replaces the general one of the same name. */
		org |= !strcmp(c.headers[i], "x-scope-orgid: tenant2");
	}
	ck_assert(auth && org);
	ember_export_config_free(&c);
}
END_TEST

START_TEST(endpoint_precedence_and_protocol)
{
	static const char *const specific[] = {
	    "OTEL_EXPORTER_OTLP_ENDPOINT=http://base:4318",
	    "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT=http://special:1234/x/profiles",
	    NULL,
	};
	static const char *const grpc[] = {
	    "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317",
	    "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
	    NULL,
	};
	static const char *const json[] = {"OTEL_EXPORTER_OTLP_PROTOCOL=http/json", NULL};
	struct ember_export_config c;
	char err[256];

	ck_assert_int_eq(from(&c, NULL, specific, err, sizeof(err)), 0);
	ck_assert_str_eq(c.url, "http://special:1234/x/profiles");
	ember_export_config_free(&c);
	/* A URL given on the command line wins over both. */
	ck_assert_int_eq(from(&c, "http://cli:1", specific, err, sizeof(err)), 0);
	ck_assert_str_eq(c.host, "cli");
	ember_export_config_free(&c);
	ck_assert_int_eq(from(&c, NULL, grpc, err, sizeof(err)), 0);
	ck_assert_int_eq(c.protocol, EMBER_OTLP_GRPC);
	ck_assert(!c.tls);
	ck_assert_uint_eq(c.port, 4317);
	ember_export_config_free(&c);
	ck_assert_int_eq(from(&c, "http://h", json, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "http/protobuf"));
	ember_export_config_free(&c);
	ck_assert_int_eq(from(&c, NULL, NULL, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "--otlp"));
	ember_export_config_free(&c);
}
END_TEST

START_TEST(headers_are_checked)
{
	struct ember_export_config c;

	ember_export_config_init(&c);
	ck_assert_int_eq(ember_export_config_add_header(&c, "Authorization=Basic dXNlcg=="), 0);
	ck_assert_str_eq(c.headers[0], "Authorization: Basic dXNlcg==");
	ck_assert_int_eq(ember_export_config_add_header(&c, "X-Token: abc"), 0);
	ck_assert_str_eq(c.headers[1], "X-Token: abc");
	ck_assert_int_eq(ember_export_config_add_header(&c, "no value"), -EINVAL);
	ck_assert_int_eq(ember_export_config_add_header(&c, "Bad Name=x"), -EINVAL);
	ck_assert_int_eq(ember_export_config_add_header(&c, "=x"), -EINVAL);
	ck_assert_int_eq(ember_export_config_add_header(&c, "X-Evil=a\r\nHost: b"), -EINVAL);
	ck_assert_uint_eq(c.nheaders, 2);
	ember_export_config_free(&c);
	{
		static const char *const env[] = {"OTEL_EXPORTER_OTLP_HEADERS=novalue", NULL};
		char err[256];

		ck_assert_int_eq(from(&c, "http://h", env, err, sizeof(err)), -EINVAL);
		ember_export_config_free(&c);
	}
}
END_TEST

START_TEST(resource_configuration)
{
	static const char *const env[] = {
	    "OTEL_RESOURCE_ATTRIBUTES=service.name=from-attrs,deployment.environment=prod%2Ceu,"
	    "k8s.node.name=n1",
	    NULL,
	};
	static const char *const both[] = {
	    "OTEL_SERVICE_NAME=svc",
	    "OTEL_RESOURCE_ATTRIBUTES=service.name=from-attrs",
	    NULL,
	};
	static const char *const bad[] = {"OTEL_RESOURCE_ATTRIBUTES=a=1,junk", NULL};
	char service[128] = "", attrs[1024];

	fake_env = env;
	ck_assert_int_eq(
	    ember_resource_config_from(fake_getenv, service, sizeof(service), attrs, sizeof(attrs)),
	    0);
	ck_assert_str_eq(service, "from-attrs");
	ck_assert_str_eq(attrs, "service.name=from-attrs\ndeployment.environment=prod,eu\n"
	                        "k8s.node.name=n1\n");
	/* OTEL_SERVICE_NAME wins over service.name in the attributes. */
	fake_env = both;
	service[0] = '\0';
	ck_assert_int_eq(
	    ember_resource_config_from(fake_getenv, service, sizeof(service), attrs, sizeof(attrs)),
	    0);
	ck_assert_str_eq(service, "svc");
	fake_env = bad;
	ck_assert_int_eq(
	    ember_resource_config_from(fake_getenv, service, sizeof(service), attrs, sizeof(attrs)),
	    -EINVAL);
}
END_TEST

START_TEST(sizes)
{
	uint64_t v;

	ck_assert_int_eq(ember_parse_size("4096", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(ember_parse_size("64k", &v), 0);
	ck_assert_uint_eq(v, 65536);
	ck_assert_int_eq(ember_parse_size("8M", &v), 0);
	ck_assert_uint_eq(v, 8u << 20);
	ck_assert_int_eq(ember_parse_size("1G", &v), 0);
	ck_assert_uint_eq(v, 1u << 30);
	ck_assert_int_eq(ember_parse_size("", &v), -EINVAL);
	ck_assert_int_eq(ember_parse_size("k", &v), -EINVAL);
	ck_assert_int_eq(ember_parse_size("12x", &v), -EINVAL);
	ck_assert_int_eq(ember_parse_size("99999999999999999999G", &v), -EINVAL);
}
END_TEST

START_TEST(prepare_loads_tls_files_and_pins_addresses)
{
	struct ember_export_config c;
	char err[256], ca[] = "/tmp/ember-ca-XXXXXX";
	int fd = mkstemp(ca);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "-----BEGIN CERTIFICATE-----\n", 28), 28);
	close(fd);
	ck_assert_int_eq(from(&c, "https://localhost:4318", NULL, err, sizeof(err)), 0);
	ember_strlcpy(c.ca_file, ca, sizeof(c.ca_file));
	ck_assert_int_eq(ember_export_config_prepare(&c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.ca.len, 28);
	ck_assert_ptr_nonnull(strstr(c.resolve, "localhost:4318:"));
	ck_assert_msg(strstr(c.resolve, "127.0.0.1") || strstr(c.resolve, "[::1]"), "%s",
	              c.resolve);
	ember_export_config_free(&c);
	unlink(ca);

	/* An address needs no resolving; a missing file is named in the message. */
	ck_assert_int_eq(from(&c, "http://127.0.0.1:4318", NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(ember_export_config_prepare(&c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.resolve, "");
	ember_strlcpy(c.cert_file, "/nonexistent/cert.pem", sizeof(c.cert_file));
	ember_strlcpy(c.key_file, "/nonexistent/key.pem", sizeof(c.key_file));
	ck_assert_int_eq(ember_export_config_prepare(&c, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/cert.pem"));
	ember_export_config_free(&c);

	ck_assert_int_eq(from(&c, "http://no-such-host.invalid:4318", NULL, err, sizeof(err)), 0);
	ck_assert_int_lt(ember_export_config_prepare(&c, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "no-such-host.invalid"));
	ember_export_config_free(&c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("export_config");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, urls_pick_protocol_tls_port_and_path);
	tcase_add_test(tc, bad_urls_say_what_to_do);
	tcase_add_test(tc, environment_variables_follow_the_specification);
	tcase_add_test(tc, endpoint_precedence_and_protocol);
	tcase_add_test(tc, headers_are_checked);
	tcase_add_test(tc, resource_configuration);
	tcase_add_test(tc, sizes);
	tcase_add_test(tc, prepare_loads_tls_files_and_pins_addresses);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
