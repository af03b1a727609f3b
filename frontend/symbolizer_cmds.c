// SPDX-License-Identifier: Apache-2.0
/*
 * `ember symbolizer`, `ember report`, `ember diff`, `ember top`, and the
 * symbolizer's part of `ember record`: the symbolizer's configuration
 * (symbolizer/config.h), with every file it will read or write already
 * open. The symbolizer never runs as root: started as root, these commands
 * change the user before they exec it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frontend/commands.h"
#include "frontend/options.h"
#include "ipc/endpoint.h"
#include "seccomp/caps.h"
#include "shared/err.h"
#include "shared/log.h"
#include "shared/str.h"
#include "bpf/interp.h"
#include "symbolizer/profile/top.h"

#define CONFINED_USER       "nobody"
#define DEFAULT_INTERVAL_MS (60 * 1000)

static const char *env(const char *name)
{
	return getenv(name);
}

int ember_config_memfd(const void *config, size_t size)
{
	int fd = ember_config_fd_create(config, size);

	if (fd < 0)
		log_error_errno(fd, "cannot hand over the configuration: %m");
	return fd;
}

static void config_header(struct ember_symbolizer_config *sym, const struct ember_cli *c)
{
	sym->hdr = (struct ember_config_hdr){EMBER_CONFIG_MAGIC, EMBER_SYMBOLIZER_CONFIG_VERSION,
	                                     sizeof(*sym), EMBER_CONFIG_SYMBOLIZER};
	sym->log_level = c->log_level;
	sym->view = c->view;
}

/* Its number in the program's table, or -1 for no descriptor. */
static int pass_fd(struct ember_fdlist *fds, int fd)
{
	return fd < 0 ? -1 : ember_fdlist_add(fds, fd);
}

/* --otlp and the OTEL_EXPORTER_OTLP_* variables; the TLS files opened. */
static int export_settings(const struct ember_cli *c, struct ember_symbolizer_config *sym,
                           struct ember_fdlist *fds)
{
	struct ember_export_config *x = &sym->export_cfg;
	char err[512] = "";
	int e;

	ember_export_config_init(x);
	e = ember_export_config_from(x, c->otlp, env, err, sizeof(err));
	for (size_t i = 0; !e && i < c->notlp_headers; i++)
		if (ember_export_config_add_header(x, c->otlp_headers[i]))
			return ember_usage_error(c,
			                         "bad --otlp-header '%s': give NAME=VALUE (at most "
			                         "32 headers of 1 KiB)",
			                         c->otlp_headers[i]);
	if (e)
		return log_error("%s", err), EMBER_EXIT_USAGE;
	if ((c->otlp_ca && ember_strlcpy(x->ca_file, c->otlp_ca, sizeof(x->ca_file))) ||
	    (c->otlp_cert && ember_strlcpy(x->cert_file, c->otlp_cert, sizeof(x->cert_file))) ||
	    (c->otlp_key && ember_strlcpy(x->key_file, c->otlp_key, sizeof(x->key_file))))
		return ember_usage_error(c, "a TLS file's path is too long%s", "");
	if (c->otlp_compression != UINT32_MAX)
		x->gzip = c->otlp_compression == 0;
	x->timeout_ms = c->otlp_timeout_ms ? c->otlp_timeout_ms : x->timeout_ms;
	x->queue_bytes = c->otlp_queue_bytes ? c->otlp_queue_bytes : x->queue_bytes;
	x->max_request_bytes =
	    c->otlp_max_request_bytes ? c->otlp_max_request_bytes : x->max_request_bytes;
	/* As the user who ran ember, who may read them; the symbolizer gets descriptors. */
	if ((e = ember_export_config_open_tls(x, err, sizeof(err)))) {
		log_error("%s", err);
		ember_export_config_free(x);
		return EMBER_EXIT_FAILURE;
	}
	x->ca_fd = pass_fd(fds, x->ca_fd);
	x->cert_fd = pass_fd(fds, x->cert_fd);
	x->key_fd = pass_fd(fds, x->key_fd);
	sym->export = 1;
	sym->export_interval_ms = c->interval_ms;
	sym->export_deadline_ms = c->otlp_deadline_ms;
	return 0;
}

int ember_symbolizer_settings(const struct ember_cli *c, struct ember_symbolizer_config *sym,
                              struct ember_fdlist *fds)
{
	config_header(sym, c);
	sym->interpreters = c->interpreters_given ? c->interpreters : EMBER_RUNTIMES_ALL;
	sym->signatures = c->signatures;
	sym->memory_budget = c->memory_budget;
	sym->cache_bytes = c->cache_bytes;
	sym->otlp_symbols = c->otlp_symbols; /* OTLP files too, not only shipping */
	if (ember_resource_config_from(env, sym->service_name, sizeof(sym->service_name),
	                               sym->resource_attrs, sizeof(sym->resource_attrs))) {
		log_error("OTEL_RESOURCE_ATTRIBUTES is not a list of key=value (at most 1 KiB)");
		return EMBER_EXIT_USAGE;
	}
	if (c->service_name)
		ember_strlcpy(sym->service_name, c->service_name, sizeof(sym->service_name));
	return c->otlp ? export_settings(c, sym, fds) : 0;
}

/* Started as root: the user to become (--user, or for the file commands nobody). */
static int user_to_become(const struct ember_cli *c, const char *name, struct ember_user *u)
{
	if (geteuid() && getuid())
		return 0;
	if (!name)
		return ember_usage_error(c,
		                         "started as root: give %s (the user the collector "
		                         "expects)",
		                         "--user NAME");
	if (ember_user_find(name, u) || !u->uid) {
		log_error("%s: running as root, and there is no user '%s' other than root to run "
		          "as: %s",
		          c->name, name,
		          c->cmd->bit == EMBER_CMD_SYMBOLIZER ? "give another --user"
		                                              : "run it as an ordinary user");
		return EMBER_EXIT_FAILURE;
	}
	return 0;
}

/* Becomes u if root, then execs the symbolizer with sym. Returns only on failure. */
static int exec_symbolizer(const struct ember_cli *c, const struct ember_symbolizer_config *sym,
                           struct ember_fdlist *fds, const struct ember_user *u)
{
	int exe, memfd, err;

	exe = ember_program_open("ember-symbolizer");
	memfd = exe < 0 ? exe : ember_config_memfd(sym, sizeof(*sym));
	if (memfd < 0)
		return EMBER_EXIT_FAILURE;
	if ((!geteuid() || !getuid()) && ember_caps_become(u->uid, u->gid))
		return log_error("%s: cannot become %s", c->name, u->name), EMBER_EXIT_FAILURE;
	err = ember_exec(exe, "ember-symbolizer", memfd, fds);
	log_error_errno(err, "cannot run ember-symbolizer: %m");
	return EMBER_EXIT_FAILURE;
}

int ember_cmd_symbolizer(struct ember_cli *c)
{
	static struct ember_symbolizer_config sym;
	struct ember_fdlist fds = {.base = EMBER_CONFIG_FIRST_FD};
	struct ember_user u = {0};
	int err, dir;

	if (!c->output_dir)
		return ember_usage_error(c, "give %s (where the daemon writes its intervals)",
		                         "--output-dir DIR");
	if ((err = user_to_become(c, c->user, &u)) ||
	    (err = ember_symbolizer_settings(c, &sym, &fds)))
		return err;
	ember_strlcpy(sym.connect,
	              c->connect ? c->connect : EMBER_RUNTIME_DIR "/" EMBER_SOCKET_NAME,
	              sizeof(sym.connect));
	if (sym.connect[0] != '/')
		return ember_usage_error(c, "bad --connect '%s': give an absolute path",
		                         sym.connect);
	dir = open(c->output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return log_error_errno(errno,
		                       "cannot open the output directory %s: %m; create it "
		                       "for this user",
		                       c->output_dir),
		       EMBER_EXIT_FAILURE;
	sym.mode = EMBER_SYMBOLIZER_DAEMON;
	sym.output_dir_fd = ember_fdlist_add(&fds, dir);
	for (size_t i = 0; i < c->nformats; i++)
		sym.formats[sym.nformats++] = c->formats[i];
	if (!sym.nformats) {
		sym.formats[sym.nformats++] = EMBER_FORMAT_FOLDED;
		sym.formats[sym.nformats++] = EMBER_FORMAT_PPROF;
	}
	sym.interval_ms = c->interval_ms ? c->interval_ms : DEFAULT_INTERVAL_MS;
	sym.keep = (uint32_t)c->keep;
	return exec_symbolizer(c, &sym, &fds, &u);
}

/* ---- report, diff, top --------------------------------------------------------------------- */

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return !fstat(a, &sa) && !fstat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino && S_ISREG(sa.st_mode);
}

/* The inputs, opened as whoever runs ember ("-": standard input). Returns 0 or an exit code. */
static int open_inputs(const struct ember_cli *c, struct ember_symbolizer_config *sym,
                       struct ember_fdlist *fds)
{
	for (int i = 0; i < c->nargs; i++) {
		bool in = !strcmp(c->args[i], "-");
		struct ember_symbolizer_file *f = &sym->inputs[sym->ninputs++];
		int fd = in ? fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3)
		            : open(c->args[i], O_RDONLY | O_CLOEXEC | O_NOCTTY);

		if (fd < 0) {
			fprintf(stderr, "%s: cannot open %s: %s\n", c->name, c->args[i],
			        strerror(errno));
			return EMBER_EXIT_FAILURE;
		}
		ember_strlcpy(f->path, in ? "standard input" : c->args[i], sizeof(f->path));
		f->fd = ember_fdlist_add(fds, fd);
	}
	return 0;
}

/* The outputs: created, or opened as they are (the symbolizer replaces what they hold). */
static int open_file_outputs(const struct ember_cli *c, struct ember_symbolizer_config *sym,
                             struct ember_fdlist *fds, bool *created)
{
	for (size_t i = 0; i < c->noutputs; i++) {
		const char *path = c->outputs[i];
		struct ember_symbolizer_file *f = &sym->outputs[sym->noutputs++];
		enum ember_format fmt;
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0644);

		created[i] = fd >= 0;
		if (fd < 0 && errno == EEXIST)
			fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			fprintf(stderr, "%s: cannot write %s: %s\n", c->name, path,
			        strerror(errno));
			return EMBER_EXIT_FAILURE;
		}
		for (uint32_t k = 0; k < sym->ninputs; k++)
			if (same_file(fd, fds->fds[sym->inputs[k].fd - fds->base]))
				return close(fd), ember_usage_error(c,
				                                    "%s is also an input: choose "
				                                    "another output",
				                                    path);
		ember_format_from_path(path, &fmt);
		f->format = fmt;
		ember_strlcpy(f->path, path, sizeof(f->path));
		f->fd = ember_fdlist_add(fds, fd);
	}
	return 0;
}

/* Waits for the symbolizer that reads the files. Returns its exit code. */
static int wait_reader(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return log_error_errno(errno, "cannot wait for the reader: %m"),
			       EMBER_EXIT_FAILURE;
	if (WIFSIGNALED(status)) {
		log_error("reading the profile failed with signal %d (%s); please report this "
		          "with the input file",
		          WTERMSIG(status), strsignal(WTERMSIG(status)));
		return EMBER_EXIT_FAILURE;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? EMBER_EXIT_OK : EMBER_EXIT_FAILURE;
}

/* What each file command needs beyond its options. Returns 0 or an exit code. */
static int files_wanted(const struct ember_cli *c, struct ember_symbolizer_config *sym)
{
	bool diff = c->cmd->bit == EMBER_CMD_DIFF, top = c->cmd->bit == EMBER_CMD_TOP;

	sym->mode = diff  ? EMBER_SYMBOLIZER_DIFF
	            : top ? EMBER_SYMBOLIZER_TOP
	                  : EMBER_SYMBOLIZER_REPORT;
	if (c->nargs < (diff ? 2 : 1))
		return ember_usage_error(
		    c, diff ? "give the %s profiles BASE and NEW" : "give the %s profile to read",
		    diff ? "two" : "input");
	if (diff && c->noutputs != 1)
		return ember_usage_error(c,
		                         c->noutputs ? "a diff has one output (%s)"
		                                     : "give an output with -o, e.g. %s",
		                         "-o diff.html");
	if (!top && !diff && !c->noutputs && !c->stats)
		return ember_usage_error(c, "give an output with -o (e.g. -o %s) or --stats",
		                         "profile.html");
	if (c->trace && ember_link_prefix(c->trace, sym->trace, sizeof(sym->trace)))
		return ember_usage_error(c,
		                         "--trace takes a trace id (32 hex digits) or ID:SPAN "
		                         "(and the span's 16), not %s",
		                         c->trace);
	sym->stats = c->stats;
	sym->top_rows = top ? (uint32_t)c->top_rows : 0;
	sym->top_order = top ? c->top_order : 0;
	return 0;
}

int ember_cmd_files(struct ember_cli *c)
{
	static struct ember_symbolizer_config sym;
	struct ember_fdlist fds = {.base = EMBER_CONFIG_FIRST_FD};
	bool created[EMBER_MAX_OUTPUTS] = {0};
	struct ember_user u = {0};
	int rc;
	pid_t pid;

	config_header(&sym, c);
	if ((rc = files_wanted(c, &sym)) || (rc = user_to_become(c, CONFINED_USER, &u)) ||
	    (rc = open_inputs(c, &sym, &fds)) || (rc = open_file_outputs(c, &sym, &fds, created)))
		goto out;
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(exec_symbolizer(c, &sym, &fds, &u));
	rc = pid < 0 ? EMBER_EXIT_FAILURE : wait_reader(pid);
out:
	ember_fdlist_close(&fds);
	for (size_t i = 0; rc && i < c->noutputs; i++)
		if (created[i])
			unlink(c->outputs[i]);
	return rc;
}
