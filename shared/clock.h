/* SPDX-License-Identifier: Apache-2.0 */
/* Clocks: BPF stamps samples with CLOCK_MONOTONIC; profiles carry Unix time. */
#ifndef EMBER_SHARED_CLOCK_H
#define EMBER_SHARED_CLOCK_H

#include <stdint.h>

uint64_t ember_monotonic_ns(void);
uint64_t ember_realtime_ns(void);
/* realtime - monotonic, measured as tightly as the clocks allow. */
int64_t ember_monotonic_to_realtime_ns(void);
/* Sleeps until CLOCK_MONOTONIC reads at least ns (through signals). */
void ember_sleep_until_ns(uint64_t ns);

#endif
