/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an ELF file says about the Perl interpreter in it (the perl
 * executable, which holds it in Debian's build, or libperl.so), for the
 * eBPF walker and the frame reader: the version (PL_revision, PL_version,
 * PL_subversion: bytes in the file), the layout (perl_layout.h), the
 * interpreter loop (Perl_runops_standard: its symbol's size, or its
 * .eh_frame function) and the pthread key of the thread's interpreter
 * (PL_thr_key: a threaded build; one without it is refused). It also says
 * whether the file is glibc's, with the key slots' place (elf_image.h's
 * ember_elf_glibc_tsd). x86-64 only.
 *
 * The file is hostile: libelf bounds-checks it, every address must land
 * where it should (the key in a writable segment, the loop in code).
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PERL_ELF_H
#define EMBER_SYMBOLIZER_INTERP_PERL_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/elf_image.h"
#include "symbolizer/interp/perl_layout.h"

enum ember_perl_elf_kind {
	EMBER_PERL_ELF_OTHER = 0,   /* no interpreter */
	EMBER_PERL_ELF_PERL,        /* a Perl interpreter ember can walk */
	EMBER_PERL_ELF_UNSUPPORTED, /* a Perl interpreter ember cannot walk: see why */
};

/* Addresses are the file's ELF virtual addresses. */
struct ember_perl_elf {
	uint8_t kind; /* enum ember_perl_elf_kind */
	const char *why;
	struct ember_perl_layout layout;
	unsigned int version[3]; /* 5, 36, 0 */
	uint64_t loop[2];        /* Perl_runops_standard: [start, end) */
	uint64_t thr_key;        /* PL_thr_key */
	bool has_tsd;            /* the file is glibc's: */
	uint16_t tsd_offset;     /* where pthread keys' values lie */
	struct ember_elf_segment segs[EMBER_ELF_IMAGE_MAX_SEGMENTS]; /* PT_LOAD, for the bias */
	uint32_t nsegs;
};

/* Looks at the ELF file open at fd. Returns 0 (see out->kind), or a negative errno for a
 * file that is not a usable ELF file. */
int ember_perl_elf_read(int fd, struct ember_perl_elf *out);

/* Same for an ELF image in memory (tests, fuzzing). */
int ember_perl_elf_read_mem(const void *image, size_t len, struct ember_perl_elf *out);

#endif
