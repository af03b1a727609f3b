/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The check of a Ruby process's row (bpf/ruby.h) before the collector loads
 * it into the walker's map: the runtime's entry in the table of interpreter
 * rows (table_loader.c).
 */
#ifndef EMBER_COLLECTOR_ROW_RUBY_H
#define EMBER_COLLECTOR_ROW_RUBY_H

#include "collector/table_loader.h"

/* Ruby's rows: struct ember_rb_proc, checked by offsets against the windows read. */
extern const struct ember_interp_row_kind ember_row_ruby;

#endif
