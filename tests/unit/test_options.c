// SPDX-License-Identifier: Apache-2.0
/*
 * The front end's one option table: every option of every command parses with its
 * example, changes what the command line says, and appears in that command's --help, in
 * the man-page text made from the table and in the man page the build generated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "frontend/cli.h"
#include "frontend/options.h"
#include "shared/err.h"

/* The man page the build writes for a command's options (frontend/CMakeLists.txt). */
static const char *man_page_of(unsigned int bit)
{
	return bit == EMBER_CMD_COLLECTOR    ? "ember-collector.8"
	       : bit == EMBER_CMD_SYMBOLIZER ? "ember-symbolizer.8"
	                                     : "ember.1";
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int ch;

	ck_assert_msg(f != NULL, "cannot read %s", path);
	while ((ch = fgetc(f)) != EOF)
		fputc(ch, mem);
	fclose(f);
	fclose(mem);
	return buf;
}

/* What a writer of the command's --help or man text writes, as a string. */
static char *text_of(const struct ember_command *cmd, bool man)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);

	if (man)
		ember_options_man(cmd->bit, mem);
	else
		ember_options_usage(cmd, mem);
	fclose(mem);
	return buf;
}

/* "\-\-name" with every '-' as roff writes it. */
static void man_name(const char *name, char *out, size_t size)
{
	size_t n = (size_t)snprintf(out, size, "\\-\\-");

	for (; *name && n + 3 < size; name++)
		n += (size_t)snprintf(out + n, size - n, *name == '-' ? "\\-" : "%c", *name);
}

/* Parses `CMD --name ARG` into c; returns what ember_options_parse returned. */
static int parse_one(const struct ember_command *cmd, const struct ember_option *op,
                     struct ember_cli *c)
{
	char word[128];
	char *argv[4] = {(char *)cmd->name, word, NULL, NULL};
	int argc = 2;

	if (op->arg && op->optional_arg) {
		snprintf(word, sizeof(word), "--%s=%s", op->name, op->example);
	} else {
		snprintf(word, sizeof(word), "--%s", op->name);
		if (op->arg)
			argv[argc++] = (char *)op->example;
	}
	ember_cli_init(c, cmd);
	return ember_options_parse(cmd, c, argc, argv);
}

START_TEST(every_option_of_every_command_parses_and_is_documented)
{
	static struct ember_cli before, after;
	char *generated[3] = {NULL, NULL, NULL}, path[4096], name[128], flag[128];
	const char *build = getenv("EMBER_BUILD_DIR");
	size_t checked = 0;

	ck_assert_ptr_nonnull(build);
	for (size_t i = 0; i < ember_noptions; i++) {
		const struct ember_option *op = &ember_options[i];

		ck_assert_msg(op->help && *op->help, "--%s has no help", op->name);
		ck_assert_msg(!op->arg || op->example, "--%s has no example", op->name);
		for (size_t k = 0; k < ember_ncommands; k++) {
			const struct ember_command *cmd = &ember_commands[k];
			char *help, *man;
			int page = cmd->bit == EMBER_CMD_COLLECTOR    ? 1
			           : cmd->bit == EMBER_CMD_SYMBOLIZER ? 2
			                                              : 0;

			if (!(op->commands & cmd->bit))
				continue;
			ck_assert_msg(parse_one(cmd, op, &after) == -1, "ember %s --%s %s",
			              cmd->name, op->name, op->example ? op->example : "");
			ember_cli_init(&before, cmd);
			before.option = after.option;
			before.args = after.args;
			before.nargs = after.nargs;
			ck_assert_msg(memcmp(&before, &after, sizeof(before)),
			              "ember %s --%s changed nothing", cmd->name, op->name);
			snprintf(flag, sizeof(flag), "--%s", op->name);
			help = text_of(cmd, false);
			ck_assert_msg(strstr(help, flag), "ember %s --help lacks %s", cmd->name,
			              flag);
			man_name(op->name, name, sizeof(name));
			man = text_of(cmd, true);
			ck_assert_msg(strstr(man, name), "the man text of %s lacks %s", cmd->name,
			              name);
			if (!generated[page]) {
				snprintf(path, sizeof(path), "%s/man/%s", build,
				         man_page_of(cmd->bit));
				generated[page] = slurp(path);
			}
			ck_assert_msg(strstr(generated[page], name), "%s lacks %s", path, name);
			free(help);
			free(man);
			checked++;
		}
	}
	ck_assert_uint_ge(checked, ember_noptions);
	for (int p = 0; p < 3; p++)
		free(generated[p]);
}
END_TEST

static int parse_args(const char *cmd_name, int argc, char **argv, struct ember_cli *c)
{
	const struct ember_command *cmd = ember_command_find(cmd_name);

	ck_assert_ptr_nonnull(cmd);
	ember_cli_init(c, cmd);
	c->name = "ember test";
	return ember_options_parse(cmd, c, argc, argv);
}

START_TEST(values_are_read_into_their_fields)
{
	static struct ember_cli c;
	char *rec[] = {"record",   "-d",      "5m", "-F", "99",     "--memory-budget", "1G",
	               "--view",   "off-cpu", "-p", "1",  "--unit", "nginx",           "-o",
	               "a.folded", "--",      "ls", "-l", NULL};
	char *top[] = {"top", "in.pb.gz", "-n", "7", "--sort", "total", NULL};

	ck_assert_int_eq(parse_args("record", 18, rec, &c), -1);
	ck_assert_uint_eq(c.duration_ms, 300000);
	ck_assert_uint_eq(c.sample_hz, 99);
	ck_assert_uint_eq(c.memory_budget, 1ull << 30);
	ck_assert_uint_eq(c.view, 1);
	ck_assert_uint_eq(c.npids, 1);
	ck_assert_uint_eq(c.nchoices, 2);
	ck_assert_str_eq(c.choices[1].kind, "unit");
	ck_assert_str_eq(c.outputs[0], "a.folded");
	ck_assert_int_eq(c.nargs, 2);
	ck_assert_str_eq(c.args[0], "ls");
	ck_assert_int_eq(parse_args("top", 6, top, &c), -1);
	ck_assert_uint_eq(c.top_rows, 7);
	ck_assert_uint_eq(c.top_order, 1);
	ck_assert_int_eq(c.nargs, 1);
	ck_assert_str_eq(c.args[0], "in.pb.gz");
}
END_TEST

START_TEST(bad_values_and_misplaced_options_are_usage_errors)
{
	static struct ember_cli c;
	char *bad[][4] = {
	    {"record", "-F", "0", NULL},
	    {"record", "-F", "10001", NULL},
	    {"record", "-d", "soon", NULL},
	    {"record", "--view", "all", NULL},
	    {"record", "-o", "p.txt", NULL},
	    {"record", "--memory-budget", "1M", NULL},
	    {"record", "--runtime-dir", "/x", NULL}, /* the collector's */
	    {"collector", "-d", "5", NULL},          /* record's */
	    {"top", "-o", "x.html", NULL},           /* report's and diff's */
	    {"diff", "-o", "d.folded", NULL},
	    {"symbolizer", "--keep", "-1", NULL},
	    {"record", "--frobnicate", NULL, NULL},
	    {"record", "-d", NULL, NULL},
	    {"check", "extra", NULL, NULL},
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int argc = 0;

		while (bad[i][argc])
			argc++;
		ck_assert_msg(parse_args(bad[i][0], argc, bad[i], &c) == 2, "%s %s accepted",
		              bad[i][0], bad[i][1]);
	}
}
END_TEST

START_TEST(help_is_made_from_the_table)
{
	static struct ember_cli c;
	char *argv[] = {"report", "--help", NULL};
	FILE *saved = stdout;
	char *buf = NULL;
	size_t len = 0;

	stdout = open_memstream(&buf, &len);
	ck_assert_int_eq(parse_args("report", 2, argv, &c), 0);
	fclose(stdout);
	stdout = saved;
	ck_assert_ptr_nonnull(strstr(buf, "usage: ember report INPUT"));
	ck_assert_ptr_nonnull(strstr(buf, "--stats"));
	ck_assert_ptr_null(strstr(buf, "--frequency")); /* record's, not report's */
	free(buf);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("options");

	tcase_add_test(tc, every_option_of_every_command_parses_and_is_documented);
	tcase_add_test(tc, values_are_read_into_their_fields);
	tcase_add_test(tc, bad_values_and_misplaced_options_are_usage_errors);
	tcase_add_test(tc, help_is_made_from_the_table);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
