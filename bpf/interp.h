/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interpreted runtimes, shared by the eBPF walkers (interp.bpf.h dispatches
 * to one per runtime), the collector (which checks each runtime's rows
 * before it loads them) and the symbolizer (which builds the rows and names
 * the frames).
 *
 * A process runs at most one runtime whose frames ember walks (and may have
 * rows of the other kinds below, EMBER_ROW_KINDS). The
 * symbolizer detects it, builds the process's row (the runtime's own
 * struct, e.g. struct ember_py_proc in python.h) and sends it; the
 * collector checks it with that runtime's row check, loads it into that
 * runtime's map (tgid -> row) and notes the runtime in the index
 * interp_procs (tgid -> runtime). When the native unwinder reaches the
 * runtime's interpreter loop, its walker records the runtime's frames among
 * the sample's user words, two words each:
 *
 *   word 0: EMBER_INTERP_TAG_FRAME(runtime) << 56 | 56 bits of the runtime's
 *   word 1: 64 bits of the runtime's
 *
 * A marker (the runtime's frames cut short) is
 * EMBER_INTERP_TAG_MARKER(runtime) << 56 | reason (enum
 * ember_interp_marker), then a word 0. Every tag has the top bit set, which
 * no native user pc has: the unwinder stops at a pc that does. A sample
 * with such words has EMBER_STACK_INTERP in its stack flags.
 *
 * Every row field is a number from the symbolizer, every frame word comes
 * from the profiled process: both are untrusted. A wrong row can only make
 * wrong frames; the verifier bounds every read.
 */
#ifndef EMBER_BPF_INTERP_H
#define EMBER_BPF_INTERP_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * The runtimes, one line each: X(ID, number, name, frame kind), giving
 * EMBER_RUNTIME_<ID> = number, the name `--interpreters` takes and the kind
 * of its frames in profiles (OpenTelemetry's profile.frame.type). Numbers
 * count up from 1, in this order, below EMBER_RUNTIME_LIMIT (a tag's low
 * nibble holds them); a number once released is never given to another
 * runtime.
 */
#define EMBER_RUNTIMES(X)                                                                          \
	X(PYTHON, 1, "python", "cpython")                                                          \
	X(RUBY, 2, "ruby", "ruby")                                                                 \
	X(PHP, 3, "php", "php") X(PERL, 4, "perl", "perl") X(JVM, 5, "jvm", "jvm")                \
	    X(V8, 6, "v8", "v8js")

enum ember_runtime {
	EMBER_RUNTIME_NONE = 0,
#define EMBER_RUNTIME_ENUM(id, number, name, kind) EMBER_RUNTIME_##id = number,
	EMBER_RUNTIMES(EMBER_RUNTIME_ENUM)
#undef EMBER_RUNTIME_ENUM
	    EMBER_RUNTIME_MAX, /* one past the last */
};

/*
 * Kinds of per-process rows after the runtimes: loaded like a runtime's row (the same
 * message, checks and exit), but not indexed in interp_procs, so a process can have one
 * beside its runtime's. They have no frames, tags or --interpreters names.
 */
#define EMBER_ROW_THREAD_CTX EMBER_RUNTIME_MAX /* thread_ctx.h */
#define EMBER_ROW_KINDS      (EMBER_RUNTIME_MAX + 1)

#define EMBER_RUNTIME_LIMIT 16
_Static_assert(EMBER_RUNTIME_MAX <= EMBER_RUNTIME_LIMIT, "a runtime is a tag's low nibble");

/* Every runtime: the bit 1u << runtime of each. */
#define EMBER_RUNTIMES_ALL (((1u << EMBER_RUNTIME_MAX) - 1) & ~1u)

#define EMBER_INTERP_MAX_FRAMES 128  /* interpreted frames recorded per sample */
#define EMBER_INTERP_MAX_PROCS  8192 /* processes with a row, of every runtime together */
#define EMBER_INTERP_MAX_ROW    512  /* bytes of the largest runtime's row */
/* Bytes of the per-CPU scratch each walker has for its row copy and read windows. */
#define EMBER_INTERP_SCRATCH_BYTES 1024
#define EMBER_INTERP_USER_LIMIT    (1ull << 56) /* no user address is this high */

#define EMBER_INTERP_TAG_SHIFT      56
#define EMBER_INTERP_TAG_FRAME(rt)  (0x90ull + (rt))
#define EMBER_INTERP_TAG_MARKER(rt) (0xa0ull + (rt))
#define EMBER_INTERP_PAYLOAD_MASK   (EMBER_INTERP_USER_LIMIT - 1)

/* Why a runtime's frames stop before its outermost one (a marker's reason). */
enum ember_interp_marker {
	EMBER_INTERP_MARK_TRUNCATED = 1, /* EMBER_INTERP_MAX_FRAMES frames were recorded */
	EMBER_INTERP_MARK_UNREADABLE,    /* a frame could not be read */
	EMBER_INTERP_MARK_MAX,
};

/* The runtime whose frame or marker w is the first word of; 0: w is no such word. */
static inline __u32 ember_interp_word_runtime(__u64 w)
{
	__u32 tag = (__u32)(w >> EMBER_INTERP_TAG_SHIFT), rt = tag & 0xf;

	return rt && rt < EMBER_RUNTIME_MAX && (tag >> 4 == 0x9 || tag >> 4 == 0xa) ? rt : 0;
}

/* Whether w, the first word of a runtime's frame or marker, is a marker's. */
static inline int ember_interp_word_is_marker(__u64 w)
{
	return w >> (EMBER_INTERP_TAG_SHIFT + 4) == 0xa;
}

/* A mix of three fields that do not change while a runtime's structure lives (its frame's
 * checksum: a structure freed and reused since the sample is told apart); never 0. */
static inline __u32 ember_interp_checksum(__u64 a, __u64 b, __u64 c)
{
	__u64 h = a * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full ^ c;

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (__u32)h ? (__u32)h : 1;
}

/* The walker's state during one sample (in the per-CPU scratch of sampler.bpf.c). */
struct ember_interp_walk {
	__u64 cursor; /* the runtime's next frame to record */
	__u16 frames; /* frames recorded */
	__u8 state;   /* interp.bpf.h's enum interp_walk_state */
	__u8 pending; /* recording the frames of one call of the interpreter loop */
	__u8 at_pc;   /* the current native pc's frames are done: record it */
	__u8 runtime; /* enum ember_runtime: the process's */
	__u8 reserved[2];
};

#endif
