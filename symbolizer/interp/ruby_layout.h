/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where CRuby keeps what a profiler reads: the execution context's VM stack
 * and current control frame; a control frame's pc, iseq and environment; an
 * iseq body's type, size, instructions, location (label, path, first line)
 * and line table; a method entry's definition, id and owner; strings,
 * arrays, classes and the symbol table. A table per version (ruby_api_version,
 * x86-64, default builds), written from the runtime's headers and checked
 * against the machine code of the build named beside each row.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_RUBY_LAYOUT_H
#define EMBER_SYMBOLIZER_INTERP_RUBY_LAYOUT_H

#include <stdint.h>

#include "bpf/ruby.h"

struct ember_rb_layout {
	uint8_t major, minor;
	/* The walk (copied into struct ember_rb_proc). */
	uint8_t ec_read, ec_vm_stack, ec_vm_stack_size, ec_cfp;
	uint8_t cfp_read, cfp_pc, cfp_iseq, cfp_ep;
	uint8_t iseq_read, iseq_body;
	uint8_t body_read, body_type, body_size, body_encoded, body_first_lineno;
	uint8_t cme_read, cme_def, cme_called_id, cme_owner;
	/* What only the symbolizer reads. */
	uint16_t body_pathobj, body_base_label, body_label; /* rb_iseq_location_t in the body */
	uint16_t body_insns_info, body_insns_positions, body_insns_size, body_succ_table;
	uint16_t body_parent_iseq, body_local_iseq;
	uint16_t insn_info_size, insn_info_line; /* struct iseq_insn_info_entry */
	uint16_t def_type, def_original_id;      /* rb_method_definition_t: type & 0xf */
	uint16_t def_iseq;                       /* an iseq method's body.iseq.iseqptr */
	uint16_t string_len, string_ptr,
	    string_embed;                           /* RString: heap len and ptr, embedded bytes */
	uint16_t array_len, array_ptr, array_embed; /* RArray */
	uint16_t symbols_last_id, symbols_ids;      /* ruby_global_symbols */
	/* Naming frames (ruby_frames.c). */
	uint16_t cme_defined_class;     /* the class stackprof qualifies a method by */
	uint16_t class_ext, ext_iv_tbl; /* RClass's rb_classext_t, its ivar st_table */
	uint16_t st_read, st_entry_power, st_entries_start, st_entries_bound, st_entries;
	uint16_t st_entry_size, st_entry_hash, st_entry_key, st_entry_record;
	uint32_t string_noembed_flag, string_embed_shift, string_embed_mask; /* RString flags */
	uint32_t array_embed_flag, array_embed_shift, array_embed_mask;      /* RArray flags */
	uint32_t id_last_op;  /* tLAST_OP_ID: a larger id's serial is id >> 4 */
	uint32_t id_attached; /* id__attached__ (predefined): a singleton class's object */
};

/* The layout of Ruby major.minor from the built-in table: 0 or -ENOTSUP. */
int ember_rb_layout_for(unsigned int major, unsigned int minor, struct ember_rb_layout *out);

#endif
