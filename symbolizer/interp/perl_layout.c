// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/perl_layout.h"

#include <errno.h>
#include <string.h>

/*
 * Perl 5.36: offsets from 5.36's intrpvar.h, cop.h, cv.h, gv.h, hv.h and
 * sv.h (threaded, x86-64; offsetof against the installed CORE headers),
 * checked against Debian 12's perl 5.36.0-7 (/usr/bin/perl): Perl_block_gimme
 * reads my_perl+0xe0 (PL_curstackinfo), its si_cxsubix (+0x28) and
 * si_cxstack (+8), a context entry being 104 bytes (rax * 13 * 8) with
 * gimme at byte 1; Perl_caller_cx follows si_prev (+0x10) to si_cxix
 * (+0x20) and compares blk_sub.cv (+0x48) with PL_DBsub's; Perl_mess_sv
 * reads PL_curcop (my_perl+0xd0) and its cop_line (+0x24); Perl_cv_name
 * tests CvFLAGS (body+0x5c) for CVf_NAMED (0x8000), reads CvSTASH
 * (body+0x20) and tests SvOOK (flags byte 0xf, 0x2) before HvNAME. The
 * rest follow 5.36's structs: blk_oldcop +0x10, blk_sub.retop +0x30 and
 * old_cxsubix +0x38 (the same in sub, format and eval), cop_stashoff +0x28
 * and cop_file (a char *) +0x30, XPVCV's xcv_gv_u +0x38 and xcv_file +0x40,
 * XPVGV's name HEK +0x20 and stash +0x28, the stash's aux part in its body
 * (xpvhv_with_aux: name at +0x20, name count at +0x3c), HEK's len +4 and
 * key +8.
 */
static const struct ember_perl_layout table[] = {
    {.version = 36,
     .i_curstackinfo = 0xe0,
     .i_curcop = 0xd0,
     .cx_size = 104,
     .si_read = 0x30,
     .si_cxstack = 0x8,
     .si_prev = 0x10,
     .si_cxix = 0x20,
     .si_cxsubix = 0x28,
     .cx_read = 0x50,
     .cx_type = 0,
     .cx_oldcop = 0x10,
     .cx_retop = 0x30,
     .cx_subix = 0x38,
     .cx_cv = 0x48,
     .cop_read = 0x38,
     .cop_line = 0x24,
     .cop_file = 0x30,
     .cop_stash = 0x28,
     .cv_read = 0x60,
     .cv_gv = 0x38,
     .cv_file = 0x40,
     .sv_flags = 0xc,
     .cv_stash = 0x20,
     .cv_flags = 0x5c,
     .gv_read = 0x30,
     .gv_name = 0x20,
     .gv_stash = 0x28,
     .hv_read = 0x40,
     .hv_name = 0x20,
     .hv_count = 0x3c,
     .hek_len = 4,
     .hek_key = 8},
};

int ember_perl_layout_for(unsigned int version, struct ember_perl_layout *out)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].version == version) {
			*out = table[i];
			return 0;
		}
	memset(out, 0, sizeof(*out));
	return -ENOTSUP;
}
