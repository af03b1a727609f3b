// SPDX-License-Identifier: Apache-2.0
/*
 * `ember record` and `ember collector`: everything the user asked for is
 * checked here, without privilege of its own, and handed to ember-collector
 * as one configuration (ipc/core_config.h). Record also opens the outputs,
 * the TLS files and the symbolizer's program, and writes the symbolizer's
 * configuration, which the collector hands on unread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/commands.h"
#include "frontend/options.h"
#include "frontend/selection.h"
#include "ipc/endpoint.h"
#include "seccomp/caps.h"
#include "shared/err.h"
#include "shared/formats.h"
#include "shared/log.h"
#include "shared/parse.h"
#include "shared/proc_number.h"
#include "shared/str.h"

#define DEFAULT_OUTPUT "profile.html"

/* Recording loads eBPF programs: say so before anything else is done. */
static int needs_privileges(void)
{
	uint64_t caps = ember_caps_effective();

	if (ember_caps_has(caps, CAP_SYS_ADMIN) ||
	    (ember_caps_has(caps, CAP_BPF) && ember_caps_has(caps, CAP_PERFMON)))
		return 0;
	log_error("recording needs root (or CAP_BPF and CAP_PERFMON): run it with sudo; "
	          "`ember check` lists what is missing");
	return EMBER_EXIT_FAILURE;
}

/* The symbolizer's user: never root. Returns 0 or an exit code. */
static int symbolizer_user(const struct ember_cli *c, const char *name, struct ember_user *u)
{
	if (ember_user_find(name, u))
		return ember_usage_error(c, "no user '%s' for --user", name);
	if (!u->uid)
		return ember_usage_error(
		    c, "the symbolizer must not run as root; choose another --user than '%s'",
		    name);
	return 0;
}

/* What the recording and the daemon share. Returns 0 or an exit code. */
static int sampling(const struct ember_cli *c, const struct ember_user *u,
                    struct ember_core_config *cfg)
{
	long long max_rate;

	cfg->hdr = (struct ember_config_hdr){EMBER_CONFIG_MAGIC, EMBER_CORE_CONFIG_VERSION,
	                                     sizeof(*cfg), EMBER_CONFIG_CORE};
	cfg->log_level = c->log_level;
	cfg->sample_hz = (uint32_t)c->sample_hz;
	cfg->off_cpu_min_ns = c->off_cpu_min_ns;
	cfg->ring_size = c->ring_size;
	cfg->symbolizer_uid = u->uid;
	cfg->symbolizer_gid = u->gid;
	if (!ember_read_proc_number("/proc/sys/kernel/perf_event_max_sample_rate", NULL, 0,
	                            &max_rate) &&
	    (long long)c->sample_hz > max_rate)
		return ember_usage_error(c,
		                         "-F is above the kernel's limit "
		                         "(/proc/sys/kernel/perf_event_max_sample_rate = %s)",
		                         "lower");
	if (c->debug_dir && (c->debug_dir[0] != '/' ||
	                     ember_strlcpy(cfg->debug_dir, c->debug_dir, sizeof(cfg->debug_dir))))
		return ember_usage_error(c, "bad --debug-dir '%s': give an absolute path",
		                         c->debug_dir);
	return ember_select(c, u->uid, u->gid, cfg);
}

/* `ember record -- COMMAND`: its words, packed; its user (--run-as, else sudo's). */
static int command(const struct ember_cli *c, struct ember_core_config *cfg)
{
	struct ember_core_command *k = &cfg->command;
	const char *sudo_uid = getenv("SUDO_UID"), *name = strrchr(c->args[0], '/');
	char line[EMBER_SELECTION_LEN] = "";
	struct ember_user u;
	uint64_t uid;

	for (int i = 0; i < c->nargs; i++) {
		size_t len = strlen(c->args[i]) + 1;

		if (len > sizeof(k->argv) - k->argv_bytes || k->argc == EMBER_CORE_MAX_ARGS)
			return ember_usage_error(c, "the command is longer than %s", "128 KiB");
		memcpy(k->argv + k->argv_bytes, c->args[i], len);
		k->argv_bytes += (uint32_t)len;
		k->argc++;
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", i ? " " : "",
		         c->args[i]);
	}
	if (c->run_as && ember_user_find(c->run_as, &u))
		return ember_usage_error(c, "no user '%s' for --run-as", c->run_as);
	if (!c->run_as && getuid() == 0 && sudo_uid &&
	    (ember_parse_u64(sudo_uid, 0, INT_MAX, &uid) || ember_user_of_uid((uid_t)uid, &u)))
		return ember_usage_error(c, "no user of SUDO_UID %s: give --run-as USER", sudo_uid);
	if (c->run_as || (getuid() == 0 && sudo_uid)) {
		k->set_user = 1;
		k->uid = u.uid;
		k->gid = u.gid;
		k->ngroups = (uint32_t)u.ngroups;
		memcpy(k->groups, u.groups, u.ngroups * sizeof(u.groups[0]));
		ember_strlcpy(k->user, u.name, sizeof(k->user));
		ember_strlcpy(k->home, u.home, sizeof(k->home));
	}
	/* The profile says which command ran, titled and serviced by its name. */
	name = name ? name + 1 : c->args[0];
	ember_select_note(cfg, "command", line, name, name);
	return 0;
}

static void unlink_outputs(const struct ember_core_config *cfg)
{
	for (uint32_t i = 0; i < cfg->noutputs; i++)
		unlink(cfg->outputs[i].path);
}

/* The outputs, created (or truncated) now by whoever runs ember; each a descriptor for the
 * symbolizer. Returns 0 or an exit code. */
static int open_outputs(const struct ember_cli *c, struct ember_core_config *cfg,
                        struct ember_symbolizer_config *sym, struct ember_fdlist *fds)
{
	size_t n = c->noutputs || c->otlp ? c->noutputs : 1;

	for (size_t i = 0; i < n; i++) {
		const char *path = c->noutputs ? c->outputs[i] : DEFAULT_OUTPUT;
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
		enum ember_format f;

		if (fd < 0 || ember_format_from_path(path, &f)) {
			log_error_errno(errno, "cannot write %s: %m; choose a writable path for -o",
			                path);
			unlink_outputs(cfg);
			return EMBER_EXIT_FAILURE;
		}
		ember_strlcpy(cfg->outputs[i].path, path, sizeof(cfg->outputs[i].path));
		ember_strlcpy(cfg->outputs[i].format, ember_format_name(f),
		              sizeof(cfg->outputs[i].format));
		cfg->noutputs++;
		sym->outputs[i].fd = ember_fdlist_add(fds, fd);
		sym->outputs[i].format = f;
		ember_strlcpy(sym->outputs[i].path, path, sizeof(sym->outputs[i].path));
		sym->noutputs++;
	}
	return 0;
}

/* Execs the collector, which checks its configuration. Returns only on failure. */
static int exec_collector(struct ember_core_config *cfg, struct ember_fdlist *fds)
{
	int exe, memfd, err;

	exe = ember_program_open("ember-collector");
	memfd = exe < 0 ? exe : ember_config_memfd(cfg, sizeof(*cfg));
	err = memfd < 0 ? memfd : ember_exec(exe, "ember-collector", memfd, fds);
	if (exe >= 0)
		log_error_errno(err, "cannot run ember-collector: %m");
	return EMBER_EXIT_FAILURE;
}

/* Record: the symbolizer's program and configuration, then what it is handed, for the
 * collector to pass on (from EMBER_SYMBOLIZER_PASSED_FD in the child, in this order). */
static int hand_over(struct ember_core_config *cfg, const struct ember_symbolizer_config *sym,
                     const struct ember_fdlist *symfds, struct ember_fdlist *fds)
{
	int exe = ember_program_open("ember-symbolizer");
	int memfd = exe < 0 ? exe : ember_config_memfd(sym, sizeof(*sym));

	if (memfd < 0)
		return EMBER_EXIT_FAILURE;
	cfg->symbolizer_exe_fd = ember_fdlist_add(fds, exe);
	cfg->symbolizer_config_fd = ember_fdlist_add(fds, memfd);
	for (size_t i = 0; i < symfds->n; i++)
		cfg->passed_fds[cfg->npassed++] = ember_fdlist_add(fds, symfds->fds[i]);
	/* An output is the collector's passed descriptor at its place in the symbolizer's list. */
	for (uint32_t i = 0; i < cfg->noutputs; i++)
		cfg->outputs[i].fd = cfg->passed_fds[sym->outputs[i].fd - symfds->base];
	return 0;
}

int ember_cmd_record(struct ember_cli *c)
{
	static struct ember_core_config cfg;
	static struct ember_symbolizer_config sym;
	struct ember_fdlist symfds = {.base = EMBER_SYMBOLIZER_PASSED_FD};
	struct ember_fdlist fds = {.base = EMBER_CONFIG_FIRST_FD};
	struct ember_user u;
	int err;

	if ((err = needs_privileges()) ||
	    (err = symbolizer_user(c, c->user ? c->user : "nobody", &u)))
		return err;
	if (c->run_as && !c->nargs)
		return ember_usage_error(
		    c, "%s needs a command: ember record --run-as USER -- COMMAND", "--run-as");
	if ((err = sampling(c, &u, &cfg)) || (c->nargs && (err = command(c, &cfg))) ||
	    (err = ember_symbolizer_settings(c, &sym, &symfds)))
		return err;
	cfg.mode = EMBER_CORE_RECORD;
	cfg.duration_ms = c->duration_ms;
	sym.mode = EMBER_SYMBOLIZER_RECORD;
	sym.progress = !c->no_progress && isatty(STDERR_FILENO);
	sym.progress_s = c->duration_ms / 1000;
	cfg.flags = (sym.progress ? EMBER_CORE_PROGRESS : 0) | (sym.export ? EMBER_CORE_EXPORT : 0);
	if ((err = open_outputs(c, &cfg, &sym, &symfds)) ||
	    (err = hand_over(&cfg, &sym, &symfds, &fds)) || (err = exec_collector(&cfg, &fds)))
		unlink_outputs(&cfg);
	return err;
}

int ember_cmd_collector(struct ember_cli *c)
{
	static struct ember_core_config cfg;
	struct ember_fdlist fds = {.base = EMBER_CONFIG_FIRST_FD};
	const char *dir = c->runtime_dir ? c->runtime_dir : EMBER_RUNTIME_DIR;
	struct ember_user u;
	int err;

	if ((err = needs_privileges()) ||
	    (err = symbolizer_user(c, c->user ? c->user : "ember", &u)) ||
	    (err = sampling(c, &u, &cfg)))
		return err;
	cfg.mode = EMBER_CORE_DAEMON;
	if (dir[0] != '/' || (size_t)snprintf(cfg.socket_path, sizeof(cfg.socket_path), "%s/%s",
	                                      dir, EMBER_SOCKET_NAME) >= sizeof(cfg.socket_path))
		return ember_usage_error(c,
		                         "bad --runtime-dir '%s': give an absolute path of at "
		                         "most 80 bytes",
		                         dir);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return ember_usage_error(c, "cannot create the runtime directory %s", dir);
	return exec_collector(&cfg, &fds);
}
