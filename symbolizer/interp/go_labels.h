/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go programs' goroutine labels (runtime/pprof's pprof.Do and SetGoroutineLabels): what the
 * sampler needs to find the running goroutine's label set (bpf/thread_ctx.h, mode GO) and
 * the reader of that set from the program's memory.
 *
 * The program's Go version comes from its .go.buildinfo (which stripped programs keep); the
 * offsets of g.m, m.curg and g.labels are per version (amd64, 1.17 to 1.26, as each
 * version's DWARF gives them), and so is the set: a map[string]string up to 1.23, a slice
 * of {key, value} strings sorted by key from 1.24. The thread's g is at -8 from the thread
 * pointer (the Go linker's place; a program linked with C has it in runtime.tlsg, in its
 * static TLS).
 *
 * The set is the program's memory: every count, length and pointer is bounded; a set that
 * cannot be read whole is none.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_GO_LABELS_H
#define EMBER_SYMBOLIZER_INTERP_GO_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/elf_image.h"

#define EMBER_GO_MAX_LABELS  16   /* labels of a set kept (the first by key) */
#define EMBER_GO_MAX_KEY     64   /* bytes of a key: longer keys are left out */
#define EMBER_GO_MAX_VALUE   256  /* bytes of a value: longer ones are cut */
#define EMBER_GO_LABELS_TEXT 2048 /* bytes of a set as "key=value\n" lines */

struct ember_go_elf {
	bool is_go;    /* has .go.buildinfo */
	uint8_t minor; /* Go 1.minor; 0: the version could not be read */
	bool has_tls;  /* tls_g holds the g's offset from the thread pointer */
	int64_t tls_g;
};

/* What the ELF file at fd (or in memory) says: 0, or a negative errno for no ELF file. */
int ember_go_elf_read(int fd, struct ember_go_elf *out);
int ember_go_elf_read_mem(const void *image, size_t len, struct ember_go_elf *out);

/* Where the sampler finds labels in Go 1.minor: 0, or -ENOENT for a version ember has no
 * offsets for. */
int ember_go_offsets(uint8_t minor, uint16_t *g_m, uint16_t *m_curg, uint16_t *g_labels);

typedef int (*ember_go_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * The label set at addr (g.labels) of a Go 1.minor program, read through read(ctx), as
 * "key=value\n" lines sorted by key into out (size bytes; a key with '=' or a line break
 * is left out, a value's line breaks become spaces). 0 (out "" for an empty set), or a
 * negative errno.
 */
int ember_go_read_labels(ember_go_read_fn read, void *ctx, uint8_t minor, uint64_t addr, char *out,
                         size_t size);

#endif
