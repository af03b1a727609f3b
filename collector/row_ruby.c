// SPDX-License-Identifier: Apache-2.0
#include "collector/table_loader.h"

#include <string.h>

#include "bpf/ruby.h"
#include "shared/err.h"

/*
 * The walker bounds each field's offset by its window itself (ruby.bpf.h's rb_u64 reads 0
 * past it): what is checked here is what it cannot bound. Each window fits EMBER_RB_WINDOW,
 * the control frame (also the step between frames) is whole words, both parts of the loop
 * are user code no longer than EMBER_RB_MAX_LOOP, the module id's slot is a user word.
 */
static bool row_ok(const void *row)
{
	const struct ember_rb_proc *r = row;
	static const uint8_t zero[sizeof(r->reserved)];
	const uint64_t f[][3] = {{r->ec_read, 0, EMBER_RB_WINDOW},
	                         {r->cfp_read, 0, EMBER_RB_WINDOW},
	                         {r->iseq_read, 0, EMBER_RB_WINDOW},
	                         {r->body_read, 0, EMBER_RB_WINDOW},
	                         {r->cme_read, 0, EMBER_RB_WINDOW},
	                         {r->dtv_offset, 8, EMBER_RB_MAX_TLS},
	                         {r->tls_offset, 8, EMBER_RB_MAX_TLS},
	                         {r->modid_slot, 8, EMBER_INTERP_USER_LIMIT}};

	return ember_row_fields_ok(f, ARRAY_SIZE(f)) &&
	       ember_row_ranges_ok(r->loop_start, r->loop_end, 2, 2, EMBER_INTERP_USER_LIMIT,
	                           EMBER_RB_MAX_LOOP) &&
	       r->modid_slot && !(r->modid_slot % 8) && r->cfp_read >= 8 && !(r->cfp_read % 8) &&
	       r->dtv_shift < 8 && !memcmp(r->reserved, zero, sizeof(zero));
}

const struct ember_interp_row_kind ember_row_ruby = {sizeof(struct ember_rb_proc), row_ok,
                                                     "rb_procs"};
