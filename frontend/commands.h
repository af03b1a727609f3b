/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What each command does once its options are parsed (options.h's table
 * calls these). Each returns the process's exit code, or execs the program
 * that does the work and does not return.
 *
 *   core_cmds.c        record, collector: the collector's configuration
 *   symbolizer_cmds.c  symbolizer, report, diff, top: the symbolizer's
 *   host_check.c       check
 */
#ifndef EMBER_FRONTEND_COMMANDS_H
#define EMBER_FRONTEND_COMMANDS_H

#include "frontend/cli.h"
#include "frontend/launch.h"
#include "symbolizer/config.h"

int ember_cmd_record(struct ember_cli *c);
int ember_cmd_collector(struct ember_cli *c);
int ember_cmd_symbolizer(struct ember_cli *c);
int ember_cmd_files(struct ember_cli *c); /* report, diff, top */
int ember_cmd_check(struct ember_cli *c);
int ember_cmd_version(struct ember_cli *c);

/*
 * The symbolizer's settings every mode of it shares (view, interpreters, memory, log level)
 * and its export: the endpoint from --otlp and the OTEL_* variables, the TLS files opened
 * (added to fds, whose numbers the configuration then holds). Returns 0 or an exit code
 * after saying what is wrong.
 */
int ember_symbolizer_settings(const struct ember_cli *c, struct ember_symbolizer_config *sym,
                              struct ember_fdlist *fds);

/* A sealed memfd holding the configuration; on failure says so and returns -errno. */
int ember_config_memfd(const void *config, size_t size);

#endif
