/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an ELF file says about the PHP interpreter in it (the php, php-fpm or
 * php-cgi executable, or libphp.so), for the eBPF walker and the frame
 * reader: the version (the "X-Powered-By: PHP/x.y.z" string the engine
 * sends), the layout (php_layout.h), the interpreter loop (execute_ex: its
 * symbol's size, or its .eh_frame function) and where the executor globals
 * lie (executor_globals: a plain global only in a non-thread-safe build; a
 * thread-safe one, ZTS, keeps them per thread, behind
 * executor_globals_offset, and is refused). x86-64 only.
 *
 * The file is hostile: libelf bounds-checks it, every decoded address must
 * land where it should, the version string is parsed within its bytes.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PHP_ELF_H
#define EMBER_SYMBOLIZER_INTERP_PHP_ELF_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/elf_image.h"
#include "symbolizer/interp/php_layout.h"

enum ember_php_elf_kind {
	EMBER_PHP_ELF_OTHER = 0,   /* no interpreter */
	EMBER_PHP_ELF_PHP,         /* a PHP interpreter ember can walk */
	EMBER_PHP_ELF_UNSUPPORTED, /* a PHP interpreter ember cannot walk: see why */
};

/* Addresses are the file's ELF virtual addresses. */
struct ember_php_elf {
	uint8_t kind; /* enum ember_php_elf_kind */
	const char *why;
	struct ember_php_layout layout;
	uint32_t release;                                            /* the z of x.y.z */
	uint64_t loop[2];                                            /* execute_ex: [start, end) */
	uint64_t executor_globals;                                   /* its address */
	struct ember_elf_segment segs[EMBER_ELF_IMAGE_MAX_SEGMENTS]; /* PT_LOAD, for the bias */
	uint32_t nsegs;
};

/* Looks at the ELF file open at fd. Returns 0 (see out->kind), or a negative errno for a
 * file that is not a usable ELF file. */
int ember_php_elf_read(int fd, struct ember_php_elf *out);

/* Same for an ELF image in memory (tests, fuzzing). */
int ember_php_elf_read_mem(const void *image, size_t len, struct ember_php_elf *out);

/* The version in the bytes of an "X-Powered-By: PHP/x.y.z" string found in buf (len bytes):
 * 0, or -ENOENT when there is none or it is not one. Exposed for tests. */
int ember_php_parse_version(const uint8_t *buf, size_t len, unsigned int v[3]);

#endif
