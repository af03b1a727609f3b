// SPDX-License-Identifier: Apache-2.0
/*
 * ember-collector: the privileged core. It has no command line: the front
 * end (`ember record`, `ember collector`, `ember check`) checks what the
 * user asked for and execs this program with one configuration in a sealed
 * memfd (ipc/core_config.h). The core checks that configuration field by
 * field, as it checks its peer's messages, and runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/bpf_loader.h"
#include "collector/run_loop.h"
#include "ipc/config_fd.h"
#include "ipc/core_config.h"
#include "shared/err.h"
#include "shared/log.h"

/* The command's argv, from the configuration's packed strings (checked: argc of them). */
static int command_argv(const struct ember_core_command *k, struct ember_command *c)
{
	char **argv = calloc(k->argc + 1, sizeof(*argv));
	const char *p = k->argv;

	if (!argv)
		return -ENOMEM;
	for (uint32_t i = 0; i < k->argc; i++, p += strlen(p) + 1)
		argv[i] = (char *)p;
	c->argv = argv;
	if (k->set_user) {
		c->user = k->user;
		c->home = k->home;
		c->uid = k->uid;
		c->gid = k->gid;
		c->groups = k->groups;
		c->ngroups = k->ngroups;
	}
	return 0;
}

static int record(const struct ember_core_config *c)
{
	static struct ember_record_opts o; /* large (pids): not on the stack */
	int err = 0;

	o.cfg = c;
	for (uint32_t i = 0; i < c->npids; i++)
		o.pids[o.npids++] = c->pids[i];
	o.selection.root = c->cgroup_root;
	o.selection.paths = c->cgroups;
	o.selection.ncgroups = c->ncgroups;
	o.command.pidfd = o.command.gate = -1;
	/* The passed descriptors are for the symbolizer: never for the command. */
	for (uint32_t i = 0; i < c->npassed; i++)
		fcntl(c->passed_fds[i], F_SETFD, FD_CLOEXEC);
	fcntl(c->symbolizer_exe_fd, F_SETFD, FD_CLOEXEC);
	fcntl(c->symbolizer_config_fd, F_SETFD, FD_CLOEXEC);
	if (c->command.argc && (err = command_argv(&c->command, &o.command)))
		return EMBER_EXIT_FAILURE;
	err = ember_record_run(&o);
	free((void *)o.command.argv);
	return err;
}

int main(int argc, char **argv)
{
	static struct ember_core_config c; /* large (the command's argv): not on the stack */
	const char *why;
	int err;

	(void)argv;
	ember_log_init("ember-collector", EMBER_LOG_INFO);
	err = argc > 1 ? -E2BIG
	               : ember_config_fd_read(EMBER_CONFIG_FD, EMBER_CONFIG_CORE,
	                                      EMBER_CORE_CONFIG_VERSION, &c, sizeof(c));
	close(EMBER_CONFIG_FD);
	if (err) {
		log_error("takes no arguments: it is started by `ember record`, `ember collector` "
		          "or `ember check` (see `ember collector --help`)");
		return EMBER_EXIT_USAGE;
	}
	if (ember_core_config_check(&c, &why))
		return log_error("refused its configuration (%s): reinstall ember, whose front "
		                 "end and collector must come from one build",
		                 why),
		       EMBER_EXIT_FAILURE;
	if (c.mode != EMBER_CORE_DAEMON)
		ember_log_init("ember", (enum ember_log_level)c.log_level);
	ember_log_set_level((enum ember_log_level)c.log_level);
	if (c.mode == EMBER_CORE_CHECK) /* the front end says what the exit status means */
		return -ember_bpf_check_load();
	return record(&c);
}
