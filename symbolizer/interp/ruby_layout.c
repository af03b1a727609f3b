// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/ruby_layout.h"

#include <errno.h>
#include <string.h>

/*
 * Ruby 3.1: offsets from 3.1.2's vm_core.h, iseq.h and method.h (as rbspy's
 * bindings of them give), checked against Debian 12's libruby-3.1.so.3.1.2
 * (3.1.2p20, build id 862794fb...): rb_profile_frames reads ec+0x10, steps
 * control frames by 0x40, reads cfp+0x10/+0x20, iseq+0x10, body+0/+4/+8 and
 * +0x58; rb_id2str reads the symbol table's last id and ids at +0x10.
 * Naming: rb_profile_frame_classpath reads the method entry's defined class
 * at +8, follows an iclass (0x1c) to its klass at +8, tests FL_SINGLETON
 * (0x1000) and asks rb_ivar_get for id 0xc11 (__attached__); rb_mod_name
 * (classname inlined) reads RClass+0x18 (the rb_classext_t: USE_RVARGC is
 * off), its iv_tbl at +8, and rb_st_lookup scans a table without bins
 * (+0x18) from entries_start +0x20 to entries_bound +0x28 over entries
 * (+0x30) of 24 bytes {hash, key, record}; rb_ary_entry tests 0x2000 for an
 * embedded array, its length (flags >> 15) & 3 at +0x10, else len +0x10,
 * ptr +0x20; rb_str_hash tests 0x2000 (not embedded: len +0x10, ptr +0x18)
 * and takes an embedded length from (flags >> 14) & 0x1f.
 */
static const struct ember_rb_layout table[] = {
    {.major = 3,
     .minor = 1,
     .ec_read = 24,
     .ec_vm_stack = 0,
     .ec_vm_stack_size = 8,
     .ec_cfp = 0x10,
     .cfp_read = 0x40,
     .cfp_pc = 0,
     .cfp_iseq = 0x10,
     .cfp_ep = 0x20,
     .iseq_read = 0x18,
     .iseq_body = 0x10,
     .body_read = 0x60,
     .body_type = 0,
     .body_size = 4,
     .body_encoded = 8,
     .body_first_lineno = 0x58,
     .cme_read = 0x28,
     .cme_def = 0x10,
     .cme_called_id = 0x18,
     .cme_owner = 0x20,
     .body_pathobj = 0x40,
     .body_base_label = 0x48,
     .body_label = 0x50,
     .body_insns_info = 0x78,
     .body_insns_positions = 0x80,
     .body_insns_size = 0x88,
     .body_succ_table = 0x90,
     .body_parent_iseq = 0xa8,
     .body_local_iseq = 0xb0,
     .insn_info_size = 12,
     .insn_info_line = 0,
     .def_type = 0,
     .def_original_id = 0x20,
     .def_iseq = 8,
     .string_len = 0x10,
     .string_ptr = 0x18,
     .string_embed = 0x10,
     .array_len = 0x10,
     .array_ptr = 0x20,
     .array_embed = 0x10,
     .symbols_last_id = 0,
     .symbols_ids = 0x10,
     .cme_defined_class = 8,
     .class_ext = 0x18,
     .ext_iv_tbl = 8,
     .st_read = 0x38,
     .st_entry_power = 0,
     .st_entries_start = 0x20,
     .st_entries_bound = 0x28,
     .st_entries = 0x30,
     .st_entry_size = 24,
     .st_entry_hash = 0,
     .st_entry_key = 8,
     .st_entry_record = 0x10,
     .string_noembed_flag = 1u << 13,
     .string_embed_shift = 14,
     .string_embed_mask = 0x1f,
     .array_embed_flag = 1u << 13,
     .array_embed_shift = 15,
     .array_embed_mask = 3,
     .id_last_op = 169,
     .id_attached = 0xc11},
};

int ember_rb_layout_for(unsigned int major, unsigned int minor, struct ember_rb_layout *out)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].major == major && table[i].minor == minor) {
			*out = table[i];
			return 0;
		}
	memset(out, 0, sizeof(*out));
	return -ENOTSUP;
}
