/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The runtimes' names (bpf/interp.h's EMBER_RUNTIMES), as `--interpreters`
 * takes them. A library of its own (ember_runtimes), needing nothing but the
 * list: the front end can parse the option without linking the readers.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_RUNTIMES_H
#define EMBER_SYMBOLIZER_INTERP_RUNTIMES_H

#include <stdint.h>

#include "bpf/interp.h"

/* The name of a runtime ("python"); NULL for none. */
const char *ember_interp_name(uint32_t runtime);

/*
 * Parses a comma-separated list of runtime names ("python"), or "all" or
 * "none", into *mask (bits 1u << runtime). Returns 0 or -EINVAL (an unknown
 * name, an empty list).
 */
int ember_interp_parse_list(const char *list, uint32_t *mask);

#endif
