/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPython's line tables: which source line an instruction offset belongs
 * to. Three formats (CPython's Objects/lnotab_notes.txt and
 * Objects/locations.md): co_lnotab (3.6-3.9), the 3.10 co_linetable, and
 * the 3.11+ location table. The table bytes were read from a profiled
 * process and are hostile: decoding is bounded by their length, each entry
 * is checked, and a malformed table is an error, never a read past its end.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PYTHON_LINES_H
#define EMBER_SYMBOLIZER_INTERP_PYTHON_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/python_layout.h"

/*
 * The line of the instruction at byte offset `offset` from the first code
 * unit, in a table of format `kind` (enum ember_py_lines) of a code object
 * whose first line is firstlineno. A negative offset (a frame that has not
 * run an instruction yet) is the first line. Returns 0 and *line; -ENOENT
 * when the instruction has no line (or lies past the table); -EBADMSG for a
 * malformed table.
 */
int ember_py_line(unsigned int kind, const uint8_t *table, size_t len, int32_t firstlineno,
                  int64_t offset, int32_t *line);

#endif
