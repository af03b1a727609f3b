/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HotSpot JVM frames, shared by the eBPF walker (jvm.bpf.h), the collector
 * (which checks every row before loading it) and the symbolizer (which
 * builds the rows from the VM's own description and names the frames).
 *
 * Java code runs from the VM's code heaps (the template interpreter, code
 * compiled by C1 and C2, stubs), which have no unwind tables: when the
 * native unwinder reaches a pc in one of the process's heaps, the walker
 * finds the code blob holding it through the heap's segment map, records
 * one frame and steps the registers past it itself, until the pc leaves the
 * heaps (into libjvm's JavaCalls::call_helper, whose tables go on). Each
 * frame is the two words of an interpreted frame (interp.h):
 *
 *   word 0: tag | kind << 48 | Method (interpreted) or code blob (the others)
 *   word 1: interpreted: bci << 32 | checksum of the Method and its ConstMethod
 *           compiled:    pc offset from the code's start << 32 | compile id
 *           stubs:       pc offset from the blob << 32 | the name's first 4 bytes
 *
 * The bci of the innermost interpreted frame is r13's (the interpreter's
 * bcp register), of the others their frame's bcp slot. The checksum and the
 * compile id let the symbolizer tell a method or compiled code freed and
 * reused since the sample.
 *
 * Every row field is a number from the symbolizer, every frame word comes
 * from the profiled process: both are untrusted. A wrong row can only make
 * wrong frames; the verifier bounds every read.
 */
#ifndef EMBER_BPF_JVM_H
#define EMBER_BPF_JVM_H

#include "interp.h"

#define EMBER_JVM_HEAPS        3            /* non-nmethods, profiled, non-profiled */
#define EMBER_JVM_MAX_HEAP     (4ull << 30) /* bytes of one heap */
#define EMBER_JVM_BLOB_WINDOW  384          /* bytes of a code blob read (JDK 17 nmethod: 352) */
#define EMBER_JVM_ADDR_BITS    48           /* word 0: kind << 48 | address */
#define EMBER_JVM_SEGMAP_HOPS  16           /* segment map steps to a blob's start */
#define EMBER_JVM_INTERP_WORDS 12           /* words of an interpreter frame read, fp-80 to fp+16 */
#define EMBER_JVM_NO_BCI       0xffffffffu  /* word 1 of an interpreted frame: bci unknown */

/* A frame's kind (word 0). */
#define EMBER_JVM_FRAME_INTERPRETED 1 /* word 0: the Method */
#define EMBER_JVM_FRAME_COMPILED    2 /* the nmethod (C1 or C2 code) */
#define EMBER_JVM_FRAME_NATIVE      3 /* the nmethod of a native method's wrapper */
#define EMBER_JVM_FRAME_STUB        4 /* the code blob (stubs, adapters, vtable chunks) */

/* The first four bytes of a code blob's name, little-endian: which kind it is. */
#define EMBER_JVM_NAME_NMETHOD     0x74656d6eu /* "nmet"hod */
#define EMBER_JVM_NAME_NATIVE      0x6974616eu /* "nati"ve nmethod */
#define EMBER_JVM_NAME_INTERPRETER 0x65746e49u /* "Inte"rpreter */
#define EMBER_JVM_NAME_VTABLE      0x62617476u /* "vtab"le chunks */
#define EMBER_JVM_NAME_ITABLE      0x62617469u /* "itab"le chunks */

/*
 * One JVM process: its code heaps, each with its segment map (one byte per
 * segment: 0 starts a block, n steps back n segments, 0xff is free), and the
 * offsets of what the walker reads in a code blob (blob_*, nm_*: within
 * EMBER_JVM_BLOB_WINDOW bytes), a Method and an interpreter frame.
 */
struct ember_jvm_proc {
	__u64 heap_start[EMBER_JVM_HEAPS]; /* [start, end): 0, 0 for a heap not there */
	__u64 heap_end[EMBER_JVM_HEAPS];
	__u64 segmap[EMBER_JVM_HEAPS];
	__u8 segment_shift;   /* log2 of a segment's bytes */
	__u8 heap_block;      /* a block's header before its blob (sizeof HeapBlock) */
	__u8 code_is_offset;  /* blob_code_begin/end: int offsets from the blob (JDK 23+) */
	__u8 deopt_is_offset; /* nm_deopt: an int offset from the blob (JDK 23+), else a pointer */
	__u8 complete_width;  /* bytes of blob_frame_complete: 4, or 2 (JDK 23+) */
	__u8 version;         /* the feature release, for statistics */
	__u16 blob_name;      /* const char * */
	__u16 blob_frame_complete, blob_frame_size; /* from the code's start; in words */
	__u16 blob_code_begin, blob_code_end;       /* pointers, or offsets: code_is_offset */
	__u16 nm_compile_id, nm_orig_pc_offset, nm_deopt;
	__u16 method_const_method; /* Method's ConstMethod * */
	__u16 const_method_size;   /* sizeof ConstMethod: where the bytecodes start */
	__u8 reserved[6];
};

_Static_assert(sizeof(struct ember_jvm_proc) <= EMBER_INTERP_MAX_ROW, "a row fits a message");

#endif
