/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl, loaded when ember first needs it (an endpoint's URL read, an export
 * started) rather than linked: a run that writes only files never maps it.
 * Linked, libcurl and the 31 libraries it needs (TLS, Kerberos, LDAP, SSH,
 * IDN) were mapped into the symbolizer and every helper it forks, and their
 * relocations and constructors ran at each start: 6 ms of CPU and 5.7 MB of
 * PSS per process, for nothing unless OTLP is exported.
 *
 * The symbolizer loads it before its sandbox closes (the loader reads files).
 * The table is the process's one copy of the library's entry points, filled
 * once; every caller gets the same.
 */
#ifndef EMBER_EXPORT_CURL_LIB_H
#define EMBER_EXPORT_CURL_LIB_H

#include <curl/curl.h>
#include <stddef.h>

/* The soname ember is built against (libcurl4 on Debian, libcurl on Fedora). */
#define EMBER_CURL_SONAME "libcurl.so.4"

struct ember_curl {
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_global_cleanup) *global_cleanup;
	__typeof__(curl_version_info) *version_info;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_perform) *easy_perform;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
	__typeof__(curl_free) *free;
	__typeof__(curl_url) *url;
	__typeof__(curl_url_set) *url_set;
	__typeof__(curl_url_get) *url_get;
	__typeof__(curl_url_cleanup) *url_cleanup;
};

/*
 * The library's functions, loaded on the first call (thread-safe), or NULL
 * when it cannot be loaded: then why, from the loader, goes to err (which may
 * be NULL) with what to install.
 */
const struct ember_curl *ember_curl(char *err, size_t err_size);

#endif
