/* SPDX-License-Identifier: Apache-2.0 */
/* `ember check`: what this host and these privileges allow, and what to do about the rest. */
#ifndef EMBER_COLLECTOR_CHECK_H
#define EMBER_COLLECTOR_CHECK_H

#include <stdbool.h>
#include <stdint.h>

/* Prints the report; returns an exit code: 0 when recording can work. */
int ember_check_run(bool try_load);

#endif
