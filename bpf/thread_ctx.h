/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenTelemetry thread contexts (OTEP 4947), shared by the sampler
 * (thread_ctx.bpf.h), the collector (which loads the rows) and the
 * symbolizer (which builds them: symbolizer/interp/thread_ctx.c).
 *
 * A process that publishes one exports the TLS variable otel_thread_ctx_v1:
 * each thread's pointer to a record of the span it runs, trace_id[16],
 * span_id[8], valid, trace_flags, attrs_data_size, then the attributes. The
 * record is read at the sample, while the thread is stopped (the perf event,
 * or the kernel before it returns to the thread after a wait), as the OTEP
 * asks of readers.
 *
 * Where the variable is depends on how the program reaches it, which the
 * symbolizer works out from the ELF file that defines or references it:
 *
 *   LE    the executable's own: thread pointer + offset
 *   IE    a GOT slot holding the negative offset from the thread pointer
 *   DESC  a TLS descriptor {entry, arg}: arg negative is a static offset; else a
 *         pointer to {module id, offset in its block, generation}
 *   GD    a GOT pair {module id, offset in its block}
 *
 * Module ids lead through the thread's dynamic thread vector (glibc: at
 * thread pointer + dtv_offset; entry i at i << dtv_shift, its length and
 * generation just before entry 0) to the module's block in this thread,
 * which is 0 or -1 until the thread first touched it (then it cannot have
 * set the variable either). The slots are read at every sample: the dynamic
 * linker may write them after the row is built.
 *
 * Everything here is untrusted: the row is the symbolizer's numbers, every
 * word read is the process's. A static offset must be negative (a slot not
 * yet relocated reads 0, and thread pointer + 0 is the TCB, which looks like
 * a valid record), a module id must lie within the thread's vector, and the
 * record's valid byte must be 1. A wrong row can only give a wrong link.
 */
#ifndef EMBER_BPF_THREAD_CTX_H
#define EMBER_BPF_THREAD_CTX_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

enum ember_tctx_mode {
	EMBER_TCTX_LE = 1,
	EMBER_TCTX_IE,
	EMBER_TCTX_DESC,
	EMBER_TCTX_GD,
	EMBER_TCTX_GO, /* not the OTEP's: a Go program's goroutine labels (below) */
	EMBER_TCTX_MODE_MAX,
};

#define EMBER_TCTX_MAX_STATIC (1ll << 20) /* static TLS lies within this below the tp */
#define EMBER_TCTX_MAX_MODID  4096        /* glibc's dynamic TLS module ids */
#define EMBER_TCTX_MAX_OFFSET (1ll << 20) /* of the variable in its module's block */
#define EMBER_TCTX_HEADER     28          /* trace_id, span_id, valid, flags, attrs size */
#define EMBER_TCTX_MAX_ATTRS  612         /* bytes of attributes read: the OTEP's 640 in all */

/*
 * One process's way to its threads' otel_thread_ctx_v1; or, in a Go program (mode GO), to
 * the running goroutine's pprof labels (pprof.Do, SetGoroutineLabels): the thread's g at
 * tp + offset, its m, the m's current user goroutine (g0 and the signal goroutine have
 * none), that goroutine's labels pointer. The sample carries the pointer; the label set it
 * points at is never changed once made, and the symbolizer reads it from the process.
 */
struct ember_tctx_proc {
	__u64 slot;       /* user address of the GOT slot (IE, DESC, GD); 0 for LE */
	__s64 offset;     /* LE, GO: from the tp; else added to what the slot gives */
	__u16 dtv_offset; /* the tp + dtv_offset holds the thread's vector (DESC, GD) */
	__u8 dtv_shift;   /* entry i of the vector at i << dtv_shift */
	__u8 mode;        /* enum ember_tctx_mode */
	__u16 go_m, go_curg, go_labels; /* GO: g.m, m.curg, g.labels */
	__u8 reserved[2];
};

#define EMBER_TCTX_GO_MAX_FIELD 4096 /* offsets in g and m */

/* The record's fixed part, as the OTEP lays it out (packed, host order). */
struct ember_tctx_record {
	__u8 trace_id[16];
	__u8 span_id[8];
	__u8 valid; /* 1: the ids are the thread's span's */
	__u8 trace_flags;
	__u16 attrs_data_size;
};

_Static_assert(sizeof(struct ember_tctx_record) == EMBER_TCTX_HEADER, "the OTEP's header");

#endif
