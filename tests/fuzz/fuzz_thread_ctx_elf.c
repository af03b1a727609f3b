// SPDX-License-Identifier: Apache-2.0
/*
 * An ELF file as the thread-context reader meets one in a process that publishes a
 * process context: its otel_thread_ctx_v1, the TLS relocations naming it, its PT_TLS
 * segment and program headers, ld.so's __tls_get_addr; then the row built from it.
 */
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/thread_ctx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_tctx_elf out;
	struct ember_tctx_proc row;
	const char *why;

	if (ember_tctx_elf_read_mem(data, size, &out))
		return 0;
	ember_tctx_row(&out, 0x7f0000000000ull, &out, &row, &why);
	ember_tctx_row(&out, 0, NULL, &row, &why);
	return 0;
}
