// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the collector's checks of the unwind tables and process mappings the
 * symbolizer sends (collector/table_loader.c: UNWIND_TABLE, UNWIND_ROWS, UNWIND_PROC,
 * UNWIND_FILE, INTERP_ROW), which
 * go into the maps the in-kernel unwinder follows. The BPF maps are stood in for
 * (fake_maps.h), which after every message checks what the unwinder would find against what
 * bpf/unwind_table.h and bpf/unwind.bpf.h assume of it; a refused message ends the connection,
 * and after the reset every map is empty.
 * Input: a series of steps, each a byte (the message type, and whether the maps refuse
 * memory for it) and that message's bytes (the header is made valid: the loader receives
 * messages ember_msg_validate passed; an interpreter row's length is taken from the input,
 * as a runtime's row may be shorter than the message's largest).
 */
#include <stdint.h>
#include <string.h>

#include "fake_maps.h"

/* ---- the target ---------------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t types[] = {EMBER_MSG_UNWIND_TABLE, EMBER_MSG_UNWIND_ROWS,
	                                 EMBER_MSG_UNWIND_PROC, EMBER_MSG_INTERP_ROW,
	                                 EMBER_MSG_UNWIND_FILE};
	struct ember_tables t;
	size_t at = 0;

	maps_clear();
	if (ember_tables_init(&t, FD_TABLES, FD_BLOCKS, FD_FILES, fake_proc_fds, ROW_BUDGET))
		return 0;
	while (at < size) {
		union ember_msg m;
		uint8_t step = data[at++];
		uint16_t type = types[(step & 0x7f) % 5];
		size_t len = ember_msg_size(type), take;

		if (type == EMBER_MSG_INTERP_ROW && at < size) /* a row of any length up to the most */
			len = EMBER_MSG_INTERP_ROW_HEADER + data[at++] * (EMBER_INTERP_MAX_ROW + 1) / 256;
		take = len - sizeof(m.hdr);
		refuse_memory = step & 0x80;
		ember_msg_init(&m, type, 0);
		m.hdr.length = (uint32_t)len;
		if (take > size - at)
			take = size - at;
		memcpy((char *)&m + sizeof(m.hdr), data + at, take);
		at += take;
		if (ember_tables_handle(&t, &m)) {
			/* A violation ends the connection, and the collector forgets what it sent. */
			refuse_memory = false;
			ember_tables_reset(&t);
			maps_check_empty();
			break;
		}
		refuse_memory = false;
		maps_check(&t);
	}
	/* The peer goes away (ember_peer_detach): nothing it loaded stays. */
	ember_tables_reset(&t);
	maps_check_empty();
	ember_tables_free(&t);
	return 0;
}
