/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember-symbolizer's whole configuration, as the front end hands it over
 * (ipc/config_fd.h), directly (`ember symbolizer`, `ember report`, ...) or
 * through the collector, which passes it on unread (`ember record`).
 *
 * Every string is a fixed array; every descriptor was opened by the front
 * end: the symbolizer opens nothing by path. It checks every field before it
 * uses one (ember_symbolizer_config_check).
 */
#ifndef EMBER_SYMBOLIZER_CONFIG_H
#define EMBER_SYMBOLIZER_CONFIG_H

#include <stdint.h>

#include "ipc/config_fd.h"
#include "ipc/proto.h"
#include "shared/formats.h"
#include "symbolizer/export/export_config.h"

#define EMBER_SYMBOLIZER_CONFIG_VERSION 1
#define EMBER_SYMBOLIZER_PATH_LEN       256 /* paths in messages only */
#define EMBER_SYMBOLIZER_MAX_INPUTS     2

enum ember_symbolizer_mode {
	EMBER_SYMBOLIZER_RECORD = 1, /* `ember record`'s child: its socket at fd 4 */
	EMBER_SYMBOLIZER_DAEMON,     /* `ember symbolizer`: connects, writes into output_dir_fd */
	EMBER_SYMBOLIZER_REPORT,     /* `ember report`, `diff`, `top`: reads inputs, sandboxed */
	EMBER_SYMBOLIZER_DIFF,
	EMBER_SYMBOLIZER_TOP,
	EMBER_SYMBOLIZER_MODE_MAX,
};

struct ember_symbolizer_file {
	int32_t fd;
	uint32_t format; /* outputs: enum ember_format */
	char path[EMBER_SYMBOLIZER_PATH_LEN];
};

struct ember_symbolizer_config {
	struct ember_config_hdr hdr;
	uint32_t mode;          /* enum ember_symbolizer_mode */
	uint32_t log_level;     /* enum ember_log_level */
	uint32_t view;          /* enum ember_view */
	uint32_t interpreters;  /* bit 1 << runtime: whose frames are read */
	uint32_t signatures;    /* 1: Java methods named with their parameter types */
	uint64_t memory_budget; /* resident bytes; 0: the default */
	uint64_t cache_bytes;   /* parsed-file cache; 0: the default */
	/* Outputs (record: rewritten at every flush; report, diff: written once). */
	uint32_t noutputs;
	struct ember_symbolizer_file outputs[EMBER_MAX_OUTPUTS];
	uint32_t progress; /* record: draw a status line on stderr, of progress_s (0: open) */
	uint64_t progress_s;
	/* Daemon. */
	char connect[108];
	int32_t output_dir_fd;
	uint32_t nformats;
	uint32_t formats[EMBER_FORMAT_MAX];
	uint64_t interval_ms; /* files (and OTLP, unless export_interval_ms) */
	uint32_t keep;        /* intervals kept per format; 0: all */
	/* Export: shipped live when export is 1. */
	uint32_t export;
	uint64_t export_interval_ms;
	uint64_t export_deadline_ms;
	char service_name[128];
	char resource_attrs[1024];
	uint32_t otlp_symbols; /* enum ember_otlp_symbols */
	struct ember_export_config export_cfg;
	/* report, diff, top. */
	uint32_t ninputs;
	struct ember_symbolizer_file inputs[EMBER_SYMBOLIZER_MAX_INPUTS];
	uint32_t stats;     /* report --stats */
	uint32_t top_rows;  /* top -n */
	uint32_t top_order; /* enum ember_top_order */
	/* report, top: only samples whose link (EMBER_LINK_HEX) begins with this; "": all */
	char trace[EMBER_LINK_HEX + 1];
};

/*
 * Checks every field of a configuration read whole: modes, ranges, strings that end in their
 * arrays, open descriptors where a mode needs them and none where it does not. Returns 0, or
 * -EINVAL with *why naming the first field that is wrong.
 */
int ember_symbolizer_config_check(const struct ember_symbolizer_config *c, const char **why);

#endif
