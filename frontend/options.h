/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every command of `ember` and every option of every command, in one
 * declarative table (options.c): the parser, `--help` and the man pages
 * (man_gen.c, at build time) are all made from it, so that an option cannot
 * be parsed without being documented, or documented without being parsed.
 *
 * An option names the commands it belongs to, how its argument is read and
 * where the value goes in struct ember_cli; a few arguments that need more
 * than a range check (a PID, a cgroup, an output's format) have a function
 * of their own. The same option may have an entry per group of commands
 * where its meaning differs (the daemons' --user, record's --interval).
 */
#ifndef EMBER_FRONTEND_OPTIONS_H
#define EMBER_FRONTEND_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "frontend/cli.h"

/* The commands, as bits: an option's `commands` says which take it. */
enum ember_cmd {
	EMBER_CMD_RECORD = 1u << 0,
	EMBER_CMD_REPORT = 1u << 1,
	EMBER_CMD_DIFF = 1u << 2,
	EMBER_CMD_TOP = 1u << 3,
	EMBER_CMD_CHECK = 1u << 4,
	EMBER_CMD_COLLECTOR = 1u << 5,  /* the privileged daemon (ember-collector.service) */
	EMBER_CMD_SYMBOLIZER = 1u << 6, /* the sandboxed daemon (ember-symbolizer.service) */
	EMBER_CMD_VERSION = 1u << 7,
};

/* How an option's argument is read, and what its field in struct ember_cli is. */
enum ember_opt_kind {
	EMBER_OPT_FLAG,     /* no argument; bool, set to true */
	EMBER_OPT_STRING,   /* const char *, at most `max` bytes (0: no limit) */
	EMBER_OPT_NUMBER,   /* uint64_t in [min, max] */
	EMBER_OPT_DURATION, /* uint64_t milliseconds in [min, max]: 30, 30s, 5m, 1h, 250ms */
	EMBER_OPT_SIZE,     /* uint64_t bytes in [min, max]: 1048576, 512k, 8M, 1G */
	EMBER_OPT_CHOICE,   /* unsigned int: the index of the argument in `choices` */
	EMBER_OPT_CUSTOM,   /* parse() reads it */
};

struct ember_option {
	const char *name;  /* the long name, without "--" */
	char short_name;   /* 0: none */
	const char *arg;   /* what --help calls the argument; NULL: takes none */
	bool optional_arg; /* --off-cpu[=MIN] */
	unsigned int commands;
	enum ember_opt_kind kind;
	size_t field; /* offsetof(struct ember_cli, ...) */
	uint64_t min, max;
	const char *const *choices; /* EMBER_OPT_CHOICE, NULL-terminated */
	/* EMBER_OPT_CUSTOM. Returns 0, or an exit code after saying what is wrong. */
	int (*parse)(struct ember_cli *c, const char *arg);
	const char *help;    /* one or two lines for --help ('\n' breaks a line) */
	const char *doc;     /* the man page's paragraph; NULL: the help */
	const char *example; /* a valid argument (the tests parse every option with it) */
	const char *group;   /* a heading of its own in --help and the man page; NULL: none */
};

/* A command: its synopsis, what it does, and how it runs once its options are parsed. */
struct ember_command {
	const char *name;
	unsigned int bit; /* enum ember_cmd */
	const char *synopsis;
	const char *summary;                /* one line, for `ember --help` */
	const char *description;            /* --help's paragraph */
	int positional_min, positional_max; /* arguments after the options (-1: any) */
	bool stop_at_argument; /* record: the first argument starts COMMAND [ARGS...] */
	int (*run)(struct ember_cli *c);
};

extern const struct ember_option ember_options[];
extern const size_t ember_noptions;
extern const struct ember_command ember_commands[];
extern const size_t ember_ncommands;

/* The command called name, or NULL. */
const struct ember_command *ember_command_find(const char *name);

/*
 * Parses a command's arguments (argv[0] is the command's name) into c, which must hold the
 * defaults (ember_cli_init). Returns -1 to go on, or an exit code: 0 after --help, 2 after
 * saying what is wrong.
 */
int ember_options_parse(const struct ember_command *cmd, struct ember_cli *c, int argc,
                        char **argv);

/* Writes the command's --help text. */
void ember_options_usage(const struct ember_command *cmd, FILE *f);

/* Writes the command's options as man-page paragraphs (.TP entries, .SS per group). */
void ember_options_man(unsigned int command, FILE *f);

/* Says "ember CMD: WHAT" (a printf format with one string) and "Try ...", returns 2. */
int ember_usage_error(const struct ember_cli *c, const char *fmt, const char *arg);

#endif
