// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>

#include "bpf/interp.h"
#include "shared/log.h"
#include "symbolizer/profile/profile.h"
#include "symbolizer/profile/top.h"

#define MIN_BUDGET      (16ull << 20)
#define MIN_CACHE       (1ull << 20)
#define MAX_BYTES       (1ull << 40)
#define MIN_INTERVAL_MS 1000
#define MAX_KEEP        1000000
#define MAX_TOP_ROWS    1000000

static bool files_ok(const struct ember_symbolizer_file *f, uint32_t n, bool outputs)
{
	for (uint32_t i = 0; i < n; i++)
		if (!ember_config_fd_ok(f[i].fd) || !EMBER_CONFIG_STR_OK(f[i].path) ||
		    (outputs && f[i].format >= EMBER_FORMAT_MAX))
			return false;
	return true;
}

static int check_common(const struct ember_symbolizer_config *c, const char **why)
{
	EMBER_CONFIG_REFUSE_IF(
	    c->mode < EMBER_SYMBOLIZER_RECORD || c->mode >= EMBER_SYMBOLIZER_MODE_MAX, "mode");
	EMBER_CONFIG_REFUSE_IF(c->log_level > EMBER_LOG_DEBUG, "log_level");
	EMBER_CONFIG_REFUSE_IF(c->view >= EMBER_VIEW_MAX, "view");
	EMBER_CONFIG_REFUSE_IF(c->interpreters & ~EMBER_RUNTIMES_ALL, "interpreters");
	EMBER_CONFIG_REFUSE_IF(c->signatures > 1, "signatures");
	EMBER_CONFIG_REFUSE_IF(c->memory_budget &&
	                           (c->memory_budget < MIN_BUDGET || c->memory_budget > MAX_BYTES),
	                       "memory_budget");
	EMBER_CONFIG_REFUSE_IF(c->cache_bytes &&
	                           (c->cache_bytes < MIN_CACHE || c->cache_bytes > MAX_BYTES),
	                       "cache_bytes");
	EMBER_CONFIG_REFUSE_IF(
	    c->noutputs > EMBER_MAX_OUTPUTS || !files_ok(c->outputs, c->noutputs, true), "outputs");
	EMBER_CONFIG_REFUSE_IF(
	    c->progress > 1 || (c->progress && c->mode != EMBER_SYMBOLIZER_RECORD), "progress");
	return 0;
}

/* The daemon's directory and formats, and what only it has. */
static int check_daemon(const struct ember_symbolizer_config *c, const char **why)
{
	bool daemon = c->mode == EMBER_SYMBOLIZER_DAEMON;

	EMBER_CONFIG_REFUSE_IF(!EMBER_CONFIG_STR_OK(c->connect) || daemon != (c->connect[0] == '/'),
	                       "connect");
	EMBER_CONFIG_REFUSE_IF(daemon != ember_config_fd_ok(c->output_dir_fd), "output_dir_fd");
	EMBER_CONFIG_REFUSE_IF(c->nformats > EMBER_FORMAT_MAX || daemon != (c->nformats > 0),
	                       "nformats");
	for (uint32_t i = 0; i < c->nformats; i++)
		EMBER_CONFIG_REFUSE_IF(c->formats[i] >= EMBER_FORMAT_MAX, "formats");
	EMBER_CONFIG_REFUSE_IF(daemon ? c->interval_ms < MIN_INTERVAL_MS : c->interval_ms != 0,
	                       "interval_ms");
	EMBER_CONFIG_REFUSE_IF(c->keep > MAX_KEEP, "keep");
	EMBER_CONFIG_REFUSE_IF(daemon && c->noutputs,
	                       "outputs: the daemon writes into its directory");
	return 0;
}

static int check_export(const struct ember_symbolizer_config *c, const char **why)
{
	bool live = c->mode == EMBER_SYMBOLIZER_RECORD || c->mode == EMBER_SYMBOLIZER_DAEMON;

	EMBER_CONFIG_REFUSE_IF(c->export > 1 || (c->export && !live), "export");
	EMBER_CONFIG_REFUSE_IF(c->export && ember_export_config_check(&c->export_cfg),
	                       "export_cfg");
	EMBER_CONFIG_REFUSE_IF(c->export_interval_ms && c->export_interval_ms < MIN_INTERVAL_MS,
	                       "export_interval_ms");
	EMBER_CONFIG_REFUSE_IF(!EMBER_CONFIG_STR_OK(c->service_name) ||
	                           !EMBER_CONFIG_STR_OK(c->resource_attrs),
	                       "service_name");
	EMBER_CONFIG_REFUSE_IF(c->otlp_symbols >= EMBER_OTLP_SYMBOLS_MAX, "otlp_symbols");
	return 0;
}

/* report: one input, outputs or --stats; diff: two inputs, one HTML output; top: one input. */
static int check_files(const struct ember_symbolizer_config *c, const char **why)
{
	uint32_t inputs = c->mode == EMBER_SYMBOLIZER_DIFF ? 2
	                  : c->mode == EMBER_SYMBOLIZER_REPORT || c->mode == EMBER_SYMBOLIZER_TOP
	                      ? 1
	                      : 0;

	EMBER_CONFIG_REFUSE_IF(c->ninputs != inputs || !files_ok(c->inputs, c->ninputs, false),
	                       "inputs");
	EMBER_CONFIG_REFUSE_IF(c->stats > 1 || (c->stats && c->mode != EMBER_SYMBOLIZER_REPORT),
	                       "stats");
	EMBER_CONFIG_REFUSE_IF(c->mode == EMBER_SYMBOLIZER_REPORT && !c->noutputs && !c->stats,
	                       "outputs");
	EMBER_CONFIG_REFUSE_IF(c->mode == EMBER_SYMBOLIZER_DIFF &&
	                           (c->noutputs != 1 || c->outputs[0].format != EMBER_FORMAT_HTML),
	                       "outputs: a diff is one HTML file");
	EMBER_CONFIG_REFUSE_IF(c->mode == EMBER_SYMBOLIZER_TOP && c->noutputs,
	                       "outputs: top prints");
	EMBER_CONFIG_REFUSE_IF(c->mode == EMBER_SYMBOLIZER_TOP
	                           ? c->top_rows < 1 || c->top_rows > MAX_TOP_ROWS
	                           : c->top_rows != 0,
	                       "top_rows");
	EMBER_CONFIG_REFUSE_IF(c->top_order > EMBER_TOP_BY_TOTAL, "top_order");
	EMBER_CONFIG_REFUSE_IF(
	    !EMBER_CONFIG_STR_OK(c->trace) ||
		(c->trace[0] && (c->mode == EMBER_SYMBOLIZER_DIFF ||
	                         (strlen(c->trace) != 32 && strlen(c->trace) != EMBER_LINK_HEX) ||
	                         strspn(c->trace, "0123456789abcdef") != strlen(c->trace))),
	    "trace");
	return 0;
}

int ember_symbolizer_config_check(const struct ember_symbolizer_config *c, const char **why)
{
	int err;

	*why = "";
	if ((err = check_common(c, why)) || (err = check_daemon(c, why)) ||
	    (err = check_export(c, why)) || (err = check_files(c, why)))
		return err;
	return 0;
}
