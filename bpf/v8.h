/* SPDX-License-Identifier: Apache-2.0 */
/*
 * V8 (Node.js) frames, shared by the eBPF walker (v8.bpf.h), the collector
 * (which checks every row before loading it) and the symbolizer (which builds
 * the rows from the v8dbg_ constants V8 leaves in node, and names the frames).
 *
 * JavaScript runs from V8's builtins (the embedded blob in node's text, and
 * its copy in the code range) and from the code V8 compiles into its code
 * range: neither has unwind tables, and V8 keeps a frame pointer in every
 * frame. When the native unwinder reaches a pc in one of the row's ranges,
 * the walker reads the frame at rbp and steps through it (the caller's rbp
 * at rbp, its pc at rbp + 8), one frame per step of the unwinder's loop,
 * until the pc is native again. Each frame is recorded as one of:
 *
 *   a JavaScript frame, interpreted (its pc in a builtin, a BytecodeArray and
 *   a Smi bytecode offset in its frame):
 *     word 0: tag | EMBER_V8_FRAME_BYTECODE << 48 | SharedFunctionInfo
 *     word 1: the bytecode offset from the BytecodeArray's tagged address
 *             << 32 | checksum of the SharedFunctionInfo. The frame's slot
 *             holds the offset of the last call out; the innermost frame's
 *             is r9's, where the interpreter keeps it while it runs.
 *   a JavaScript frame whose pc lies in its function's current code:
 *     word 0: tag | EMBER_V8_FRAME_CODE << 48 | Code object
 *     word 1: pc offset in the instructions << 32 | checksum of the Code, its
 *             instructions' start and the function's SharedFunctionInfo (the
 *             symbolizer finds the function again in the Code's own data)
 *   any other JavaScript frame (a JavaScript builtin, baseline code, which
 *   has no record of its function, code since replaced or compiled on stack
 *   replacement):
 *     word 0: tag | EMBER_V8_FRAME_FUNCTION << 48 | SharedFunctionInfo
 *     word 1: the pc's offset from the code range's start + 1 (0: not in
 *             it) << 32 | checksum of the SharedFunctionInfo
 *   a frame of V8's own (entry, exit, stub: a Smi marker in its context
 *   slot): its pc, as a native frame (node's Builtins_* symbols name it).
 *   A builtin that builds no frame (Sparkplug's *_Baseline ones), sampled:
 *   its pc as a native frame, then its caller (the frame at rbp) at the
 *   return address on top of the stack.
 *
 * Addresses are the objects' (their tag cleared). The checksums
 * (ember_interp_checksum over the object and two of its fields) let the
 * symbolizer tell an object the garbage collector moved or freed since the
 * sample: such a frame is unnamed, never named as another function.
 *
 * Every row field is a number from the symbolizer, every frame word comes
 * from the profiled process: both are untrusted. A wrong row can only make
 * wrong frames; the verifier bounds every read.
 */
#ifndef EMBER_BPF_V8_H
#define EMBER_BPF_V8_H

#include "interp.h"

#define EMBER_V8_RANGES    3 /* the builtins in node's text, their copy, the code range */
#define EMBER_V8_MAX_RANGE (4ull << 30) /* bytes of one range */
#define EMBER_V8_WINDOW    128          /* bytes of one object read at once */
#define EMBER_V8_ADDR_BITS 48           /* word 0: kind << 48 | address */
#define EMBER_V8_MAX_FRAME 0x100000     /* bytes between two frame pointers */

/* What a frame's word 0 holds. */
enum ember_v8_frame_kind {
	EMBER_V8_FRAME_BYTECODE = 1, /* an interpreted function: its SharedFunctionInfo */
	EMBER_V8_FRAME_CODE,         /* compiled code (baseline, Maglev, TurboFan): its Code */
	EMBER_V8_FRAME_FUNCTION,     /* the function alone: its SharedFunctionInfo */
};

/*
 * One V8 process: its ranges, where a frame's slots are from rbp (fp_*,
 * negative), and the offsets of what the walker reads in a HeapObject (its
 * Map), a Map, a JSFunction, a SharedFunctionInfo and a Code, each within
 * EMBER_V8_WINDOW bytes. Instance types are V8's numbers of this build.
 */
struct ember_v8_proc {
	__u64 code_start[EMBER_V8_RANGES]; /* [start, end); 0, 0: not there */
	__u64 code_end[EMBER_V8_RANGES];
	/* V8 13: a JSFunction holds a handle into this table of 16-byte entries (index: the
	 * handle >> 8), whose second word holds its Code << 16; 0: it holds its Code. */
	__u64 dispatch_table;
	__s16 fp_marker;         /* the context slot, or a Smi marker in V8's own frames */
	__s16 fp_function;       /* the JSFunction */
	__s16 fp_bytecode_array; /* an interpreted frame's BytecodeArray */
	__s16 fp_bytecode_offset;
	__u16 map_instance_type;
	__u16 type_sfi, type_bytecode_array, type_code; /* instance types */
	__u16 fn_shared, fn_code;
	__u16 sfi_name_or_scope_info, sfi_script_or_debug_info;
	__u16 code_instruction_start, code_instruction_size, code_flags;
	__u8 code_kind_mask, code_kind_shift, code_kind_baseline; /* the Code's kind in its flags */
	__u8 code_start_inline; /* instructions at the Code + code_instruction_start (V8 < 11) */
	__u8 bytecode_data;     /* a BytecodeArray's bytecodes start here */
	__u8 version;           /* major << 4 | minor (saturated), for statistics */
	__u8 reserved[7];
};

_Static_assert(sizeof(struct ember_v8_proc) <= EMBER_INTERP_MAX_ROW, "a row fits a message");

#endif
