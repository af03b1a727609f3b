/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Folded stacks, the input of flamegraph.pl and many viewers: one line per
 * distinct stack, "comm;outermost;...;leaf COUNT", inlined functions as
 * frames of their own, lines sorted.
 *
 * The profile's view picks what COUNT is: CPU samples (cpu), or microseconds
 * (off-cpu: time waited off CPU, as bcc's `offcputime -f` writes; both: time
 * on CPU, a sample standing for the sampling period, plus time off CPU).
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_OUT_FOLDED_H
#define EMBER_SYMBOLIZER_FORMATS_OUT_FOLDED_H

#include <stdio.h>

#include "symbolizer/profile/profile.h"

int ember_write_folded(const struct ember_profile *p, FILE *out);

#endif
