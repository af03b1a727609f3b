/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What node (or libnode) says about the V8 in it: the v8dbg_ constants V8
 * leaves for debuggers (field offsets, instance types, tags, frame slots),
 * V8's version, where its embedded builtins are, and, for what a version
 * does not export, the values that version is known to have. x86-64 V8 9 to
 * 12 without pointer compression (as Node builds it) only.
 *
 * The file is hostile: libelf bounds-checks it; each constant is a 4-byte
 * object in a loadable segment, and each value is checked against what a
 * field, a type or a frame slot can be before anything reads with it.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_V8_ELF_H
#define EMBER_SYMBOLIZER_INTERP_V8_ELF_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/elf_image.h"

#define EMBER_V8_ABSENT INT32_MIN /* a constant neither exported nor known */

/*
 * The layout: X(field, check, symbol, alternate symbol). check says what the
 * value may be: OFF (a field's offset, 0 to 255 and 8-aligned for a pointer),
 * OFF4 (a 4-aligned field), TYPE (an instance type, below 4096), SLOT (a
 * frame slot from rbp, -80 to -8), NUM (a small number: tags, masks,
 * indexes). Names are the v8dbg_ symbols without their prefix; V8 12 spells
 * tagged fields with a Tagged_ type, V8 9 named JSFunction's code raw_code.
 */
#define EMBER_V8_LAYOUT(X)                                                                         \
	X(smi_shift_size, NUM, "SmiShiftSize", "")                                                 \
	X(heap_object_tag_mask, NUM, "HeapObjectTagMask", "")                                      \
	X(first_nonstring_type, TYPE, "FirstNonstringType", "")                                    \
	X(string_encoding_mask, NUM, "StringEncodingMask", "")                                     \
	X(string_representation_mask, NUM, "StringRepresentationMask", "")                         \
	X(one_byte_string_tag, NUM, "OneByteStringTag", "")                                        \
	X(seq_string_tag, NUM, "SeqStringTag", "")                                                 \
	X(cons_string_tag, NUM, "ConsStringTag", "")                                               \
	X(sliced_string_tag, NUM, "SlicedStringTag", "")                                           \
	X(thin_string_tag, NUM, "ThinStringTag", "")                                               \
	X(map_instance_type, OFF4, "class_Map__instance_type__uint16_t", "")                       \
	X(type_sfi, TYPE, "type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", "")                \
	X(type_script, TYPE, "type_Script__SCRIPT_TYPE", "")                                       \
	X(type_scope_info, TYPE, "type_ScopeInfo__SCOPE_INFO_TYPE", "")                            \
	X(type_bytecode_array, TYPE, "type_BytecodeArray__BYTECODE_ARRAY_TYPE", "")                \
	X(type_code, TYPE, "type_Code__CODE_TYPE", "")                                             \
	X(type_fixed_array, TYPE, "type_FixedArray__FIXED_ARRAY_TYPE", "")                         \
	X(type_trusted_fixed_array, TYPE, "type_TrustedFixedArray__TRUSTED_FIXED_ARRAY_TYPE", "")  \
	X(type_byte_array, TYPE, "type_ByteArray__BYTE_ARRAY_TYPE", "")                            \
	X(type_trusted_byte_array, TYPE, "type_TrustedByteArray__TRUSTED_BYTE_ARRAY_TYPE", "")     \
	X(fp_marker, SLOT, "off_fp_context_or_frame_type", "off_fp_context")                       \
	X(fp_function, SLOT, "off_fp_function", "")                                                \
	X(fp_bytecode_array, SLOT, "off_fp_bytecode_array", "")                                    \
	X(fp_bytecode_offset, SLOT, "off_fp_bytecode_offset", "")                                  \
	X(fn_shared, OFF, "class_JSFunction__shared__SharedFunctionInfo",                          \
	  "class_JSFunction__shared__Tagged_SharedFunctionInfo_")                                  \
	X(fn_code, OFF, "class_JSFunction__code__CodeT", "class_JSFunction__code__Tagged_Code_")   \
	X(sfi_name_or_scope_info, OFF, "class_SharedFunctionInfo__name_or_scope_info__Object",     \
	  "class_SharedFunctionInfo__name_or_scope_info__Tagged_Object_")                          \
	X(sfi_function_data, OFF, "class_SharedFunctionInfo__function_data__Object", "")           \
	X(sfi_script, OFF, "class_SharedFunctionInfo__script_or_debug_info__HeapObject",           \
	  "class_SharedFunctionInfo__script__Tagged_HeapObject_")                                  \
	X(script_name, OFF, "class_Script__name__Object", "")                                      \
	X(script_source, OFF, "class_Script__source__Object", "")                                  \
	X(script_line_ends, OFF, "class_Script__line_ends__Object", "")                            \
	X(code_instruction_start, OFF, "class_Code__instruction_start__uintptr_t",                 \
	  "class_Code__instruction_start__Address")                                                \
	X(code_instruction_size, OFF4, "class_Code__instruction_size__int", "")                    \
	X(code_instruction_stream, OFF,                                                            \
	  "class_Code__instruction_stream__Tagged_InstructionStream_", "")                         \
	X(code_flags, OFF4, "class_Code__flags__uint32_t", "")                                     \
	X(code_kind_mask, NUM, "CodeKindFieldMask", "")                                            \
	X(code_kind_shift, NUM, "CodeKindFieldShift", "")                                          \
	X(code_kind_baseline, NUM, "CodeKindBaseline", "")                                         \
	X(code_deopt_data, OFF, "class_Code__deoptimization_data__FixedArray", "")                 \
	X(code_position_table, OFF, "class_Code__source_position_table__ByteArray", "")            \
	X(bytecode_data, NUM, "class_BytecodeArray__data__uintptr_t", "")                          \
	X(bytecode_position_table, OFF, "class_BytecodeArray__source_position_table__Object", "")  \
	X(fixed_array_length, OFF, "class_FixedArrayBase__length__SMI", "")                        \
	X(fixed_array_data, OFF, "class_FixedArray__data__uintptr_t", "")                          \
	X(string_length, OFF4, "class_String__length__int32_t", "")                                \
	X(seq_chars, OFF4, "class_SeqOneByteString__chars__char", "")                              \
	X(cons_first, OFF, "class_ConsString__first__String", "")                                  \
	X(cons_second, OFF, "class_ConsString__second__String", "")                                \
	X(thin_actual, OFF, "class_ThinString__actual__String", "")                                \
	X(sliced_parent, OFF, "class_SlicedString__parent__String", "")                            \
	X(sliced_offset, OFF, "class_SlicedString__offset__SMI", "")                               \
	X(scope_info_first_vars, NUM, "scopeinfo_idx_first_vars", "")                              \
	X(scope_info_ncontext_locals, NUM, "scopeinfo_idx_ncontextlocals", "")                     \
	X(deopt_sfi_index, NUM, "DeoptimizationDataSharedFunctionInfoIndex",                       \
	  "DeoptimizationDataWrappedSharedFunctionInfoIndex")                                      \
	X(deopt_literals_index, NUM, "DeoptimizationDataLiteralArrayIndex", "")                    \
	X(deopt_inlining_index, NUM, "DeoptimizationDataInliningPositionsIndex", "")

struct ember_v8_layout {
#define EMBER_V8_FIELD(field, check, name, alt) int32_t field;
	EMBER_V8_LAYOUT(EMBER_V8_FIELD)
#undef EMBER_V8_FIELD
	uint8_t code_start_inline; /* V8 < 11: instructions at the Code + code_instruction_start */
	uint8_t fixed_positions;   /* V8 13: a ScopeInfo's start and end in slots 3 and 4 */
	uint16_t version[3];       /* major, minor, build */
	/* Each bytecode's size by its operands' scale (1, wide, extra wide), from the file:
	 * baseline code's pcs map to bytecodes through them. 0 bytecodes: not known. */
	uint16_t nbytecodes;
	uint8_t bytecode_sizes[3][256];
};

enum ember_v8_elf_kind {
	EMBER_V8_ELF_OTHER = 0,   /* no V8 */
	EMBER_V8_ELF_V8,          /* a V8 ember reads */
	EMBER_V8_ELF_UNSUPPORTED, /* a V8 ember cannot read: see why */
};

/* Addresses are the file's ELF virtual addresses. */
struct ember_v8_elf {
	uint8_t kind; /* enum ember_v8_elf_kind */
	char why[160];
	struct ember_v8_layout layout;
	/* The embedded builtins in the file ([blob_code, + blob_code_size)), and the variable
	 * that holds where the running V8 uses them from (its copy in the code range; 0: not
	 * known, in a build without its local symbols). */
	uint64_t blob_code, blob_code_size, current_blob_var;
	/* V8 13: the variable holding the isolate group, and where in it the dispatch table's
	 * base is (0: a V8 without one). */
	uint64_t isolate_group_var, dispatch_table_offset;
	struct ember_elf_segment segs[EMBER_ELF_IMAGE_MAX_SEGMENTS]; /* PT_LOAD, for the bias */
	uint32_t nsegs;
};

/* Looks at the ELF file open at fd. Returns 0 (see out->kind), or a negative errno for a
 * file that is not a usable ELF file. */
int ember_v8_elf_read(int fd, struct ember_v8_elf *out);

/* Same for an ELF image in memory (tests, fuzzing). */
int ember_v8_elf_read_mem(const void *image, size_t len, struct ember_v8_elf *out);

/* Completes and checks a layout whose exported constants are in *l (EMBER_V8_ABSENT where
 * not exported), for V8 major.minor: 0, or -ENOTSUP with the first missing or impossible
 * constant named in why (size bytes). */
int ember_v8_layout_finish(struct ember_v8_layout *l, char *why, size_t size);

#endif
