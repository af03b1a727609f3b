/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the command line says, for every command: the option table
 * (options.h) writes here, each command's code reads from here. Strings
 * point into argv.
 */
#ifndef EMBER_FRONTEND_CLI_H
#define EMBER_FRONTEND_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/records.h"
#include "ipc/core_config.h"
#include "symbolizer/export/export_config.h"

#define EMBER_CLI_MAX_FORMATS 4

/* What was chosen to sample, in the order given: -p, --cgroup, --unit, --container, --pod. */
struct ember_cli_choice {
	const char *kind; /* "pid", "cgroup", "unit", "container", "pod" */
	const char *arg;
};

struct ember_cli {
	const struct ember_command *cmd;
	const char *name;   /* "ember record", for messages */
	const char *option; /* the long name of the option being parsed */
	/* Sampling: record, collector. */
	uint64_t duration_ms;
	uint64_t sample_hz;
	int32_t pids[EMBER_MAX_PIDS];
	size_t npids;
	uint64_t off_cpu_min_ns;
	uint64_t ring_size;
	struct ember_cli_choice choices[EMBER_MAX_PIDS + EMBER_SELECT_MAX_CGROUPS];
	size_t nchoices, ncgroups;
	const char *run_as, *user, *runtime_dir, *debug_dir;
	/* Outputs: record, report, diff. */
	const char *outputs[EMBER_MAX_OUTPUTS];
	size_t noutputs;
	/* The symbolizer's: record and its daemon. */
	unsigned int view, log_level;
	uint64_t memory_budget, cache_bytes;
	uint32_t interpreters;
	bool interpreters_given;
	bool signatures; /* --signatures: Java methods with their parameter types */
	bool no_progress;
	/* Export. */
	const char *otlp, *service_name, *otlp_ca, *otlp_cert, *otlp_key;
	const char *trace; /* report, top: only this trace's (or span's) samples */
	const char *otlp_headers[EMBER_OTLP_MAX_HEADERS];
	size_t notlp_headers;
	uint64_t interval_ms, otlp_timeout_ms, otlp_queue_bytes, otlp_deadline_ms;
	uint64_t otlp_max_request_bytes;
	unsigned int otlp_compression; /* 0: as the environment says, 1 gzip, 2 none */
	unsigned int otlp_symbols;     /* enum ember_otlp_symbols */
	/* The symbolizer daemon. */
	const char *connect, *output_dir;
	unsigned int formats[EMBER_CLI_MAX_FORMATS];
	size_t nformats;
	uint64_t keep;
	/* report, diff, top. */
	bool stats;
	uint64_t top_rows;
	unsigned int top_order;
	/* What follows the options: inputs, or record's COMMAND [ARGS...]. */
	char **args;
	int nargs;
};

/* The defaults of every command's options. */
void ember_cli_init(struct ember_cli *c, const struct ember_command *cmd);

#endif
