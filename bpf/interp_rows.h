/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every kind of row (interp.h), one include each: for whoever checks rows
 * of all of them (the collector's table loader, its tests and fuzzers).
 */
#ifndef EMBER_BPF_INTERP_ROWS_H
#define EMBER_BPF_INTERP_ROWS_H

#include "jvm.h"
#include "perl.h"
#include "php.h"
#include "python.h"
#include "ruby.h"
#include "thread_ctx.h"
#include "v8.h"

#endif
