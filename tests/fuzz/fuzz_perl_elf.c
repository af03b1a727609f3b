// SPDX-License-Identifier: Apache-2.0
/*
 * An ELF file as the symbolizer meets one in a process that might run Perl:
 * its symbols (Perl_runops_standard, PL_thr_key, the version bytes
 * PL_revision, PL_version and PL_subversion, glibc's pthread_getspecific),
 * the bytes they point at, the .eh_frame_hdr search table (the loop's
 * bounds without a symbol size) and the key-slot decoder on the code.
 */
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/perl_elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_perl_elf out;

	ember_perl_elf_read_mem(data, size, &out);
	return 0;
}
