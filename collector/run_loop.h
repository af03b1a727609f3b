/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `ember record`: samples in the foreground, with a sandboxed symbolizer
 * child, until the duration ends or SIGINT/SIGTERM arrives, then has the
 * symbolizer write complete outputs.
 *
 * With a command (`ember record -- COMMAND`) it samples the command and
 * every process it starts, from the command's first instruction, until it
 * exits, and ends as the command did; signals go to the command first.
 *
 * ember-collector is the same loop with a socket instead of a child: it
 * samples until SIGTERM, serving whichever symbolizer (of the configured
 * uid and gid) is connected; while none is, samples are counted as lost.
 */
#ifndef EMBER_COLLECTOR_RUN_LOOP_H
#define EMBER_COLLECTOR_RUN_LOOP_H

#include <stddef.h>
#include <sys/types.h>

#include "ipc/core_config.h"
#include "collector/selection.h"
#include "collector/spawn.h"

/*
 * A recording's configuration (checked) and what is made of it: the PIDs to
 * sample (the command's added), the cgroups' ids, the command's process.
 */
struct ember_record_opts {
	const struct ember_core_config *cfg;
	pid_t pids[EMBER_MAX_PIDS + 1];
	size_t npids;
	struct ember_selection selection;
	struct ember_command command; /* argv NULL: none */
};

/* Runs a recording; returns an exit code (enum ember_exit). */
int ember_record_run(struct ember_record_opts *o);

#endif
