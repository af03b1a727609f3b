// SPDX-License-Identifier: Apache-2.0
/*
 * ember-symbolizer: the unprivileged half of ember. It never runs as root
 * and has no command line: the front end (`ember record` through the
 * collector, `ember symbolizer`, `ember report`, `diff`, `top`) hands it one
 * configuration (symbolizer/config.h) and every descriptor it needs. It
 * checks the configuration, resolves the export endpoint, and enters its
 * sandbox before it reads any record or profile; from then on it works only
 * with descriptors.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipc/config_fd.h"
#include "ipc/core_config.h"
#include "shared/err.h"
#include "shared/log.h"
#include "shared/str.h"
#include "symbolizer/config.h"
#include "symbolizer/daemon.h"
#include "symbolizer/export/curl_lib.h"
#include "symbolizer/export/export_queue.h"
#include "symbolizer/file_commands.h"
#include "symbolizer/interp/interp_ops.h"
#include "symbolizer/memory/mem_budget.h"
#include "symbolizer/sandbox.h"
#include "symbolizer/session.h"
#include "symbolizer/symbols/sigbus_guard.h"

/*
 * Reads the TLS files from their descriptors and resolves the endpoint, while the sandbox
 * still allows it, then creates the exporter (its thread starts in the sandbox). Returns 0
 * or an exit code.
 */
static int start_export(const struct ember_symbolizer_config *c, struct ember_export_config *cfg,
                        struct ember_session_export *ex)
{
	const struct ember_curl *curl;
	char err[2560] = "";
	int e;

	ember_strlcpy(ex->service_name, c->service_name, sizeof(ex->service_name));
	ember_strlcpy(ex->resource_attrs, c->resource_attrs, sizeof(ex->resource_attrs));
	ex->otlp_symbols = c->otlp_symbols;
	if (!c->export)
		return 0;
	*cfg = c->export_cfg;
	/* What libcurl, OpenSSL and libc would otherwise read lazily, after the sandbox
	 * closed: libcurl itself (loaded only to export), the time zone (certificate
	 * checks) and, through curl_global_init, OpenSSL's configuration. */
	tzset();
	if (!(curl = ember_curl(err, sizeof(err))))
		return log_error("%s", err), EMBER_EXIT_FAILURE;
	if (curl->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return log_error("cannot initialize libcurl"), EMBER_EXIT_FAILURE;
	e = ember_export_config_prepare(cfg, err, sizeof(err));
	if (!e && (e = ember_exporter_create(cfg, &ex->exporter)))
		snprintf(err, sizeof(err), "cannot start the OTLP export to %s: %s%s", cfg->display,
		         strerror(-e),
		         e == -EPROTONOSUPPORT ? " (this libcurl lacks HTTP/2 or TLS support)"
		                               : "");
	if (e) {
		log_error("%s", err);
		ember_export_config_free(cfg);
		return EMBER_EXIT_FAILURE;
	}
	ex->interval_ns =
	    (c->export_interval_ms ? c->export_interval_ms : EMBER_OTLP_DEFAULT_INTERVAL_MS) *
	    1000000ull;
	ex->delivery_deadline_ns = c->export_deadline_ms * 1000000ull;
	log_debug("OTLP: shipping to %s every %.1f s", ember_exporter_endpoint(ex->exporter),
	          (double)ex->interval_ns / 1e9);
	return 0;
}

/* Export: TCP to the endpoint's port only, and the export thread starts inside. */
static void sandbox_network(struct ember_sandbox_opts *sb, const struct ember_session_export *ex,
                            const struct ember_export_config *cfg)
{
	sb->network = ex->exporter != NULL;
	sb->tcp_port = ex->exporter ? cfg->port : 0;
	sb->threads_later = ex->exporter != NULL;
}

/* `ember record`'s child: the sandbox closes after the handshake. */
static int enter_record_sandbox(void *ctx)
{
	int err = ember_sandbox_enter(ctx);

	if (!err)
		ember_sandbox_test_violation();
	return err;
}

static int run_record(const struct ember_symbolizer_config *c, struct ember_session_export *ex,
                      const struct ember_export_config *cfg)
{
	static struct ember_session_opts so;
	struct ember_sandbox_opts sb = {.die_with_parent = true};

	so.sock = EMBER_SYMBOLIZER_SOCKET_FD;
	so.signal_fd = -1;
	for (uint32_t i = 0; i < c->noutputs; i++) {
		so.outputs[i].fd = c->outputs[i].fd;
		so.outputs[i].format = (enum ember_format)c->outputs[i].format;
		ember_strlcpy(so.outputs[i].path, c->outputs[i].path, sizeof(so.outputs[i].path));
	}
	so.noutputs = c->noutputs;
	so.progress = c->progress;
	so.progress_s = c->progress_s;
	so.view = (enum ember_view)c->view;
	so.interpreters = c->interpreters;
	so.interp_flags = c->signatures ? EMBER_INTERP_SIGNATURES : 0;
	so.memory_budget = c->memory_budget;
	so.objcache_bytes = c->cache_bytes;
	so.export = *ex;
	sandbox_network(&sb, ex, cfg);
	so.enter_sandbox = enter_record_sandbox;
	so.sandbox_ctx = &sb;
	return ember_session_run(&so) ? EMBER_EXIT_FAILURE : EMBER_EXIT_OK;
}

static int run_daemon(const struct ember_symbolizer_config *c, struct ember_session_export *ex,
                      const struct ember_export_config *cfg)
{
	static struct ember_daemon_opts d;

	d.socket_path = c->connect;
	d.rotation.dir_fd = c->output_dir_fd;
	for (uint32_t i = 0; i < c->nformats; i++)
		d.rotation.formats[i] = (enum ember_format)c->formats[i];
	d.rotation.nformats = c->nformats;
	d.rotation.keep = c->keep;
	d.interval_ms = c->interval_ms;
	d.sandbox.output_dir_fd = c->output_dir_fd;
	sandbox_network(&d.sandbox, ex, cfg);
	d.objcache_bytes = c->cache_bytes;
	d.view = (enum ember_view)c->view;
	d.interpreters = c->interpreters;
	d.interp_flags = c->signatures ? EMBER_INTERP_SIGNATURES : 0;
	d.memory_budget = c->memory_budget;
	d.export = *ex;
	return ember_daemon_run(&d);
}

/* Reads and checks the configuration at EMBER_CONFIG_FD. Returns 0 or an exit code. */
static int read_config(int argc, struct ember_symbolizer_config *c)
{
	const char *why;
	int err = argc > 1 ? -E2BIG
	                   : ember_config_fd_read(EMBER_CONFIG_FD, EMBER_CONFIG_SYMBOLIZER,
	                                          EMBER_SYMBOLIZER_CONFIG_VERSION, c, sizeof(*c));

	close(EMBER_CONFIG_FD);
	if (err) {
		log_error(
		    "takes no arguments: it is started by `ember record`, `ember symbolizer`, "
		    "`ember report`, `ember diff` or `ember top` (see `ember symbolizer "
		    "--help`)");
		return EMBER_EXIT_USAGE;
	}
	if (ember_symbolizer_config_check(c, &why)) {
		log_error("refused its configuration (%s): reinstall ember, whose front end and "
		          "symbolizer must come from one build",
		          why);
		return EMBER_EXIT_FAILURE;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct ember_symbolizer_config c;
	static struct ember_export_config cfg;
	struct ember_session_export ex = {0};
	int code;

	(void)argv;
	ember_log_init("ember-symbolizer", EMBER_LOG_INFO);
	/* It parses what any process put in its files and memory: never with root's rights. */
	if (geteuid() == 0 || getuid() == 0) {
		log_error(
		    "refuses to run as root: start it through `ember`, which gives it a user");
		return EMBER_EXIT_FAILURE;
	}
	/* Before the sandbox, which forbids rt_sigaction: a file that shrinks while libelf
	 * has it mapped must not kill the symbolizer. */
	if (ember_sigbus_guard_install())
		return log_error_errno(-errno, "cannot install the SIGBUS handler: %m"), 1;
	if ((code = read_config(argc, &c)))
		return code;
	if (c.mode >= EMBER_SYMBOLIZER_REPORT)
		ember_log_init("ember", EMBER_LOG_INFO);
	ember_log_set_level((enum ember_log_level)c.log_level);
	if (c.mode >= EMBER_SYMBOLIZER_REPORT)
		return ember_file_command_run(&c);
	ember_mem_tune();
	if ((code = start_export(&c, &cfg, &ex)))
		return code;
	code = c.mode == EMBER_SYMBOLIZER_RECORD ? run_record(&c, &ex, &cfg)
	                                         : run_daemon(&c, &ex, &cfg);
	ember_exporter_destroy(ex.exporter);
	if (c.export)
		ember_curl(NULL, 0)->global_cleanup();
	return code;
}
