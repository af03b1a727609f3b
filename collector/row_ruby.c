// SPDX-License-Identifier: Apache-2.0
#include "collector/table_loader.h"

#include <string.h>

#include "bpf/ruby.h"

/*
 * The walker bounds everything else itself: each window by EMBER_RB_WINDOW (rb_read), each
 * offset by its window (rb_u64), the step between frames (at least a word, inside the VM
 * stack), the vector's entry size (dtv_shift & 7); the module id's slot and the TLS offsets
 * only make addresses of user memory it reads. What is checked here is that both parts of
 * the loop are user code no longer than EMBER_RB_MAX_LOOP (else every native frame could
 * start a walk) and that the reserved bytes are 0.
 */
static bool row_ok(const void *row)
{
	const struct ember_rb_proc *r = row;
	static const uint8_t zero[sizeof(r->reserved)];

	return ember_row_ranges_ok(r->loop_start, r->loop_end, 2, 2, EMBER_INTERP_USER_LIMIT,
	                           EMBER_RB_MAX_LOOP) &&
	       !memcmp(r->reserved, zero, sizeof(zero));
}

const struct ember_interp_row_kind ember_row_ruby = {sizeof(struct ember_rb_proc), row_ok,
                                                     "rb_procs"};
