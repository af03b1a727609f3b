/* SPDX-License-Identifier: Apache-2.0 */
/*
 * V8's compiled code and bytecode, read from the process's heap (v8_heap.h)
 * for naming frames: a Code object's instructions, its function (from its
 * deoptimization data), its source position table and the functions it
 * inlined; a function's BytecodeArray and its position table. What is read
 * is copied and bounded; positions are decoded by v8_positions.h.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_V8_CODE_H
#define EMBER_SYMBOLIZER_INTERP_V8_CODE_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolizer/interp/v8_heap.h"
#include "symbolizer/interp/v8_positions.h"

#define EMBER_V8_MAX_INLINED 64 /* inlining positions of one Code kept */
#define EMBER_V8_MAX_SCOPES  16 /* functions at one pc: itself and those inlined there */

/* One function inlined into a Code: where it was called (a position of its caller, which
 * may be inlined itself) and its SharedFunctionInfo. */
struct ember_v8_inlining {
	uint64_t position; /* packed */
	uint64_t sfi;      /* untagged; 0: not read */
};

/* A Code object: enough to name any pc in it. */
struct ember_v8_code {
	uint64_t code;  /* its own address (untagged) */
	uint64_t start; /* its instructions' address */
	uint32_t size;  /* bytes of instructions */
	uint64_t sfi;   /* untagged: the function compiled (0: none recorded) */
	uint8_t *table; /* malloc'd: its source position table */
	uint32_t table_len;
	struct ember_v8_inlining inlined[EMBER_V8_MAX_INLINED];
	uint32_t ninlined;
	/* The map of the object its instructions are in (its InstructionStream, or the Code
	 * itself before V8 11): every compiled function's is the same. */
	uint64_t code_space_map;
	/* Baseline (Sparkplug) code: its table maps pcs to bytecodes, these (malloc'd). */
	bool baseline;
	uint8_t *bytecodes;
	uint32_t nbytes;
};

/* A function at a pc, with the position it is at there. */
struct ember_v8_scope {
	uint64_t sfi;          /* untagged */
	int32_t script_offset; /* -1: not known */
};

/* Reads the Code at code (untagged): 0, -ENOMEM, or why not (-EINVAL: no Code now). */
int ember_v8_code_read(const struct ember_v8_heap *h, uint64_t code, struct ember_v8_code *out);
void ember_v8_code_free(struct ember_v8_code *c);

/*
 * The functions at offset pc_offset of the Code's instructions (a return address: the
 * call before it), innermost first, each with its script offset: how many (at least 1 when
 * the Code has a function), at most max.
 */
int ember_v8_code_scopes(const struct ember_v8_code *c, uint32_t pc_offset,
                         struct ember_v8_scope *out, int max);

#define EMBER_V8_MAX_CODE_SCAN (256u << 10) /* bytes before a pc looked through for its Code */

/*
 * The Code whose instructions hold pc, found by looking back from pc for the header of the
 * object in code space that holds them (the word code_space_map, which ember_v8_code_read
 * learnt from another Code), at most EMBER_V8_MAX_CODE_SCAN bytes: the Code (untagged), read
 * into *out. 0, or -ENOENT, -EFAULT, -ENOMEM.
 */
int ember_v8_code_at(const struct ember_v8_heap *h, uint64_t code_space_map, uint64_t pc,
                     struct ember_v8_code *out);

/* The bytecode offset baseline code c runs at pc_offset of its instructions (a return
 * address: the call before it): -1 in its prologue (the function's entry), or when not
 * known. */
int32_t ember_v8_baseline_offset(const struct ember_v8_layout *l, const struct ember_v8_code *c,
                                 uint32_t pc_offset);

/* The source position table of the function at sfi (untagged), from its bytecode, into
 * *table (malloc'd, *len bytes): 0, or -ENOENT (no bytecode, or V8 has not collected its
 * positions), -EINVAL, -EFAULT, -ENOMEM. */
int ember_v8_bytecode_table(const struct ember_v8_heap *h, uint64_t sfi, uint8_t **table,
                            uint32_t *len);

/* The bytecode offset a frame's offset slot stands for (it counts from the BytecodeArray's
 * tagged address): -1 when it is no offset. */
int32_t ember_v8_bytecode_offset(const struct ember_v8_layout *l, int32_t slot);

#endif
