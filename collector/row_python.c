// SPDX-License-Identifier: Apache-2.0
#include "collector/table_loader.h"

#include <string.h>

#include "bpf/python.h"
#include "shared/err.h"

/*
 * Every offset {at, bytes used there, limit} stays inside the bytes the walker reads (it
 * bounds the windows' sizes itself: py_step); the loop's ranges are user addresses (the checks of
 * table_loader.h); enums are known. The row lies 8-aligned in the message (struct
 * ember_msg_interp_row).
 */
static bool row_ok(const void *row)
{
	const struct ember_py_proc *r = row;
	static const uint8_t zero[sizeof(r->reserved)];
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

	/* The loop itself, then its cold part (optional). */
	return ember_row_fields_ok(f, ARRAY_SIZE(f)) &&
	       ember_row_ranges_ok(r->eval_start, r->eval_end, 2, 1, EMBER_PY_USER_LIMIT,
	                           EMBER_PY_MAX_EVAL) &&
	       r->tss_key && !(r->tss_key % 4) && r->chain - 1u < EMBER_PY_CHAIN_MAX - 1u &&
	       r->entry - 1u < EMBER_PY_ENTRY_MAX - 1u && r->instr - 1u < EMBER_PY_INSTR_MAX - 1u &&
	       !memcmp(r->reserved, zero, sizeof(zero));
}

const struct ember_interp_row_kind ember_row_python = {sizeof(struct ember_py_proc), row_ok,
                                                       "py_procs"};
