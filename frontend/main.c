// SPDX-License-Identifier: Apache-2.0
/*
 * ember: the command users type. It parses and checks every command's
 * options (options.h), looks up users and cgroups, opens the files each
 * command reads or writes, and execs the program that does the work with one
 * configuration in a sealed memfd: ember-collector (record, the collector
 * daemon, check's load test) or ember-symbolizer (the symbolizer daemon,
 * report, diff, top). It holds no privileged code of its own and parses
 * nothing a profiled process wrote.
 */
#include <stdio.h>
#include <string.h>

#include "frontend/commands.h"
#include "frontend/options.h"
#include "shared/err.h"
#include "shared/log.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ember COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < ember_ncommands; i++)
		fprintf(f, "  %-11s %s\n", ember_commands[i].name, ember_commands[i].summary);
	fprintf(f, "\n`ember COMMAND --help` describes a command.\n");
}

int main(int argc, char **argv)
{
	static struct ember_cli c;
	const struct ember_command *cmd = argc > 1 ? ember_command_find(argv[1]) : NULL;
	char name[32];
	int code;

	ember_log_init("ember", EMBER_LOG_INFO);
	if (!cmd && argc > 1 && !strcmp(argv[1], "--version"))
		cmd = ember_command_find("version");
	if (!cmd && argc > 1 &&
	    (!strcmp(argv[1], "help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return EMBER_EXIT_OK;
	}
	if (!cmd) {
		if (argc > 1)
			fprintf(stderr, "ember: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	snprintf(name, sizeof(name), "ember %s", cmd->name);
	ember_cli_init(&c, cmd);
	c.name = name;
	if ((code = ember_options_parse(cmd, &c, argc - 1, argv + 1)) >= 0)
		return code;
	ember_log_set_level((enum ember_log_level)c.log_level);
	return cmd->run(&c);
}
