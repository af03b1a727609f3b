// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/v8_elf.h"

#include <errno.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>

enum check { NUM, OFF, OFF4, TYPE, SLOT };

/* A constant: its v8dbg_ symbol's name without the prefix, and its other name ("": none). */
struct constant {
	const char *name, *alt;
	size_t at; /* in struct ember_v8_layout */
	enum check check;
};

static const struct constant constants[] = {
#define EMBER_V8_ENTRY(field, check, name, alt)                                                    \
	{name, alt, offsetof(struct ember_v8_layout, field), check},
    EMBER_V8_LAYOUT(EMBER_V8_ENTRY)
#undef EMBER_V8_ENTRY
};

#define NCONSTANTS (sizeof(constants) / sizeof(constants[0]))

/*
 * What a version has that it does not export: (first, last version as major << 8 | minor,
 * field, value), applied where the constant is absent. From V8's own headers of those
 * versions (objects/code.h, objects/js-function.tq, shared-function-info.tq,
 * bytecode-array.tq, deoptimization-data.h), checked against live Node 16, 18, 20 and 22.
 */
struct fallback {
	uint16_t first, last;
	size_t at;
	int32_t value;
};

#define V(major, minor) ((major) << 8 | (minor))
#define AT(field)       offsetof(struct ember_v8_layout, field)
static const struct fallback fallbacks[] = {
    /* The interpreter's frame: context, function, argument count, BytecodeArray, offset. */
    {V(9, 0), V(12, 255), AT(fp_bytecode_array), -32},
    {V(9, 0), V(12, 255), AT(fp_bytecode_offset), -40},
    /* JSFunction: V8 9 exported raw_code, V8 11 nothing (after the context and the
     * feedback cell, before the prototype). */
    {V(9, 0), V(11, 255), AT(fn_code), 48},
    /* Code objects of V8 11: a data object that points at its instructions. */
    {V(11, 0), V(11, 255), AT(code_instruction_start), 40},
    {V(11, 0), V(11, 255), AT(code_instruction_size), 56},
    /* The object holding a Code's instructions: V8 11 split them off into an
     * InstructionStream (its map, then the Code); before, the Code itself (0). */
    {V(11, 0), V(11, 255), AT(code_instruction_stream), 32},
    {V(9, 0), V(10, 255), AT(code_instruction_stream), 0},
    /* The Code's flags, its kind in the low bits: V8 9 exported neither. */
    {V(9, 0), V(11, 255), AT(code_flags), 48},
    {V(9, 0), V(9, 255), AT(code_kind_mask), 15},
    {V(9, 0), V(9, 255), AT(code_kind_baseline), 11},
    {V(9, 0), V(12, 255), AT(code_kind_shift), 0},
    /* V8 10 and 12 moved these fields without exporting them. */
    {V(10, 0), V(10, 255), AT(code_position_table), 24},
    {V(10, 0), V(10, 255), AT(code_deopt_data), 16},
    {V(9, 0), V(9, 255), AT(code_deopt_data), 16},
    {V(12, 0), V(13, 255), AT(code_deopt_data), 8},
    {V(12, 0), V(13, 255), AT(code_position_table), 16},
    {V(12, 0), V(13, 255), AT(sfi_function_data), 8},
    /* V8 13: the SharedFunctionInfo's name under a third spelling; the JSFunction's code
     * is a dispatch handle (read through the dispatch table, v8.h). */
    {V(13, 0), V(13, 255), AT(sfi_name_or_scope_info), 24},
    {V(13, 0), V(13, 255), AT(fn_code), 24},
    {V(9, 0), V(9, 255), AT(script_source), 8},
    {V(9, 0), V(9, 255), AT(bytecode_data), 54},
    /* BytecodeArray: the source position table after the constant pool and the handler
     * table (V8 12: after its wrapper, before them). */
    {V(9, 0), V(11, 255), AT(bytecode_position_table), 32},
    {V(12, 0), V(13, 255), AT(bytecode_position_table), 24},
    /* DeoptimizationData's entries before V8 11 exported them. */
    {V(9, 0), V(10, 255), AT(deopt_literals_index), 2},
    {V(9, 0), V(10, 255), AT(deopt_sfi_index), 6},
    {V(9, 0), V(10, 255), AT(deopt_inlining_index), 7},
};
#undef AT
#undef V

static bool value_ok(enum check check, int32_t v)
{
	switch (check) {
	case OFF:
		return v >= 0 && v <= 248 && !(v & 7);
	case OFF4:
		return v >= 0 && v <= 252 && !(v & 3);
	case TYPE:
		return v >= 0 && v < 4096;
	case SLOT:
		return v >= -80 && v <= -8 && !(v & 7);
	case NUM:
	default:
		return v >= -4096 && v <= 4096;
	}
}

static int32_t *field(struct ember_v8_layout *l, size_t at)
{
	return (int32_t *)((char *)l + at);
}

int ember_v8_layout_finish(struct ember_v8_layout *l, char *why, size_t size)
{
	uint32_t version = (uint32_t)l->version[0] << 8 | l->version[1];

	if (l->version[0] < 9 || l->version[0] > 13) {
		snprintf(why, size, "its V8 %u.%u is not one ember reads (9 to 13)", l->version[0],
		         l->version[1]);
		return -ENOTSUP;
	}
	for (size_t i = 0; i < sizeof(fallbacks) / sizeof(fallbacks[0]); i++) {
		const struct fallback *f = &fallbacks[i];

		if (version >= f->first && version <= f->last &&
		    *field(l, f->at) == EMBER_V8_ABSENT)
			*field(l, f->at) = f->value;
	}
	/* Where a V8 has no such type, the usual one stands in (so no object has it twice). */
	if (l->type_trusted_fixed_array == EMBER_V8_ABSENT)
		l->type_trusted_fixed_array = l->type_fixed_array;
	if (l->type_trusted_byte_array == EMBER_V8_ABSENT)
		l->type_trusted_byte_array = l->type_byte_array;
	l->code_start_inline = l->version[0] < 11;
	l->fixed_positions = l->version[0] >= 13;
	for (size_t i = 0; i < NCONSTANTS; i++) {
		int32_t v = *field(l, constants[i].at);

		if (v == EMBER_V8_ABSENT || !value_ok(constants[i].check, v)) {
			snprintf(why, size, "its V8 %u.%u %s v8dbg_%s", l->version[0],
			         l->version[1],
			         v == EMBER_V8_ABSENT ? "does not describe" : "gives an impossible",
			         constants[i].name);
			return -ENOTSUP;
		}
	}
	/* The walker keeps it in a byte; a BytecodeArray's header is longer than its map and
	 * length. */
	if (l->bytecode_data < 16 || l->bytecode_data > 255) {
		snprintf(why, size, "its V8 %u.%u gives an impossible v8dbg_%s", l->version[0],
		         l->version[1], "class_BytecodeArray__data__uintptr_t");
		return -ENOTSUP;
	}
	/* Node builds V8 without pointer compression: a Smi is the upper half of a word. */
	if (l->smi_shift_size != 31 || l->heap_object_tag_mask != 3) {
		snprintf(why, size, "its V8 %u.%u compresses pointers", l->version[0],
		         l->version[1]);
		return -ENOTSUP;
	}
	return 0;
}

/* Whether [vaddr, + len) lies in a loadable segment's zero-filled part (.bss). */
static bool in_bss(const struct ember_elf_image *f, uint64_t vaddr, size_t len)
{
	for (size_t i = 0; i < f->nloads; i++) {
		const GElf_Phdr *p = &f->loads[i];

		if (vaddr >= p->p_vaddr + p->p_filesz && vaddr <= p->p_vaddr + p->p_memsz &&
		    p->p_vaddr + p->p_memsz - vaddr >= len)
			return true;
	}
	return false;
}

/* A 4-byte constant at the symbol sym: its value, or false. A constant 0 is in .bss. */
static bool read_int(const struct ember_elf_image *f, const struct ember_elf_sym *sym, int32_t *out)
{
	if (!sym->addr || (sym->type != STT_OBJECT && sym->type != STT_NOTYPE))
		return false;
	if (in_bss(f, sym->addr, sizeof(*out))) {
		*out = 0;
		return true;
	}
	return !ember_elf_image_read(f, sym->addr, out, sizeof(*out));
}

/* The symbols besides the constants, in this order. */
enum {
	SYM_MAJOR,
	SYM_MINOR,
	SYM_BUILD,
	SYM_BLOB_DATA,
	SYM_BLOB,
	SYM_BLOB_SIZE,
	SYM_CURRENT_BLOB,
	SYM_SNAPSHOT_BLOB,
	SYM_BYTECODE_SIZES,
	SYM_DISPATCH_TABLE_ADDRESS,
	NEXTRA
};
static const char *const extra[NEXTRA] = {
    "_ZN2v88internal7Version6major_E",
    "_ZN2v88internal7Version6minor_E",
    "_ZN2v88internal7Version6build_E",
    "v8_Default_embedded_blob_code_data_",
    "v8_Default_embedded_blob_code_",
    "v8_Default_embedded_blob_code_size_",
    "_ZN2v88internal12_GLOBAL__N_127current_embedded_blob_code_E",
    "_ZN2v88internal8Snapshot19DefaultSnapshotBlobEv",
    "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE",
    "_ZN2v88internal17ExternalReference25js_dispatch_table_addressEv",
};

/* A build without the builtins' symbols (Debian's libnode keeps only its dynamic ones): the
 * builtins are the first wide stretch of code without unwind tables right after V8's
 * DefaultSnapshotBlob, which the linker places before them. */
#define BLOB_AFTER_SNAPSHOT (64u << 10) /* bytes after it the stretch starts within */
#define BLOB_MIN_SIZE       (512u << 10)

/* The embedded builtins: V8 9 points v8_Default_embedded_blob_code_ at its data, later ones
 * put the code there. */
static bool find_blob(const struct ember_elf_image *f, const struct ember_elf_sym *syms,
                      struct ember_v8_elf *out)
{
	const struct ember_elf_sym *code =
	    syms[SYM_BLOB_DATA].addr ? &syms[SYM_BLOB_DATA] : &syms[SYM_BLOB];
	const struct ember_elf_sym *cur = &syms[SYM_CURRENT_BLOB];
	uint64_t start, end;
	int32_t size;

	if (!code->addr) {
		/* No symbols: the stretch after the snapshot, and no copy known. */
		if (!syms[SYM_SNAPSHOT_BLOB].addr ||
		    ember_elf_fde_gap(f, syms[SYM_SNAPSHOT_BLOB].addr, BLOB_AFTER_SNAPSHOT,
		                      BLOB_MIN_SIZE, &start, &end) ||
		    !ember_elf_image_in_segment(f, start, PF_X) ||
		    !ember_elf_image_in_segment(f, end - 1, PF_X))
			return false;
		out->blob_code = start;
		out->blob_code_size = end - start;
		out->current_blob_var = 0;
		return true;
	}
	if (!ember_elf_image_in_segment(f, code->addr, PF_X) ||
	    !read_int(f, &syms[SYM_BLOB_SIZE], &size) || size <= 0 ||
	    !ember_elf_image_in_segment(f, code->addr + (uint64_t)size - 1, PF_X) || !cur->addr ||
	    cur->size != 8 || !ember_elf_image_in_segment(f, cur->addr, PF_W))
		return false;
	out->blob_code = code->addr;
	out->blob_code_size = (uint64_t)size;
	out->current_blob_var = cur->addr;
	return true;
}

/* The bytecodes' sizes (uint8_t[3][N], N the bytecodes): kept when N fits a byte's opcodes. */
static void bytecode_sizes(const struct ember_elf_image *f, const struct ember_elf_sym *sym,
                           struct ember_v8_layout *l)
{
	uint64_t n = sym->size / 3;

	if (!sym->addr || sym->size % 3 || !n || n > 256)
		return;
	for (int scale = 0; scale < 3; scale++)
		if (ember_elf_image_read(f, sym->addr + (uint64_t)scale * n,
		                         l->bytecode_sizes[scale], n))
			return;
	l->nbytecodes = (uint16_t)n;
}

/*
 * V8 13's dispatch table, from the code of ExternalReference::js_dispatch_table_address:
 * `mov isolate_group(%rip), %rax; mov off(%rax), %rax`, the group's variable and the
 * table's base's offset in the group. False for other code.
 */
static bool dispatch_table(const struct ember_elf_image *f, const struct ember_elf_sym *sym,
                           struct ember_v8_elf *out)
{
	uint8_t c[14];

	if (!sym->addr || ember_elf_image_read(f, sym->addr, c, sizeof(c)) || c[0] != 0x48 ||
	    c[1] != 0x8b || c[2] != 0x05 || c[7] != 0x48 || c[8] != 0x8b ||
	    (c[9] != 0x80 && c[9] != 0x40))
		return false;
	out->isolate_group_var = sym->addr + 7 + (int64_t)ember_elf_disp32(c + 3);
	out->dispatch_table_offset = c[9] == 0x40 ? c[10] : (uint32_t)ember_elf_disp32(c + 10);
	return ember_elf_image_in_segment(f, out->isolate_group_var, PF_W) &&
	       out->dispatch_table_offset < (1u << 20);
}

static int read_elf(Elf *elf, void *facts)
{
	struct ember_v8_elf *out = facts;
	static const char prefix[] = "v8dbg_";
	char full[2 * NCONSTANTS][96];
	const char *names[2 * NCONSTANTS + NEXTRA];
	struct ember_elf_sym syms[2 * NCONSTANTS + NEXTRA];
	const struct ember_elf_sym *x = syms + 2 * NCONSTANTS;
	struct ember_v8_layout *l = &out->layout;
	struct ember_elf_image f;
	int32_t version[3];
	int err;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < NCONSTANTS; i++) {
		snprintf(full[2 * i], sizeof(full[0]), "%s%s", prefix, constants[i].name);
		/* No other name: one no symbol has. */
		snprintf(full[2 * i + 1], sizeof(full[0]), "%s%s",
		         constants[i].alt[0] ? prefix : "", constants[i].alt);
		names[2 * i] = full[2 * i];
		names[2 * i + 1] = full[2 * i + 1];
	}
	memcpy(names + 2 * NCONSTANTS, extra, sizeof(extra));
	err = ember_elf_image_start(elf, &f, out->segs, &out->nsegs, names,
	                            sizeof(names) / sizeof(names[0]), syms);
	if (err)
		return err;
	/* The SharedFunctionInfo's type is what every V8 exports: that makes the file a V8. */
	if (!syms[2 * (offsetof(struct ember_v8_layout, type_sfi) / sizeof(int32_t))].addr)
		return 0;
	out->kind = EMBER_V8_ELF_UNSUPPORTED;
	for (size_t i = 0; i < NCONSTANTS; i++) {
		int32_t *v = field(l, constants[i].at);

		if (!read_int(&f, &syms[2 * i], v) && !read_int(&f, &syms[2 * i + 1], v))
			*v = EMBER_V8_ABSENT;
	}
	for (size_t i = 0; i < 3; i++)
		if (!read_int(&f, &x[SYM_MAJOR + i], &version[i]) || version[i] < 0 ||
		    version[i] > 0xffff) {
			snprintf(out->why, sizeof(out->why), "its V8 does not say its version");
			return 0;
		}
	for (size_t i = 0; i < 3; i++)
		l->version[i] = (uint16_t)version[i];
	if (ember_v8_layout_finish(l, out->why, sizeof(out->why)))
		return 0;
	bytecode_sizes(&f, &x[SYM_BYTECODE_SIZES], l);
	if (l->version[0] >= 13 && !dispatch_table(&f, &x[SYM_DISPATCH_TABLE_ADDRESS], out)) {
		snprintf(out->why, sizeof(out->why),
		         "its V8 %u.%u keeps functions' code in a dispatch table ember cannot find",
		         l->version[0], l->version[1]);
		return 0;
	}
	if (!find_blob(&f, x, out)) {
		snprintf(out->why, sizeof(out->why),
		         "its V8 %u.%u has neither symbols for its embedded builtins nor a stretch "
		         "of code without unwind tables after its snapshot",
		         l->version[0], l->version[1]);
		return 0;
	}
	out->kind = EMBER_V8_ELF_V8;
	return 0;
}

int ember_v8_elf_read(int fd, struct ember_v8_elf *out)
{
	return ember_elf_read_fd(fd, read_elf, out);
}

int ember_v8_elf_read_mem(const void *image, size_t len, struct ember_v8_elf *out)
{
	return ember_elf_read_memory(image, len, read_elf, out);
}
