// SPDX-License-Identifier: Apache-2.0
/*
 * A compiled Java method's debug information on hostile bytes: the input's
 * first byte picks the UNSIGNED5 form and how the rest splits into PcDescs
 * (16 bytes each: pc offset, scope offset, ...), the scopes data and the
 * metadata (8-byte Method pointers); the scope chains at every PcDesc and
 * between them must stay in those bytes, go outward and end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/interp/jvm_nmethod.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_jvm_scope s[EMBER_JVM_MAX_SCOPES];
	struct ember_jvm_nmethod nm = {.method = 1, .pc_size = 16, .pc_offset = 0, .pc_scope = 4};
	size_t npc, nmeta;
	uint64_t *meta;

	if (size < 1)
		return 0;
	nm.x = data[0] & 1;
	npc = (size_t)(data[0] >> 1 & 7);
	nmeta = (size_t)(data[0] >> 4);
	data++, size--;
	if (size < npc * 16 + nmeta * 8)
		return 0;
	meta = nmeta ? malloc(nmeta * 8) : NULL;
	if (nmeta && !meta)
		return 0;
	if (nmeta)
		memcpy(meta, data + npc * 16, nmeta * 8);
	nm.pcs = (uint8_t *)data;
	nm.npcs = npc;
	nm.metadata = meta;
	nm.nmetadata = nmeta;
	nm.scopes = (uint8_t *)data + npc * 16 + nmeta * 8;
	nm.scopes_len = size - npc * 16 - nmeta * 8;
	for (uint64_t pc = 0; pc < 64; pc += 3) {
		int n = ember_jvm_nmethod_scopes(&nm, pc, s, EMBER_JVM_MAX_SCOPES);

		if (n > (int)EMBER_JVM_MAX_SCOPES)
			abort();
		for (int i = 0; i < n; i++)
			if (!s[i].method)
				abort();
	}
	free(meta);
	return 0;
}
