/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What libjvm.so says about the HotSpot VM in it: where the variables that
 * describe its self-description tables are (gHotSpotVMStructs,
 * gHotSpotVMTypes, gHotSpotVMIntConstants and their entries' layout:
 * jvm_structs.h). Their values are set while the JVM starts, so they are read
 * from the process, not from the file. x86-64 only.
 *
 * The file is hostile: libelf bounds-checks it; each variable must be an
 * 8-byte object in a writable segment.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_JVM_ELF_H
#define EMBER_SYMBOLIZER_INTERP_JVM_ELF_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/elf_image.h"
#include "symbolizer/interp/jvm_structs.h"

enum ember_jvm_elf_kind {
	EMBER_JVM_ELF_OTHER = 0,   /* no HotSpot VM */
	EMBER_JVM_ELF_HOTSPOT,     /* a HotSpot VM that describes itself */
	EMBER_JVM_ELF_UNSUPPORTED, /* a HotSpot VM ember cannot read: see why */
};

/* Addresses are the file's ELF virtual addresses. */
struct ember_jvm_elf {
	uint8_t kind; /* enum ember_jvm_elf_kind */
	const char *why;
	struct ember_jvm_table_vars structs, types, ints;
	struct ember_elf_segment segs[EMBER_ELF_IMAGE_MAX_SEGMENTS]; /* PT_LOAD, for the bias */
	uint32_t nsegs;
};

/* Looks at the ELF file open at fd. Returns 0 (see out->kind), or a negative errno for a
 * file that is not a usable ELF file. */
int ember_jvm_elf_read(int fd, struct ember_jvm_elf *out);

/* Same for an ELF image in memory (tests, fuzzing). */
int ember_jvm_elf_read_mem(const void *image, size_t len, struct ember_jvm_elf *out);

/* vars with bias added to each address it has (0 stays 0): where they are in a process. */
struct ember_jvm_table_vars ember_jvm_vars_at(const struct ember_jvm_table_vars *vars,
                                              uint64_t bias);

#endif
