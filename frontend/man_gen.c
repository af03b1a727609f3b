// SPDX-License-Identifier: Apache-2.0
/*
 * Build tool: writes a man page from its template, putting each command's
 * options where the template says `@OPTIONS COMMAND@` (the option table's
 * own words, options.h) and the version for `@VERSION@`.
 *
 * Usage: ember_man_gen TEMPLATE OUTPUT
 */
#include <stdio.h>
#include <string.h>

#include "frontend/options.h"

static void put_line(const char *line, FILE *out)
{
	const char *v = strstr(line, "@VERSION@");

	if (!v) {
		fputs(line, out);
		return;
	}
	fprintf(out, "%.*s%s%s", (int)(v - line), line, EMBER_VERSION, v + 9);
}

int main(int argc, char **argv)
{
	char line[4096], name[64];
	FILE *in, *out;
	int bad = 0;

	if (argc != 3 || !(in = fopen(argv[1], "r")) || !(out = fopen(argv[2], "w"))) {
		fprintf(stderr, "usage: ember_man_gen TEMPLATE OUTPUT\n");
		return 2;
	}
	while (fgets(line, sizeof(line), in)) {
		const struct ember_command *cmd;

		if (sscanf(line, "@OPTIONS %63[a-z]@", name) != 1) {
			put_line(line, out);
			continue;
		}
		cmd = ember_command_find(name);
		if (!cmd) {
			fprintf(stderr, "%s: no command '%s'\n", argv[1], name);
			bad = 1;
			continue;
		}
		ember_options_man(cmd->bit, out);
	}
	fclose(in);
	return fclose(out) || bad ? 1 : 0;
}
