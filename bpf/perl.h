/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Perl 5 frames, shared by the eBPF walker (perl.bpf.h), the collector
 * (which checks every row before loading it) and the symbolizer (which
 * builds the rows and reads the frames back).
 *
 * The symbolizer works out, for one Perl process (a threaded build:
 * MULTIPLICITY, each thread's interpreter behind the pthread key PL_thr_key),
 * where the interpreter loop lies (Perl_runops_standard), where glibc keeps
 * a key's value and where each field sits (struct ember_perl_proc). When
 * the native unwinder reaches the loop, the walker follows the context
 * stack (PERL_CONTEXT entries of each stackinfo, from si_cxsubix through
 * each entry's old_cxsubix, then si_prev) and records each sub, format and
 * eval as the two words of an interpreted frame (interp.h):
 *
 *   word 0: tag | kind << 48 | CV address (sub, format) or COP address (eval, main)
 *   word 1: (u32)line << 32 | checksum
 *
 * The line is the COP's the frame runs (PL_curcop for the innermost, the
 * next inner frame's blk_oldcop for the others). A CV's checksum mixes its
 * body pointer, its GV (or name HEK) and its file; a COP's its file pointer
 * and stash offset. They let the symbolizer tell a CV or COP freed and
 * reused since the sample (string evals free theirs).
 *
 * Every row field is a number from the symbolizer, every frame word comes
 * from the profiled process: both are untrusted. A wrong row can only make
 * wrong frames; the verifier bounds every read.
 */
#ifndef EMBER_BPF_PERL_H
#define EMBER_BPF_PERL_H

#include "interp.h"

#define EMBER_PERL_WINDOW    128         /* bytes of one structure read at once */
#define EMBER_PERL_MAX_LOOP  (16u << 20) /* bytes of the interpreter loop */
#define EMBER_PERL_ADDR_BITS 48          /* word 0: kind << 48 | address */
#define EMBER_PERL_MAX_KEYS  32          /* glibc's first-level key slots */
#define EMBER_PERL_MAX_CX    (1 << 24)   /* context entries of a stackinfo */

/* A frame's kind (word 0). */
#define EMBER_PERL_FRAME_SUB    1 /* word 0: the CV */
#define EMBER_PERL_FRAME_FORMAT 2 /* the CV */
#define EMBER_PERL_FRAME_EVAL   3 /* the COP it runs */
#define EMBER_PERL_FRAME_MAIN   4 /* the main program: the COP it runs */

/* cop.h: a context entry's type (cx_type & 0xf). */
#define EMBER_PERL_CXT_SUB    9
#define EMBER_PERL_CXT_FORMAT 10
#define EMBER_PERL_CXT_EVAL   11

/*
 * One Perl process. Offsets named i_* index the interpreter struct, si_* a
 * stackinfo, cx_* a PERL_CONTEXT, cop_* a COP, cv_* a CV's body (XPVCV); each
 * structure is read as one window of at most EMBER_PERL_WINDOW bytes (the
 * *_read sizes).
 */
struct ember_perl_proc {
	__u64 loop_start, loop_end; /* Perl_runops_standard: [start, end) */
	__u64 thr_key;              /* &PL_thr_key: the u32 pthread key of the interpreter */
	__u16 tsd_offset;           /* value of key k: thread pointer + tsd_offset + 16 * k */
	__u16 i_curstackinfo, i_curcop;
	__u16 cx_size;
	__u8 si_read, si_cxstack, si_prev, si_cxix, si_cxsubix;
	__u8 cx_read, cx_type, cx_oldcop, cx_retop, cx_subix, cx_cv;
	__u8 cop_read, cop_line, cop_file, cop_stash;
	__u8 cv_read, cv_gv, cv_file;
	__u8 version; /* 5.x: x, for statistics */
	__u8 reserved[13];
};

_Static_assert(sizeof(struct ember_perl_proc) <= EMBER_INTERP_MAX_ROW, "a row fits a message");

#endif
