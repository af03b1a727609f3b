/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an ELF file says about the Ruby interpreter in it (libruby), or
 * about the dynamic linker's thread vector, for the eBPF walker and the
 * frame reader: the version (ruby_api_version), the layout
 * (ruby_layout.h), the interpreter loop (rb_vm_exec, and vm_exec_core, the
 * not exported function it calls: the largest .eh_frame function its direct
 * calls reach), where ruby_current_ec lies (the DTPMOD64 slot the dynamic
 * linker fills with libruby's module id, the variable's offset in the
 * module's block), the symbol table (decoded from rb_id2str's tail call),
 * and, in ld.so, how __tls_get_addr finds a module's block. x86-64 only.
 *
 * The file is hostile: libelf bounds-checks it, byte ranges and relocations
 * read are capped, every decoded address must land where it should.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_RUBY_ELF_H
#define EMBER_SYMBOLIZER_INTERP_RUBY_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/elf_image.h"
#include "symbolizer/interp/ruby_layout.h"

enum ember_rb_elf_kind {
	EMBER_RB_ELF_OTHER = 0,   /* no interpreter */
	EMBER_RB_ELF_RUBY,        /* a Ruby interpreter ember can walk */
	EMBER_RB_ELF_UNSUPPORTED, /* a Ruby interpreter ember cannot walk: see why */
};

/* Addresses are the file's ELF virtual addresses. */
struct ember_rb_elf {
	uint8_t kind; /* enum ember_rb_elf_kind */
	const char *why;
	struct ember_rb_layout layout;
	uint32_t teeny;
	uint64_t loop[2][2];     /* [vm_exec_core, rb_vm_exec][start, end) */
	uint64_t modid_slot;     /* the module id's DTPMOD64 slot for ruby_current_ec */
	uint16_t tls_offset;     /* ruby_current_ec in the module's TLS block */
	uint64_t global_symbols; /* ruby_global_symbols; 0: not found (C functions unnamed) */
	bool has_dtv;            /* the file is glibc's dynamic linker: */
	uint16_t dtv_offset;     /* the thread vector at thread pointer + dtv_offset, */
	uint8_t dtv_shift;       /* module i's block at vector + (i << dtv_shift) */
	struct ember_elf_segment segs[EMBER_ELF_IMAGE_MAX_SEGMENTS]; /* PT_LOAD, for the bias */
	uint32_t nsegs;
};

/* Looks at the ELF file open at fd. Returns 0 (see out->kind), or a negative errno for a
 * file that is not a usable ELF file. */
int ember_rb_elf_read(int fd, struct ember_rb_elf *out);

/* Same for an ELF image in memory (tests, fuzzing). */
int ember_rb_elf_read_mem(const void *image, size_t len, struct ember_rb_elf *out);

/*
 * A decoder of machine code (x86-64), exposed for tests; code holds len bytes
 * of a function at ELF address vaddr (__tls_get_addr's is elf_image.h's).
 *
 * rb_id2str's target: cmp reg, disp(%rip) gives the symbol table (its last id first); a
 * later mov disp(%rip), reg must load its ids at ids_offset. */
int ember_rb_decode_symbols(const uint8_t *code, size_t len, uint64_t vaddr, uint16_t ids_offset,
                            uint64_t *symbols);

#endif
