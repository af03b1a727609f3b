/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Folded stacks, the input of flamegraph.pl and many viewers: one line per
 * distinct stack, "comm;outermost;...;leaf COUNT", inlined functions as
 * frames of their own, lines sorted.
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_OUT_FOLDED_H
#define EMBER_SYMBOLIZER_FORMATS_OUT_FOLDED_H

#include <stdio.h>

#include "symbolizer/profile/profile.h"

int ember_write_folded(const struct ember_profile *p, FILE *out);

#endif
