// SPDX-License-Identifier: Apache-2.0
#include "collector/table_loader.h"

#include <string.h>

#include "bpf/php.h"

/*
 * The walker bounds everything else itself: each window by EMBER_PHP_WINDOW (php_read),
 * each offset by its window (php_u64), and reads only user memory. What is checked here is
 * that the loop is user code no longer than EMBER_PHP_MAX_LOOP (else every native frame
 * could start a walk) and that the reserved bytes are 0.
 */
static bool row_ok(const void *row)
{
	const struct ember_php_proc *r = row;
	static const uint8_t zero[sizeof(r->reserved)];

	return ember_row_ranges_ok(&r->loop_start, &r->loop_end, 1, 1, EMBER_INTERP_USER_LIMIT,
	                           EMBER_PHP_MAX_LOOP) &&
	       !memcmp(r->reserved, zero, sizeof(zero));
}

const struct ember_interp_row_kind ember_row_php = {sizeof(struct ember_php_proc), row_ok,
                                                    "php_procs"};
