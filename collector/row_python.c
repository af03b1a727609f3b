// SPDX-License-Identifier: Apache-2.0
#include "collector/table_loader.h"

#include "bpf/python.h"
#include "shared/err.h"

/*
 * What CPython's row holds beyond its loop's ranges: every offset {at, bytes used there,
 * limit} stays inside the bytes the walker reads (it bounds the windows' sizes itself:
 * py_step); the key slot is a user address; enums are known.
 */
bool ember_row_python_ok(const void *row)
{
	const struct ember_py_proc *r = row;
	const uint64_t fr = r->frame_read, co = r->code_read,
		       f[][3] = {{r->frame_code, 8, fr},
	                         {r->frame_back, 8, fr},
	                         {r->frame_entry, 1, fr},
	                         {r->frame_instr, r->instr == EMBER_PY_INSTR_LASTI ? 4 : 8, fr},
	                         {r->code_argcount, 4, co},
	                         {r->code_firstlineno, 4, co},
	                         {r->code_name, 8, co},
	                         {r->code_filename, 8, co},
	                         {r->tsd_offset, 0, EMBER_PY_MAX_TSD},
	                         {r->tstate_frame, 0, EMBER_PY_MAX_TSTATE},
	                         {r->cframe_frame, 0, EMBER_PY_MAX_TSTATE},
	                         {r->code_units, 0, EMBER_PY_MAX_CODE},
	                         {r->tss_key, 4, EMBER_PY_USER_LIMIT}};

	return ember_row_fields_ok(f, ARRAY_SIZE(f)) && r->tss_key && !(r->tss_key % 4) &&
	       r->chain - 1u < EMBER_PY_CHAIN_MAX - 1u && r->entry - 1u < EMBER_PY_ENTRY_MAX - 1u &&
	       r->instr - 1u < EMBER_PY_INSTR_MAX - 1u;
}
