/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads a CPython code object out of a process's memory: its qualified
 * name (its name before 3.11), file name, first line, line table and the
 * checksum the eBPF walker computed (bpf/python.h). Memory comes through a
 * read callback (the process's /proc/PID/mem in the symbolizer, a buffer in
 * tests and fuzzing). Everything read is hostile: each object's type must
 * be the interpreter's own (PyCode_Type, PyUnicode_Type, PyBytes_Type when
 * known), lengths are capped, strings must be compact and well formed.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PYTHON_CODE_H
#define EMBER_SYMBOLIZER_INTERP_PYTHON_CODE_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/python_layout.h"

#define EMBER_PY_MAX_NAME      1024 /* characters of a function name */
#define EMBER_PY_MAX_FILE      4096 /* characters of a file name */
#define EMBER_PY_MAX_LINETABLE (64u << 10)
#define EMBER_PY_MAX_UNITS     (1u << 24) /* code units of one code object */

/* Reads len bytes at addr into buf: 0, or a negative errno. */
typedef int (*ember_py_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Addresses of the interpreter's type objects in the process; 0: not checked. */
struct ember_py_types {
	uint64_t code, str, bytes;
};

struct ember_py_code {
	uint32_t checksum; /* as the walker computes it from the same fields */
	int32_t firstlineno;
	uint64_t nunits; /* 3.11+: code units; 0 when not known */
	char *name;      /* qualified name (3.11+) or name, UTF-8; malloc'd */
	char *file;      /* malloc'd */
	uint8_t *linetable;
	size_t linetable_len;
	int linetable_error; /* the table could not be read: lines are unknown */
};

/*
 * Reads the code object at addr. Returns 0, -EFAULT when memory cannot be
 * read, -EBADMSG when the object is not a code object of this layout
 * (wrong type, bad strings). On success out owns memory: ember_py_code_free.
 */
int ember_py_read_code(const struct ember_py_layout *l, const struct ember_py_types *types,
                       ember_py_read_fn read, void *ctx, uint64_t addr, struct ember_py_code *out);
void ember_py_code_free(struct ember_py_code *c);

/*
 * Reads a str object at addr as UTF-8 into a malloc'd string of at most
 * max_chars characters. Returns 0 or a negative errno (-ENOTSUP: a legacy,
 * non-compact string).
 */
int ember_py_read_str(const struct ember_py_layout *l, const struct ember_py_types *types,
                      ember_py_read_fn read, void *ctx, uint64_t addr, size_t max_chars,
                      char **out);

#endif
