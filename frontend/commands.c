// SPDX-License-Identifier: Apache-2.0
/* The commands of `ember` (options.h): the table --help, the man pages and main() share. */
#include <stdio.h>
#include <string.h>

#include "frontend/commands.h"
#include "frontend/options.h"
#include "shared/err.h"

/* clang-format off */
const struct ember_command ember_commands[] = {
	{"record", EMBER_CMD_RECORD,
	 "ember record [-d SECONDS] [-F HZ] [-p PID]... [-o FILE]... [OPTIONS] [-- COMMAND [ARGS...]]",
	 "sample every CPU and write a profile (needs root)",
	 "Samples the CPUs (all processes, or those chosen) and writes a profile when the\n"
	 "duration ends, on Ctrl-C, or when COMMAND (which it starts, and samples with\n"
	 "everything it starts) exits; ember then exits as COMMAND did.",
	 0, -1, true, ember_cmd_record},
	{"report", EMBER_CMD_REPORT, "ember report INPUT [--stats] [-o OUTPUT]... [--view VIEW]",
	 "convert a profile (.pb.gz, .folded); --stats prints its counters",
	 "Converts a profile. INPUT is a pprof (.pb.gz) or folded-stacks file (or - for\n"
	 "standard input); each OUTPUT's name sets its format. --stats prints what the\n"
	 "profile says about itself. Needs no root: started as root, the file is read as\n"
	 "nobody, in the symbolizer's sandbox.",
	 1, 1, false, ember_cmd_files},
	{"diff", EMBER_CMD_DIFF, "ember diff BASE NEW -o OUTPUT.html [--view VIEW]",
	 "differential flame graph of two profiles",
	 "Writes a differential flame graph: the shape of NEW, each frame coloured by\n"
	 "how its share of all samples changed from BASE (red grew, blue shrank), and\n"
	 "a table of the functions that changed most. BASE and NEW are pprof (.pb.gz)\n"
	 "or folded-stacks files.",
	 2, 2, false, ember_cmd_files},
	{"top", EMBER_CMD_TOP, "ember top INPUT [-n ROWS] [--sort self|total] [--view VIEW]",
	 "table of the functions with the most samples",
	 "Prints the functions with the most samples of their own (self) or below\n"
	 "them (total), like `pprof -top`. INPUT is a pprof (.pb.gz) or folded-stacks\n"
	 "file.",
	 1, 1, false, ember_cmd_files},
	{"check", EMBER_CMD_CHECK, "ember check",
	 "tell whether this host and user can record, and what to fix",
	 "Reports kernel version, BTF, capabilities and the sysctls that limit\n"
	 "profiling, each with a verdict and what to do, and whether the kernel's\n"
	 "verifier takes ember's eBPF sampler.",
	 0, 0, false, ember_cmd_check},
	{"collector", EMBER_CMD_COLLECTOR, "ember collector [-F HZ] [-p PID]... [OPTIONS]",
	 "the privileged daemon (ember-collector.service)",
	 "Runs ember-collector: samples the CPUs until SIGTERM and serves one\n"
	 "`ember symbolizer` at a time on RUNTIME_DIR/collector.sock; samples taken\n"
	 "while none is connected are counted as lost.",
	 0, 0, false, ember_cmd_collector},
	{"symbolizer", EMBER_CMD_SYMBOLIZER, "ember symbolizer --output-dir DIR [OPTIONS]",
	 "the sandboxed daemon (ember-symbolizer.service)",
	 "Runs ember-symbolizer: connects to the collector (waiting for it with\n"
	 "back-off), enters its sandbox, and writes one file per format and interval into\n"
	 "DIR (renamed into place when complete). SIGHUP starts a new interval; SIGTERM\n"
	 "writes the current one and exits.",
	 0, 0, false, ember_cmd_symbolizer},
	{"version", EMBER_CMD_VERSION, "ember version", "print the version", "Prints the version.",
	 0, 0, false, ember_cmd_version},
};
/* clang-format on */

const size_t ember_ncommands = ARRAY_SIZE(ember_commands);

const struct ember_command *ember_command_find(const char *name)
{
	for (size_t i = 0; i < ember_ncommands; i++)
		if (!strcmp(ember_commands[i].name, name))
			return &ember_commands[i];
	return NULL;
}

int ember_cmd_version(struct ember_cli *c)
{
	(void)c;
	printf("ember %s\n", EMBER_VERSION);
	return EMBER_EXIT_OK;
}
