/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an ELF file says about the CPython interpreter in it, or about the
 * C library's thread-specific data, for the eBPF walker and the code-object
 * reader: the version (Py_Version, else the string Py_GetVersion prints,
 * else the file name), the layout (python_layout.h), the interpreter loop
 * (_PyEval_EvalFrameDefault and its compiler-split cold part: its .cold
 * symbol, or the .eh_frame range most of the loop's outward jumps land in),
 * the thread-state key (the Py_tss_t that PyGILState_GetThisThreadState
 * reads, found by decoding its first instructions, checked against the
 * version's table), the type objects, and glibc's key slots (decoded from
 * pthread_getspecific). x86-64 only.
 *
 * The file is hostile: libelf bounds-checks it, symbol counts and byte
 * ranges read are capped, every decoded address must land where it should
 * (inside _PyRuntime, inside an executable segment).
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PYTHON_ELF_H
#define EMBER_SYMBOLIZER_INTERP_PYTHON_ELF_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolizer/interp/elf_image.h"
#include "symbolizer/interp/python_layout.h"

enum ember_py_elf_kind {
	EMBER_PY_ELF_OTHER = 0,   /* no interpreter */
	EMBER_PY_ELF_PYTHON,      /* a CPython interpreter ember can walk */
	EMBER_PY_ELF_UNSUPPORTED, /* a CPython interpreter ember cannot walk: see why */
};

/* Addresses are the file's ELF virtual addresses. */
struct ember_py_elf {
	uint8_t kind; /* enum ember_py_elf_kind */
	struct ember_py_layout layout;
	uint64_t tss_key;    /* the u32 pthread key of the thread state */
	uint64_t eval[2][2]; /* [hot, cold][start, end) */
	uint64_t code_type, str_type, bytes_type;
	bool has_tsd;        /* the file has glibc's pthread_getspecific: */
	uint16_t tsd_offset; /* key k's value at thread pointer + tsd_offset + 16 k */
	const char *why;     /* UNSUPPORTED: what is missing */
	struct ember_elf_segment segs[EMBER_ELF_IMAGE_MAX_SEGMENTS]; /* PT_LOAD, for the bias */
	uint32_t nsegs;
};

/*
 * Looks at the ELF file open at fd; path (may be NULL) is the name the
 * process mapped it under, the last resort for the version. Returns 0 (see
 * out->kind) or a negative errno for a file that is not a usable ELF file.
 */
int ember_py_elf_read(int fd, const char *path, struct ember_py_elf *out);

/* Same for an ELF image in memory (tests, fuzzing). */
int ember_py_elf_read_mem(const void *image, size_t len, const char *path,
                          struct ember_py_elf *out);

/* The version in a Python file name ("libpython3.9.so.1.0", "python3.12"): 0 or -ENOENT. */
int ember_py_version_from_path(const char *path, unsigned int *major, unsigned int *minor);

/*
 * Decoders of machine code (x86-64), exposed for tests. code holds len
 * bytes of a function at ELF address vaddr.
 *
 * The address of the thread-state key read by PyGILState_GetThisThreadState:
 * a Py_tss_t inside _PyRuntime [runtime, runtime + runtime_size) (its key at
 * +4), or (3.6, runtime_size 0) a plain int key loaded from rip + disp.
 */
int ember_py_decode_tss_key(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t runtime,
                            uint64_t runtime_size, uint64_t *key);

#endif
