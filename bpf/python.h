/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPython frames, shared by the eBPF walker (python.bpf.h), the collector
 * (which checks every row before loading it) and the symbolizer (which
 * builds the rows and reads the frames back).
 *
 * The symbolizer works out, for one Python process, where the interpreter
 * loop lies, how the current thread state is found and where each field
 * sits (struct ember_py_proc); the collector loads that row into the map
 * py_procs (tgid -> row) after checking that every offset stays inside the
 * windows the walker reads. When the native unwinder reaches the
 * interpreter loop, the walker follows the thread's frame chain and records
 * each Python frame as the two words of an interpreted frame (interp.h):
 *
 *   word 0: the tag of EMBER_RUNTIME_PYTHON's frames | code object address
 *   word 1: (u32)instruction offset << 32 | checksum of the code object
 *
 * The instruction offset is f_lasti as the interpreter keeps it (<= 3.10)
 * or the byte offset of the current code unit from the first (3.11+). The
 * checksum (ember_py_checksum) lets the symbolizer tell a code object freed
 * and reused since the sample.
 *
 * Every row field is a number from the symbolizer, every frame word comes
 * from the profiled process: both are untrusted. A wrong row can only make
 * wrong frames; the verifier bounds every read.
 */
#ifndef EMBER_BPF_PYTHON_H
#define EMBER_BPF_PYTHON_H

#include "interp.h"

#define EMBER_PY_WINDOW       128 /* bytes of a frame or a code object read at once */
#define EMBER_PY_MAX_PROCS    EMBER_INTERP_MAX_PROCS
#define EMBER_PY_MAX_EVAL     (64u << 20) /* bytes of one part of the interpreter loop */
#define EMBER_PY_MAX_TSD      4096        /* thread pointer offset of the key slots */
#define EMBER_PY_MAX_TSTATE   4096        /* offsets inside the thread state and _PyCFrame */
#define EMBER_PY_MAX_CODE     4096        /* offset of the first code unit */
#define EMBER_PY_USER_LIMIT   EMBER_INTERP_USER_LIMIT
#define EMBER_PY_MAX_TSS_KEYS 32 /* glibc's first-level key slots */

/* How frames are chained. */
enum ember_py_chain {
	EMBER_PY_CHAIN_FRAME_OBJECT = 1, /* <= 3.10: tstate->frame, then f_back */
	EMBER_PY_CHAIN_CFRAME,           /* 3.11, 3.12: tstate->cframe->current_frame, previous */
	EMBER_PY_CHAIN_DIRECT,           /* 3.13+: tstate->current_frame, previous */
	EMBER_PY_CHAIN_MAX,
};

/* Which frames one call of the interpreter loop runs. */
enum ember_py_entry {
	EMBER_PY_ENTRY_ONE = 1, /* exactly one (<= 3.10) */
	EMBER_PY_ENTRY_FLAG,    /* down to the frame whose entry byte is set (3.11) */
	EMBER_PY_ENTRY_OWNER,   /* down to a shim frame, owner byte >= entry_owner: not shown */
	EMBER_PY_ENTRY_MAX,
};

/* What the frame's instruction field holds. */
enum ember_py_instr {
	EMBER_PY_INSTR_LASTI = 1, /* int f_lasti, recorded as is */
	EMBER_PY_INSTR_POINTER,   /* a pointer into the code object, recorded as a byte offset */
	EMBER_PY_INSTR_MAX,
};

/*
 * One Python process. Offsets named frame_* index a window of frame_read
 * bytes read at the frame, code_* a window of code_read bytes read at the
 * code object; both windows are at most EMBER_PY_WINDOW bytes.
 */
struct ember_py_proc {
	__u64 eval_start[2]; /* the interpreter loop and its cold part: [start, end) */
	__u64 eval_end[2];   /* end 0: that part is absent */
	__u64 tss_key;       /* address of the u32 pthread key holding the thread state */
	__u16 tsd_offset;    /* value of key k: thread pointer + tsd_offset + 16 * k (glibc) */
	__u16 tstate_frame;  /* thread state: frame (<= 3.10), cframe (3.11, 3.12), current_frame */
	__u16 cframe_frame;  /* _PyCFrame: current_frame (CHAIN_CFRAME) */
	__u16 code_units;    /* code object: first code unit (INSTR_POINTER) */
	__u8 chain, entry, instr; /* enum ember_py_chain, ember_py_entry, ember_py_instr */
	__u8 entry_owner;         /* ENTRY_OWNER: the lowest owner value of a shim frame */
	__u8 frame_read, frame_code, frame_back, frame_instr, frame_entry;
	__u8 code_read, code_argcount, code_firstlineno, code_name, code_filename;
	__u8 version; /* 3.x: x, for statistics */
	__u8 reserved[7];
};

_Static_assert(sizeof(struct ember_py_proc) <= EMBER_INTERP_MAX_ROW, "a row fits a message");

/*
 * The checksum of a code object: its argument count, first line and the
 * addresses of its name and file name, fields that do not change while it
 * lives. Never 0 (0: the code object could not be read).
 */
static inline __u32 ember_py_checksum(__u32 argcount, __u32 firstlineno, __u64 name, __u64 filename)
{
	__u64 h = name * 0x9e3779b97f4a7c15ull ^ filename * 0xc2b2ae3d27d4eb4full ^
	          ((__u64)firstlineno << 32 | argcount);

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (__u32)h ? (__u32)h : 1;
}

#endif
