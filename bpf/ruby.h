/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ruby (CRuby, the YARV interpreter) frames, shared by the eBPF walker
 * (ruby.bpf.h), the collector (which checks every row before loading it) and
 * the symbolizer (which builds the rows and reads the frames back).
 *
 * The symbolizer works out, for one Ruby process, where the interpreter
 * loop lies (vm_exec_core and its caller rb_vm_exec), how the thread's
 * execution context is found (libruby's thread-local ruby_current_ec,
 * through glibc's dynamic thread vector: general-dynamic TLS in a shared
 * libruby) and where each field sits (struct ember_rb_proc). When the native
 * unwinder reaches the loop, the walker follows the thread's control frames
 * from the execution context's current one outwards, through the frame that
 * call of the loop started with (VM_FRAME_FLAG_FINISH), and records each as
 * the two words of an interpreted frame (interp.h):
 *
 *   method:      word 0: tag | EMBER_RB_FRAME_METHOD << 48 | method entry address
 *                word 1: (u32)instruction index << 32 | checksum of the iseq body
 *   other code:  word 0: tag | EMBER_RB_FRAME_ISEQ << 48 | iseq body address
 *                word 1: (u32)instruction index << 32 | checksum of the body
 *   C function:  word 0: tag | EMBER_RB_FRAME_CFUNC << 48 | method entry address
 *                word 1: checksum of the method entry
 *
 * A method's frame names its method entry, which knows the method's class
 * (an iseq does not, in 3.1) and leads to its body; a block's or a script's
 * names its body (rb_iseq_constant_body), which is malloc'd and never moved
 * by GC.compact, unlike the iseq object that points at it. The checksums (ember_interp_checksum)
 * let the symbolizer tell a body or method entry freed and reused since the
 * sample.
 *
 * Every row field is a number from the symbolizer, every frame word comes
 * from the profiled process: both are untrusted. A wrong row can only make
 * wrong frames; the verifier bounds every read.
 */
#ifndef EMBER_BPF_RUBY_H
#define EMBER_BPF_RUBY_H

#include "interp.h"

#define EMBER_RB_WINDOW    128         /* bytes of one structure read at once */
#define EMBER_RB_MAX_LOOP  (64u << 20) /* bytes of one part of the interpreter loop */
#define EMBER_RB_MAX_TLS   4096        /* offsets from the thread pointer and in the TLS block */
#define EMBER_RB_MAX_MODID 4096        /* glibc's dynamic TLS module ids */
#define EMBER_RB_MAX_STACK (1u << 24)  /* VALUEs of one execution context's VM stack */
#define EMBER_RB_ADDR_BITS 48          /* word 0: kind << 48 | address */

/* What a frame's word 0 holds. */
enum ember_rb_frame_kind {
	EMBER_RB_FRAME_ISEQ = 1, /* Ruby code outside a method (a block, a script): its iseq body */
	EMBER_RB_FRAME_CFUNC,    /* a C function called as a method: its method entry */
	EMBER_RB_FRAME_METHOD,   /* a method written in Ruby: its method entry */
};

/* Ruby's control frame flags (vm_core.h, the same from 2.6 to 3.4). */
#define EMBER_RB_FRAME_MAGIC_MASK   0x7fff0001u
#define EMBER_RB_FRAME_MAGIC_METHOD 0x11110001u
#define EMBER_RB_FRAME_MAGIC_CFUNC  0x55550001u
#define EMBER_RB_FRAME_FLAG_FINISH  0x20u
#define EMBER_RB_FRAME_FLAG_CFRAME  0x80u

/*
 * One Ruby process. Offsets named ec_* index the execution context, cfp_* a
 * control frame, iseq_* an iseq object, body_* its body, cme_* a method
 * entry; each structure is read as one window of at most EMBER_RB_WINDOW
 * bytes (the *_read sizes).
 */
struct ember_rb_proc {
	__u64 loop_start[2]; /* [0] vm_exec_core, [1] rb_vm_exec: [start, end) */
	__u64 loop_end[2];
	__u64 modid_slot; /* holds libruby's module id in the dynamic thread vector */
	__u16 dtv_offset; /* the thread pointer + dtv_offset holds the vector */
	__u16 tls_offset; /* ruby_current_ec in libruby's TLS block */
	__u8 dtv_shift;   /* entry i of the vector at i << dtv_shift */
	__u8 ec_read, ec_vm_stack, ec_vm_stack_size, ec_cfp;
	__u8 cfp_read, cfp_pc, cfp_iseq, cfp_ep; /* cfp_read: also the step between frames */
	__u8 iseq_read, iseq_body;
	__u8 body_read, body_type, body_size, body_encoded, body_first_lineno;
	__u8 cme_read, cme_def, cme_called_id, cme_owner;
	__u8 version; /* major << 4 | minor, for statistics */
	__u8 reserved[7];
};

_Static_assert(sizeof(struct ember_rb_proc) <= EMBER_INTERP_MAX_ROW, "a row fits a message");

#endif
