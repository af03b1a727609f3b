// SPDX-License-Identifier: Apache-2.0
/*
 * The Perl frame reader on hostile memory: the input is a process's memory
 * from address 0x10000 on, laid out as perl 5.36 (the only layout). Frames
 * of every kind (subs and formats by their CV, through GVs, stashes and
 * HEKs; evals and the main program by their COP) are read at each of the
 * input's first 2 KiB of 8-aligned addresses, C strings and HEKs at each of
 * its first 1 KiB.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/interp/perl_frames.h"
#include "tests/fuzz/fuzz_mem.h"

#define BASE     FUZZ_MEM_BASE
#define mem_read fuzz_mem_read

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_mem m = {data, size};
	struct ember_perl_layout l;
	struct ember_perl_sub f;
	char *s;

	if (ember_perl_layout_for(36, &l))
		abort();
	for (uint64_t at = 0; at < size && at < 2048; at += 8)
		for (unsigned int kind = EMBER_PERL_FRAME_SUB; kind <= EMBER_PERL_FRAME_MAIN;
		     kind++)
			if (!ember_perl_read_frame(&l, mem_read, &m, kind, BASE + at, &f))
				ember_perl_sub_free(&f);
	for (uint64_t at = 0; at < size && at < 1024; at++) {
		if (!ember_perl_read_cstring(mem_read, &m, BASE + at, EMBER_PERL_MAX_STRING, &s))
			free(s);
		if (!ember_perl_read_hek(&l, mem_read, &m, BASE + at, &s))
			free(s);
	}
	return 0;
}
