/* SPDX-License-Identifier: Apache-2.0 */
/* `ember check`: what this host and these privileges allow, and what to do about the rest. */
#ifndef EMBER_COLLECTOR_CHECK_H
#define EMBER_COLLECTOR_CHECK_H

#include <stdbool.h>
#include <stdint.h>

/* Linux capability numbers ember cares about. */
#define EMBER_CAP_DAC_READ_SEARCH    2
#define EMBER_CAP_SYS_PTRACE         19
#define EMBER_CAP_SYS_ADMIN          21
#define EMBER_CAP_SYSLOG             34
#define EMBER_CAP_PERFMON            38
#define EMBER_CAP_BPF                39
#define EMBER_CAP_CHECKPOINT_RESTORE 40

/* The effective capability set of this process (from /proc/self/status). */
uint64_t ember_effective_caps(void);
bool ember_has_cap(uint64_t caps, int cap);

/* Reads one number from a /proc or /sys file. Returns 0 or a negative errno. */
int ember_read_proc_long(const char *path, long *out);

/* Prints the report; returns an exit code: 0 when recording can work. */
int ember_check_run(bool try_load);

#endif
