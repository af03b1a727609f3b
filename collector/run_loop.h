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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc/proto.h"
#include "collector/selection.h"
#include "collector/spawn.h"

#define EMBER_MAX_PIDS 1024

struct ember_output_spec {
	const char *path;
	const char *format; /* "folded", "pprof", "html", "otlp" */
	int fd;
	bool created; /* this run created it: removed again if the run fails */
};

struct ember_record_opts {
	unsigned int sample_hz;
	uint64_t off_cpu_min_ns;        /* EMBER_OFF_CPU_OFF: no off-CPU samples */
	uint64_t duration_ms;           /* 0: until SIGINT/SIGTERM */
	pid_t pids[EMBER_MAX_PIDS + 1]; /* + the command's */
	size_t npids;
	struct ember_selection selection; /* cgroups, and what the profile says was chosen */
	struct ember_command command;     /* argv NULL: none */
	struct ember_output_spec outputs[EMBER_MAX_OUTPUTS];
	size_t noutputs;
	const char *otlp_url;
	uid_t uid;
	gid_t gid;
	size_t ring_size;
	bool progress;                      /* draw a progress line on stderr */
	const char *socket_path;            /* daemon: listen here instead of starting a child */
	const char *debug_dir;              /* broker: where debug files by build id live */
	const char *const *symbolizer_args; /* passed through, NULL-terminated */
};

/* Runs a recording; returns an exit code (enum ember_exit). */
int ember_record_run(struct ember_record_opts *o);

#endif
