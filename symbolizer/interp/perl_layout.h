/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where Perl 5 keeps what a profiler reads: the interpreter's current
 * stackinfo and COP; a stackinfo's (PERL_SI) context stack, caller, top
 * entry and innermost sub entry; a context entry's (PERL_CONTEXT) type,
 * caller's COP, return op, next sub entry out and CV; a COP's line, file
 * and stash; a CV's stash, GV (or name HEK), file and flags; a GV's name
 * HEK and stash; a stash's name; an SV's body, flags. A table per version
 * (x86-64, threaded builds), written from the runtime's headers and checked
 * against the machine code of the build named beside each row.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PERL_LAYOUT_H
#define EMBER_SYMBOLIZER_INTERP_PERL_LAYOUT_H

#include <stdint.h>

#include "bpf/perl.h"

struct ember_perl_layout {
	uint8_t version; /* 5.x: x */
	/* The walk (copied into struct ember_perl_proc). */
	uint16_t i_curstackinfo, i_curcop, cx_size;
	uint8_t si_read, si_cxstack, si_prev, si_cxix, si_cxsubix;
	uint8_t cx_read, cx_type, cx_oldcop, cx_retop, cx_subix, cx_cv;
	uint8_t cop_read, cop_line, cop_file, cop_stash;
	uint8_t cv_read, cv_gv, cv_file;
	/* What only the symbolizer reads. */
	uint8_t sv_flags;                   /* an SV head's flags (its body pointer is at 0) */
	uint8_t cv_stash, cv_flags;         /* XPVCV */
	uint8_t gv_read, gv_name, gv_stash; /* XPVGV: GvNAME_HEK, GvSTASH */
	uint8_t hv_read, hv_name, hv_count; /* XPVHV with its aux part: the name, the count */
	uint8_t hek_len, hek_key;           /* HEK */
};

/* The layout of Perl 5.version from the built-in table: 0 or -ENOTSUP. */
int ember_perl_layout_for(unsigned int version, struct ember_perl_layout *out);

#endif
