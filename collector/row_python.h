/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The check of a CPython process's row (bpf/python.h) before the collector
 * loads it into the walker's map: the runtime's entry in the table of
 * interpreter rows (table_loader.c).
 */
#ifndef EMBER_COLLECTOR_ROW_PYTHON_H
#define EMBER_COLLECTOR_ROW_PYTHON_H

#include "collector/table_loader.h"

/* CPython's rows: struct ember_py_proc, checked by offsets against the windows read. */
extern const struct ember_interp_row_kind ember_row_python;

#endif
