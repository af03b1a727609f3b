// SPDX-License-Identifier: Apache-2.0
/*
 * The CFI parser (symbolizer/unwind/cfi.c): .eh_frame and .debug_frame bytes
 * as a mapped file would hold them, or a whole ELF image. The first input
 * byte picks the mode and the section address; the rest is the data.
 * Beyond not crashing, every table must come out sorted with valid kinds
 * (and an rbx save only in the rows that step through a CFA).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/unwind/cfi.h"

static void check_rows(const struct ember_unwind_rows *r)
{
	for (size_t i = 0; i < r->count; i++) {
		if (r->rows[i].kind >= EMBER_ROW_KIND_MAX ||
		    (i && r->rows[i].pc <= r->rows[i - 1].pc))
			abort();
		/* Only a frame that steps to its caller through the CFA restores rbx. */
		if (r->rows[i].bx_slot && r->rows[i].kind != EMBER_ROW_CFA_SP &&
		    r->rows[i].kind != EMBER_ROW_CFA_FP && r->rows[i].kind != EMBER_ROW_CFA_BX)
			abort();
		if (ember_unwind_rows_find(r, r->rows[i].pc) != &r->rows[i])
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_cfi_builder b;
	struct ember_unwind_rows r;
	uint8_t mode, *copy;

	if (!size)
		return 0;
	mode = data[0];
	data++;
	size--;
	if (mode & 0x80) {
		/* libelf may keep pointers into the image: give it a private copy. */
		copy = malloc(size ? size : 1);
		if (!copy)
			return 0;
		memcpy(copy, data, size);
		if (!ember_cfi_from_elf(copy, size, 0, &r)) {
			check_rows(&r);
			ember_unwind_rows_free(&r);
		}
		free(copy);
		return 0;
	}
	ember_cfi_builder_init(&b, 1u << 16);
	ember_cfi_parse(&b, data, size, (uint64_t)(mode & 0x3f) << 12,
	                mode & 0x40 ? EMBER_CFI_DEBUG_FRAME : EMBER_CFI_EH_FRAME);
	if (!ember_cfi_finish(&b, &r)) {
		check_rows(&r);
		ember_unwind_rows_free(&r);
	}
	ember_cfi_builder_free(&b);
	return 0;
}
