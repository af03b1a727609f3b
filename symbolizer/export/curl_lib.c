// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/export/curl_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* Filled once under `once`; read only after it, so never torn. */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct ember_curl api;
static const struct ember_curl *loaded;
static char why[256];

static void load(void)
{
	void *h = dlopen(EMBER_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *missing = NULL;

	if (!h) {
		snprintf(why, sizeof(why), "%s", dlerror());
		return;
	}
#define LOAD(field, name)                                                                          \
	do {                                                                                       \
		if (!missing && !(api.field = (__typeof__(api.field))dlsym(h, name)))              \
			missing = name;                                                            \
	} while (0)
	LOAD(global_init, "curl_global_init");
	LOAD(global_cleanup, "curl_global_cleanup");
	LOAD(version_info, "curl_version_info");
	LOAD(easy_init, "curl_easy_init");
	LOAD(easy_setopt, "curl_easy_setopt");
	LOAD(easy_getinfo, "curl_easy_getinfo");
	LOAD(easy_perform, "curl_easy_perform");
	LOAD(easy_cleanup, "curl_easy_cleanup");
	LOAD(easy_strerror, "curl_easy_strerror");
	LOAD(slist_append, "curl_slist_append");
	LOAD(slist_free_all, "curl_slist_free_all");
	LOAD(free, "curl_free");
	LOAD(url, "curl_url");
	LOAD(url_set, "curl_url_set");
	LOAD(url_get, "curl_url_get");
	LOAD(url_cleanup, "curl_url_cleanup");
#undef LOAD
	if (missing) {
		/* Older than the 7.77 ember needs (curl_url_* came in 7.62, blobs in 7.71). */
		snprintf(why, sizeof(why), "%s has no %s", EMBER_CURL_SONAME, missing);
		dlclose(h);
		return;
	}
	loaded = &api; /* the handle stays open for the process's life */
}

const struct ember_curl *ember_curl(char *err, size_t err_size)
{
	pthread_once(&once, load);
	if (!loaded && err && err_size)
		snprintf(err, err_size,
		         "cannot load libcurl (%s): OTLP export needs it; install libcurl4 "
		         "(Debian, Ubuntu) or libcurl (Fedora, RHEL)",
		         why);
	return loaded;
}
