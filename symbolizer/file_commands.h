/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The commands that read profile files: `ember report` (convert between
 * formats), `ember diff` (differential flame graph) and `ember top` (flat
 * table). They parse untrusted files, so they run here, never as root: the
 * front end opens the files, drops root (to the user nobody) and execs
 * ember-symbolizer, which enters its whole sandbox before it reads a byte.
 * The front end waits, reports a crash, and removes the outputs it created
 * when the command failed, so that no half-written file is left.
 */
#ifndef EMBER_SYMBOLIZER_FILE_COMMANDS_H
#define EMBER_SYMBOLIZER_FILE_COMMANDS_H

struct ember_symbolizer_config;

/* Runs the report, diff or top c describes; returns the process exit code. */
int ember_file_command_run(const struct ember_symbolizer_config *c);

#endif
