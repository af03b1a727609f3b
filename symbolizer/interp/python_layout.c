// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/python_layout.h"

#include <errno.h>
#include <string.h>

#include "shared/bytes.h"

/*
 * Offsets read from the DWARF of CPython 3.6.15, 3.7.16, 3.8.18, 3.9.18,
 * 3.10.13, 3.11.7 and 3.12.1 (x86-64) and checked against Debian's 3.11.2.
 * Struct layouts do not change within a minor version.
 */
#define OBJECTS_311                                                                                \
	.ob_type = 8, .bytes_size = 16, .bytes_data = 32, .str_length = 16, .str_state = 32,       \
	.str_ascii_data = 48, .str_compact_data = 72
#define OBJECTS_312                                                                                \
	.ob_type = 8, .bytes_size = 16, .bytes_data = 32, .str_length = 16, .str_state = 32,       \
	.str_ascii_data = 40, .str_compact_data = 56
/* <= 3.10: one PyFrameObject per call of the loop; tstate->frame, f_back, f_code. */
#define FRAME_OBJECT                                                                               \
	.chain = EMBER_PY_CHAIN_FRAME_OBJECT, .entry = EMBER_PY_ENTRY_ONE,                         \
	.instr = EMBER_PY_INSTR_LASTI, .tstate_frame = 24, .frame_back = 24, .frame_code = 32

static const struct ember_py_layout table[] = {
    {.major = 3,
     .minor = 6,
     FRAME_OBJECT,
     .frame_instr = 120,
     .frame_read = 124,
     .code_argcount = 16,
     .code_firstlineno = 36,
     .code_filename = 96,
     .code_name = 104,
     .code_linetable = 112,
     .code_read = 112,
     .code_size = 144,
     .lines = EMBER_PY_LINES_LNOTAB,
     .runtime_tss = 0,
     OBJECTS_311},
    {.major = 3,
     .minor = 7,
     FRAME_OBJECT,
     .frame_instr = 104,
     .frame_read = 108,
     .code_argcount = 16,
     .code_firstlineno = 36,
     .code_filename = 96,
     .code_name = 104,
     .code_linetable = 112,
     .code_read = 112,
     .code_size = 144,
     .lines = EMBER_PY_LINES_LNOTAB,
     .runtime_tss = 1504,
     OBJECTS_311},
    {.major = 3,
     .minor = 8,
     FRAME_OBJECT,
     .frame_instr = 104,
     .frame_read = 108,
     .code_argcount = 16,
     .code_firstlineno = 40,
     .code_filename = 104,
     .code_name = 112,
     .code_linetable = 120,
     .code_read = 120,
     .code_size = 176,
     .lines = EMBER_PY_LINES_LNOTAB,
     .runtime_tss = 1392,
     OBJECTS_311},
    {.major = 3,
     .minor = 9,
     FRAME_OBJECT,
     .frame_instr = 104,
     .frame_read = 108,
     .code_argcount = 16,
     .code_firstlineno = 40,
     .code_filename = 104,
     .code_name = 112,
     .code_linetable = 120,
     .code_read = 120,
     .code_size = 176,
     .lines = EMBER_PY_LINES_LNOTAB,
     .runtime_tss = 584,
     OBJECTS_311},
    {.major = 3,
     .minor = 10,
     FRAME_OBJECT,
     .frame_instr = 96,
     .frame_read = 100,
     .code_argcount = 16,
     .code_firstlineno = 40,
     .code_filename = 104,
     .code_name = 112,
     .code_linetable = 120,
     .code_read = 120,
     .code_size = 176,
     .lines = EMBER_PY_LINES_LINETABLE,
     .lasti_units = 1,
     .runtime_tss = 584,
     OBJECTS_311},
    /* 3.11: tstate->cframe->current_frame; the first frame of a call has is_entry set. */
    {.major = 3,
     .minor = 11,
     .chain = EMBER_PY_CHAIN_CFRAME,
     .entry = EMBER_PY_ENTRY_FLAG,
     .instr = EMBER_PY_INSTR_POINTER,
     .tstate_frame = 56,
     .cframe_frame = 8,
     .frame_code = 32,
     .frame_back = 48,
     .frame_instr = 56,
     .frame_entry = 68,
     .frame_read = 72,
     .code_argcount = 56,
     .code_firstlineno = 72,
     .code_filename = 112,
     .code_name = 120,
     .code_read = 128,
     .code_qualname = 128,
     .code_linetable = 136,
     .code_units = 184,
     .code_size = 192,
     .code_nunits = 16,
     .lines = EMBER_PY_LINES_LOCATIONS,
     .runtime_tss = 592,
     OBJECTS_311},
    /* 3.12: a shim frame (owner FRAME_OWNED_BY_CSTACK, 3) ends each call of the loop. */
    {.major = 3,
     .minor = 12,
     .chain = EMBER_PY_CHAIN_CFRAME,
     .entry = EMBER_PY_ENTRY_OWNER,
     .entry_owner = 3,
     .instr = EMBER_PY_INSTR_POINTER,
     .tstate_frame = 56,
     .cframe_frame = 0,
     .frame_code = 0,
     .frame_back = 8,
     .frame_instr = 56,
     .frame_entry = 70,
     .frame_read = 72,
     .code_argcount = 52,
     .code_firstlineno = 68,
     .code_filename = 112,
     .code_name = 120,
     .code_read = 128,
     .code_qualname = 128,
     .code_linetable = 136,
     .code_units = 192,
     .code_size = 200,
     .code_nunits = 16,
     .lines = EMBER_PY_LINES_LOCATIONS,
     .runtime_tss = 1544,
     OBJECTS_312},
};

int ember_py_layout_for(unsigned int major, unsigned int minor, struct ember_py_layout *out)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].major == major && table[i].minor == minor) {
			*out = table[i];
			return 0;
		}
	return -ENOTSUP;
}

/* ---- _Py_DebugOffsets (3.13+) ---- */

enum debug_field {
	D_VERSION,
	D_FREE_THREADED,
	D_TSTATE_CURRENT_FRAME,
	D_FRAME_SIZE,
	D_FRAME_PREVIOUS,
	D_FRAME_EXECUTABLE,
	D_FRAME_INSTR_PTR,
	D_FRAME_OWNER,
	D_CODE_SIZE,
	D_CODE_FILENAME,
	D_CODE_NAME,
	D_CODE_QUALNAME,
	D_CODE_LINETABLE,
	D_CODE_FIRSTLINENO,
	D_CODE_ARGCOUNT,
	D_CODE_ADAPTIVE,
	D_OBJECT_SIZE,
	D_OBJECT_TYPE,
	D_BYTES_SIZE,
	D_BYTES_DATA,
	D_STR_STATE,
	D_STR_LENGTH,
	D_STR_ASCII_SIZE,
	D_FIELDS,
};

/*
 * Where each field sits in _Py_DebugOffsets, which grew between versions:
 * 3.13 (584 bytes) and 3.14 (760 bytes; the description later versions are
 * read with). From CPython's Include/internal/pycore_debug_offsets.h.
 */
static const struct {
	unsigned int minor; /* the first version with this description */
	size_t size;
	uint16_t at[D_FIELDS];
} descriptions[] = {
    {13, 584, {8,   16,  184, 224, 232, 240, 248, 264, 272, 280, 288, 296,
               304, 312, 320, 344, 352, 360, 520, 528, 544, 552, 560}},
    {14, 760, {8,   16,  208, 248, 256, 264, 272, 288, 312, 320, 328, 336,
               344, 352, 360, 384, 400, 408, 600, 608, 624, 632, 640}},
};

#define DEBUG_MAX_OFFSET 4096 /* no field of these structs lies further in */

/* A field of a window the walker reads: inside it, width bytes wide. */
static int window_field(uint64_t v, unsigned int width, uint8_t *out, uint8_t *read)
{
	if (v + width > EMBER_PY_WINDOW)
		return -ENOTSUP;
	*out = (uint8_t)v;
	if (v + width > *read)
		*read = (uint8_t)(v + width);
	return 0;
}

int ember_py_layout_from_debug(const uint8_t *buf, size_t len, struct ember_py_layout *out)
{
	uint64_t v[D_FIELDS], version;
	size_t d = 0;
	int err = 0;

	if (len < 24 || memcmp(buf, "xdebugpy", 8))
		return -ENOENT;
	version = ember_u64_at(buf, 8); /* PY_VERSION_HEX: 0xMMmmpprr */
	if ((version >> 24) != 3 || ((version >> 16) & 0xff) < 13)
		return -ENOTSUP;
	while (d + 1 < sizeof(descriptions) / sizeof(descriptions[0]) &&
	       descriptions[d + 1].minor <= ((version >> 16) & 0xff))
		d++;
	if (len < descriptions[d].size)
		return -EBADMSG;
	for (int f = 0; f < D_FIELDS; f++) {
		v[f] = ember_u64_at(buf, descriptions[d].at[f]);
		if (f > D_FREE_THREADED && v[f] > DEBUG_MAX_OFFSET)
			return -EBADMSG;
	}
	/* Free-threaded builds move every object field and run per-thread bytecode copies. */
	if (v[D_FREE_THREADED])
		return -ENOTSUP;
	memset(out, 0, sizeof(*out));
	out->major = 3;
	out->minor = (uint8_t)((version >> 16) & 0xff);
	out->chain = EMBER_PY_CHAIN_DIRECT;
	out->entry = EMBER_PY_ENTRY_OWNER;
	/* 3.13 FRAME_OWNED_BY_CSTACK, 3.14 FRAME_OWNED_BY_INTERPRETER: the call's shim. */
	out->entry_owner = 3;
	out->instr = EMBER_PY_INSTR_POINTER;
	out->tstate_frame = (uint16_t)v[D_TSTATE_CURRENT_FRAME];
	err = err ?: window_field(v[D_FRAME_EXECUTABLE], 8, &out->frame_code, &out->frame_read);
	err = err ?: window_field(v[D_FRAME_PREVIOUS], 8, &out->frame_back, &out->frame_read);
	err = err ?: window_field(v[D_FRAME_INSTR_PTR], 8, &out->frame_instr, &out->frame_read);
	err = err ?: window_field(v[D_FRAME_OWNER], 1, &out->frame_entry, &out->frame_read);
	err = err ?: window_field(v[D_CODE_ARGCOUNT], 4, &out->code_argcount, &out->code_read);
	err =
	    err ?: window_field(v[D_CODE_FIRSTLINENO], 4, &out->code_firstlineno, &out->code_read);
	err = err ?: window_field(v[D_CODE_NAME], 8, &out->code_name, &out->code_read);
	err = err ?: window_field(v[D_CODE_FILENAME], 8, &out->code_filename, &out->code_read);
	if (err)
		return err;
	out->code_units = (uint16_t)v[D_CODE_ADAPTIVE];
	out->code_size = (uint16_t)v[D_CODE_SIZE];
	out->code_qualname = (uint16_t)v[D_CODE_QUALNAME];
	out->code_linetable = (uint16_t)v[D_CODE_LINETABLE];
	out->code_nunits = (uint16_t)v[D_OBJECT_SIZE]; /* PyVarObject: ob_size follows PyObject */
	out->lines = EMBER_PY_LINES_LOCATIONS;
	out->ob_type = (uint16_t)v[D_OBJECT_TYPE];
	out->bytes_size = (uint16_t)v[D_BYTES_SIZE];
	out->bytes_data = (uint16_t)v[D_BYTES_DATA];
	out->str_state = (uint16_t)v[D_STR_STATE];
	out->str_length = (uint16_t)v[D_STR_LENGTH];
	out->str_ascii_data = (uint16_t)v[D_STR_ASCII_SIZE];
	/* PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject. */
	out->str_compact_data = (uint16_t)(v[D_STR_ASCII_SIZE] + 16);
	/* The code object's own fields must lie inside what is read of it. */
	if (out->code_size < out->code_read || out->code_size < out->code_qualname + 8 ||
	    out->code_size < out->code_linetable + 8 || out->code_size < out->code_nunits + 8 ||
	    out->code_units < out->code_nunits + 8 || v[D_FRAME_SIZE] < out->frame_read ||
	    out->str_ascii_data < out->str_state + 4 || out->str_ascii_data < out->str_length + 8 ||
	    out->bytes_data < out->bytes_size + 8)
		return -EBADMSG;
	return 0;
}
