/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where CPython keeps what a profiler reads: the thread state's frame
 * pointer, a frame's code object, caller and instruction, a code object's
 * names, first line and line table, strings and bytes. For 3.6 to 3.12 the
 * offsets come from a table per minor version (x86-64, default builds: GIL,
 * no Py_TRACE_REFS); from 3.13 on from the interpreter's own description,
 * _Py_DebugOffsets, the first member of _PyRuntime, read from the ELF file,
 * so a later version that describes itself the same way needs no new code.
 *
 * The debug offsets come from a file a profiled process chose: every size
 * and offset is checked against caps before it is used, and a layout whose
 * fields do not fit the eBPF walker's windows is refused.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PYTHON_LAYOUT_H
#define EMBER_SYMBOLIZER_INTERP_PYTHON_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/python.h"

/* How a code object maps instruction offsets to lines. */
enum ember_py_lines {
	EMBER_PY_LINES_LNOTAB = 1, /* <= 3.9: co_lnotab, (byte delta, line delta) pairs */
	EMBER_PY_LINES_LINETABLE,  /* 3.10: co_linetable, (byte delta, line delta or -128) pairs */
	EMBER_PY_LINES_LOCATIONS,  /* 3.11+: co_linetable, the location table */
};

struct ember_py_layout {
	uint8_t major, minor;
	/* The walk (copied into struct ember_py_proc). */
	uint8_t chain, entry, instr, entry_owner;
	uint16_t tstate_frame, cframe_frame;
	uint8_t frame_read, frame_code, frame_back, frame_instr, frame_entry;
	uint8_t code_read, code_argcount, code_firstlineno, code_name, code_filename;
	uint16_t code_units; /* 3.11+: first code unit; 0 before */
	/* What only the symbolizer reads. */
	uint16_t code_size;     /* bytes of a code object read at once */
	uint16_t code_qualname; /* 0: none (<= 3.10) */
	uint16_t code_linetable;
	uint16_t code_nunits; /* 3.11+: ob_size, the number of code units */
	uint8_t lines;        /* enum ember_py_lines */
	uint8_t lasti_units;  /* 3.10: f_lasti counts code units, not bytes */
	uint16_t runtime_tss; /* offset in _PyRuntime of the thread-state key (Py_tss_t); 0 none */
	uint16_t ob_type;
	uint16_t bytes_size, bytes_data;
	uint16_t str_length, str_state, str_ascii_data, str_compact_data;
};

/* The layout of a 3.minor interpreter from the built-in table. Returns 0 or -ENOTSUP. */
int ember_py_layout_for(unsigned int major, unsigned int minor, struct ember_py_layout *out);

/* The bytes of _PyRuntime to read for ember_py_layout_from_debug (or fewer if smaller). */
#define EMBER_PY_DEBUG_OFFSETS_BYTES 1024

/*
 * The layout described by _Py_DebugOffsets (len bytes from the start of
 * _PyRuntime). Returns 0; -ENOENT when there is no description (no cookie);
 * -ENOTSUP for a free-threaded build, a version before 3.13, or fields the
 * walker cannot reach; -EBADMSG for values out of bounds.
 */
int ember_py_layout_from_debug(const uint8_t *buf, size_t len, struct ember_py_layout *out);

#endif
