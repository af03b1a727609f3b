/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenTelemetry thread contexts (OTEP 4947): the reader of the row kind
 * EMBER_ROW_THREAD_CTX behind the interpreters' registry (interp.h). It names
 * no frames: it tells the sampler where each thread's otel_thread_ctx_v1
 * lies (bpf/thread_ctx.h), and the sampler copies the span's ids into each
 * sample.
 *
 * Only a process that publishes a process context (an OTEL_CTX mapping,
 * OTEP 4719, which the thread context's schema belongs to) is looked at:
 * the files it maps executable are read once per file (by device and
 * inode) for a thread-local otel_thread_ctx_v1 of 8 bytes and the way its
 * code reaches it (elf_image.h's ember_elf_tls_ref), and glibc's dynamic
 * linker for its thread vector. The program's own definition comes first
 * (module 1); else the first library that defines it, whose own GOT slots
 * the dynamic linker points at the definition that won. A span's attributes
 * are read from its record at the look-ahead (ember_tctx_attrs), named by the
 * process context's threadlocal.attribute_key_map.
 *
 * A Go program (its executable has .go.buildinfo) gets a row of the same kind
 * in mode GO instead: the way to its goroutines' pprof labels (go_labels.h),
 * whose sets are read at the look-ahead too (ember_tctx_go_labels).
 */
#ifndef EMBER_SYMBOLIZER_INTERP_THREAD_CTX_H
#define EMBER_SYMBOLIZER_INTERP_THREAD_CTX_H

#include "bpf/thread_ctx.h"
#include "symbolizer/interp/elf_image.h"
#include "symbolizer/interp/interp_ops.h"

#define EMBER_TCTX_SYMBOL        "otel_thread_ctx_v1"
#define EMBER_TCTX_MAX_FILES     1024
#define EMBER_TCTX_FILE_RETRY_NS (30ull * 1000000000ull) /* a file that could not be opened */
#define EMBER_TCTX_LABEL_SETS    16384                   /* goroutine label sets kept */
#define EMBER_TCTX_LABEL_BYTES   (4u << 20)
#define EMBER_TCTX_ATTRS_TEXT    2048 /* bytes of a span's attributes as lines */

/* What one file says about thread contexts. */
struct ember_tctx_elf {
	struct ember_elf_segment segs[EMBER_ELF_IMAGE_MAX_SEGMENTS];
	uint32_t nsegs;
	bool defines;    /* a thread-local otel_thread_ctx_v1 of 8 bytes */
	bool reachable;  /* and ref says how its code reaches it */
	bool executable; /* a program, not a library */
	struct ember_elf_tls_ref ref;
	bool has_dtv; /* glibc's dynamic linker: where the thread vector is */
	uint16_t dtv_offset;
	uint8_t dtv_shift;
};

/* Reads the facts of the ELF file at fd, or of an image in memory (tests, fuzzing). */
int ember_tctx_elf_read(int fd, struct ember_tctx_elf *out);
int ember_tctx_elf_read_mem(const void *image, size_t len, struct ember_tctx_elf *out);

/*
 * The row for a process whose definition is elf's, mapped with bias (slot addresses), with
 * ld the dynamic linker's facts (NULL: none). 0, or -ENOENT with *why set when the way to
 * the variable needs what is missing.
 */
int ember_tctx_row(const struct ember_tctx_elf *elf, uint64_t bias, const struct ember_tctx_elf *ld,
                   struct ember_tctx_proc *row, const char **why);

/*
 * The labels, as "key=value\n" lines ("" for none), of the goroutine label set at addr
 * whose first 16 bytes were head, that a sample of Go program pid found
 * (EMBER_STACK_GO_LABELS): read from the process at the first ask (while it lives: ask
 * ahead of symbolization), only if its first bytes are still head, and kept; NULL when it
 * could not be read. The string lives until the process's exec or exit.
 */
const char *ember_tctx_go_labels(void *state, uint32_t pid, uint64_t addr, const uint64_t head[2],
                                 uint64_t now_ns);

/*
 * The attributes of the span whose ids (trace_id, span_id) a sample of pid read
 * from the thread-context record at `record`, as "name=value\n" lines named by the process
 * context's threadlocal.attribute_key_map: read from the process at the first ask (ask ahead
 * of symbolization), only while the record still holds those ids; NULL: none read. Lives
 * until the process's exec or exit.
 */
const char *ember_tctx_attrs(void *state, uint32_t pid, uint64_t record, const uint8_t trace_id[16],
                             const uint8_t span_id[8], uint64_t now_ns);

/*
 * A record's attrs_data (len bytes, the process's: {u8 key index; u8 length; value}...,
 * the last of a key winning, an entry that does not fit ending it) as "name=value\n"
 * lines in key order into out (size bytes), names being the key map's names one a line
 * (NULL: none); an attribute without a name is counted in *unnamed. A value's line breaks
 * and NUL bytes become spaces.
 */
void ember_tctx_attr_lines(const uint8_t *data, size_t len, const char *names, char *out,
                           size_t size, uint64_t *unnamed);

extern const struct ember_interp_ops ember_thread_ctx_ops;

#endif
