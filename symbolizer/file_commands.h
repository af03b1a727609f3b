/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The commands that read profile files: `ember report` (convert between
 * formats), `ember diff` (differential flame graph) and `ember top` (flat
 * table). `ember` execs ember-symbolizer with them, because they parse
 * untrusted files and the collector links no parser.
 *
 * Each command opens its files first, then reads and writes them in a
 * child process that has dropped root (to the user nobody) and entered the
 * sandbox; the parent only waits, reports a crash, and removes an output it
 * created when the child failed, so that no half-written file is left.
 */
#ifndef EMBER_SYMBOLIZER_FILE_COMMANDS_H
#define EMBER_SYMBOLIZER_FILE_COMMANDS_H

#include <stdbool.h>

/* True for "report", "diff" and "top". */
bool ember_command_known(const char *name);

/* Runs argv[0] (a known command) and returns the process exit code. */
int ember_command_run(int argc, char **argv);

#endif
