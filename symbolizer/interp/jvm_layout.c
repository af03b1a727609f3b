// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/jvm_layout.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "shared/bytes.h"
#include "shared/err.h"

#define MAX_CODE_CACHE (4ull << 30) /* bytes of one heap (ReservedCodeCacheSize: 2 GiB at most) */

enum table { STRUCTS, TYPES, INTS };

/* How a value must look: a static's address, an offset or size within a class, an int. */
enum kind { STATIC, OFFSET, INT };

/* What is asked of the VM's description, one pair per row. Rows for the same member are
 * alternatives, newest name first: the first the VM lists counts. Rows marked optional
 * stand for fields some releases lack (the member stays EMBER_JVM_ABSENT). */
struct wanted {
	uint16_t member; /* offsetof(struct ember_jvm_vm, ...) */
	uint8_t table, kind;
	bool optional;
	const char *type, *field;
};

#define M(m) offsetof(struct ember_jvm_vm, m)
static const struct wanted wanted[] = {
    {M(code_cache_heaps), STRUCTS, STATIC, false, "CodeCache", "_heaps"},
    {M(code_cache_low), STRUCTS, STATIC, false, "CodeCache", "_low_bound"},
    {M(code_cache_high), STRUCTS, STATIC, false, "CodeCache", "_high_bound"},
    {M(vm_release), STRUCTS, STATIC, false, "Abstract_VM_Version", "_s_vm_release"},
    {M(vm_major), STRUCTS, STATIC, false, "Abstract_VM_Version", "_vm_major_version"},
    {M(vm_minor), STRUCTS, STATIC, false, "Abstract_VM_Version", "_vm_minor_version"},
    {M(vm_security), STRUCTS, STATIC, false, "Abstract_VM_Version", "_vm_security_version"},
    {M(vm_build), STRUCTS, STATIC, false, "Abstract_VM_Version", "_vm_build_number"},
    {M(array_len), STRUCTS, OFFSET, false, "GrowableArrayBase", "_len"},
    {M(array_len), STRUCTS, OFFSET, false, "GenericGrowableArray", "_len"},
    {M(array_data), STRUCTS, OFFSET, false, "GrowableArray<int>", "_data"},
    {M(heap_memory), STRUCTS, OFFSET, false, "CodeHeap", "_memory"},
    {M(heap_segmap), STRUCTS, OFFSET, false, "CodeHeap", "_segmap"},
    {M(heap_log2_segment), STRUCTS, OFFSET, false, "CodeHeap", "_log2_segment_size"},
    {M(space_low), STRUCTS, OFFSET, false, "VirtualSpace", "_low_boundary"},
    {M(space_high), STRUCTS, OFFSET, false, "VirtualSpace", "_high_boundary"},
    {M(heap_block_size), TYPES, OFFSET, false, "HeapBlock", NULL},
    {M(blob_size_of), TYPES, OFFSET, false, "CodeBlob", NULL},
    {M(blob_name), STRUCTS, OFFSET, false, "CodeBlob", "_name"},
    {M(blob_kind), STRUCTS, OFFSET, true, "CodeBlob", "_kind"},
    {M(blob_size), STRUCTS, OFFSET, false, "CodeBlob", "_size"},
    {M(blob_frame_complete), STRUCTS, OFFSET, false, "CodeBlob", "_frame_complete_offset"},
    {M(blob_frame_size), STRUCTS, OFFSET, false, "CodeBlob", "_frame_size"},
    {M(blob_code_begin), STRUCTS, OFFSET, true, "CodeBlob", "_code_begin"},
    {M(blob_code_end), STRUCTS, OFFSET, true, "CodeBlob", "_code_end"},
    {M(blob_code_offset), STRUCTS, OFFSET, true, "CodeBlob", "_code_offset"},
    {M(blob_data_offset), STRUCTS, OFFSET, false, "CodeBlob", "_data_offset"},
    {M(blob_mutable_data), STRUCTS, OFFSET, true, "CodeBlob", "_mutable_data"},
    {M(blob_mutable_data_size), STRUCTS, OFFSET, true, "CodeBlob", "_mutable_data_size"},
    {M(blob_relocation_size), STRUCTS, OFFSET, true, "CodeBlob", "_relocation_size"},
    {M(nm_size_of), TYPES, OFFSET, false, "nmethod", NULL},
    {M(nm_compile_id), STRUCTS, OFFSET, false, "nmethod", "_compile_id"},
    {M(nm_method), STRUCTS, OFFSET, false, "nmethod", "_method"},
    {M(nm_method), STRUCTS, OFFSET, false, "CompiledMethod", "_method"},
    {M(nm_orig_pc_offset), STRUCTS, OFFSET, false, "nmethod", "_orig_pc_offset"},
    {M(nm_scopes_pcs_offset), STRUCTS, OFFSET, false, "nmethod", "_scopes_pcs_offset"},
    {M(nm_scopes_data), STRUCTS, OFFSET, false, "nmethod", "_scopes_data_offset"},
    {M(nm_scopes_data), STRUCTS, OFFSET, false, "CompiledMethod", "_scopes_data_begin"},
    {M(nm_dependencies_offset), STRUCTS, OFFSET, true, "nmethod", "_dependencies_offset"},
    {M(nm_immutable_data), STRUCTS, OFFSET, true, "nmethod", "_immutable_data"},
    {M(nm_immutable_data_size), STRUCTS, OFFSET, true, "nmethod", "_immutable_data_size"},
    {M(nm_metadata_offset), STRUCTS, OFFSET, true, "nmethod", "_metadata_offset"},
    {M(nm_deopt_offset), STRUCTS, OFFSET, true, "nmethod", "_deopt_handler_entry_offset"},
    {M(nm_deopt_offset), STRUCTS, OFFSET, true, "nmethod", "_deopt_handler_offset"},
    {M(nm_deopt_begin), STRUCTS, OFFSET, true, "CompiledMethod", "_deopt_handler_begin"},
    {M(nm_deopt_begin), STRUCTS, OFFSET, true, "nmethod", "_deopt_handler_begin"},
    {M(method_const_method), STRUCTS, OFFSET, false, "Method", "_constMethod"},
    {M(cm_size_of), TYPES, OFFSET, false, "ConstMethod", NULL},
    {M(cm_constants), STRUCTS, OFFSET, false, "ConstMethod", "_constants"},
    {M(cm_flags), STRUCTS, OFFSET, false, "ConstMethod", "_flags._flags"},
    {M(cm_flags), STRUCTS, OFFSET, false, "ConstMethod", "_flags"},
    {M(cm_code_size), STRUCTS, OFFSET, false, "ConstMethod", "_code_size"},
    {M(cm_name_index), STRUCTS, OFFSET, false, "ConstMethod", "_name_index"},
    {M(cm_signature_index), STRUCTS, OFFSET, false, "ConstMethod", "_signature_index"},
    {M(cm_const_method_size), STRUCTS, OFFSET, false, "ConstMethod", "_constMethod_size"},
    {M(cp_size_of), TYPES, OFFSET, false, "ConstantPool", NULL},
    {M(cp_pool_holder), STRUCTS, OFFSET, false, "ConstantPool", "_pool_holder"},
    {M(cp_source_file_name_index), STRUCTS, OFFSET, false, "ConstantPool",
     "_source_file_name_index"},
    {M(cp_length), STRUCTS, OFFSET, false, "ConstantPool", "_length"},
    {M(klass_name), STRUCTS, OFFSET, false, "Klass", "_name"},
    {M(symbol_length), STRUCTS, OFFSET, false, "Symbol", "_length"},
    {M(symbol_body), STRUCTS, OFFSET, false, "Symbol", "_body"},
    {M(pc_size_of), TYPES, OFFSET, false, "PcDesc", NULL},
    {M(pc_pc_offset), STRUCTS, OFFSET, false, "PcDesc", "_pc_offset"},
    {M(pc_scope_decode_offset), STRUCTS, OFFSET, false, "PcDesc", "_scope_decode_offset"},
    {M(pc_flags), STRUCTS, OFFSET, false, "PcDesc", "_flags"},
    {M(frame_sender_sp), INTS, INT, false, "frame::interpreter_frame_sender_sp_offset", NULL},
};
#undef M
#define NWANTED (sizeof(wanted) / sizeof(wanted[0]))

/* Sets the reason a VM is refused. */
static void say(char *why, const char *reason)
{
	snprintf(why, EMBER_JVM_WHY, "%s", reason);
}

static uint64_t *member(struct ember_jvm_vm *vm, const struct wanted *w)
{
	return (uint64_t *)((char *)vm + w->member);
}

/* The three tables' answers into the members: 0, or -ENOTSUP naming what is missing. A
 * member's value can be anything an int constant is (-1 included): whether it was found
 * is kept apart. */
static int take_values(struct ember_jvm_vm *vm, const struct ember_jvm_found *found, char *why)
{
	bool have[sizeof(*vm) / 8] = {false};

	for (size_t i = 0; i < NWANTED; i++)
		*member(vm, &wanted[i]) = EMBER_JVM_ABSENT;
	for (size_t i = 0; i < NWANTED; i++) {
		const struct wanted *w = &wanted[i];
		const struct ember_jvm_found *f = &found[i];

		if (!f->found || have[w->member / 8])
			continue;
		if (w->kind == STATIC
		        ? !f->is_address || !f->value || f->value >= EMBER_JVM_USER_LIMIT
		    : w->kind == OFFSET
		        ? f->is_address || f->value >= EMBER_JVM_MAX_CLASS
		        : f->is_address || (int64_t)f->value < -64 || (int64_t)f->value > 64) {
			snprintf(why, EMBER_JVM_WHY, "%s%s%s is out of bounds", w->type,
			         w->field ? "::" : "", w->field ? w->field : "");
			return -ENOTSUP;
		}
		*member(vm, w) = f->value;
		have[w->member / 8] = true;
	}
	for (size_t i = 0; i < NWANTED; i++)
		if (!wanted[i].optional && !have[wanted[i].member / 8]) {
			snprintf(why, EMBER_JVM_WHY, "it does not describe %s%s%s", wanted[i].type,
			         wanted[i].field ? "::" : "",
			         wanted[i].field ? wanted[i].field : "");
			return -ENOTSUP;
		}
	/* Code bounds are either pointers (up to JDK 22) or offsets (JDK 23 on). */
	if ((vm->blob_code_begin == EMBER_JVM_ABSENT || vm->blob_code_end == EMBER_JVM_ABSENT) &&
	    vm->blob_code_offset == EMBER_JVM_ABSENT) {
		say(why, "it describes neither CodeBlob::_code_begin nor CodeBlob::_code_offset");
		return -ENOTSUP;
	}
	if (vm->nm_deopt_begin == EMBER_JVM_ABSENT && vm->nm_deopt_offset == EMBER_JVM_ABSENT) {
		say(why, "it describes no deopt handler of nmethod");
		return -ENOTSUP;
	}
	/* Debug information: its end (JDK 17: the dependencies; 23 on: the immutable data). */
	if (vm->nm_dependencies_offset == EMBER_JVM_ABSENT &&
	    vm->nm_immutable_data_size == EMBER_JVM_ABSENT) {
		say(why,
		    "it describes neither nmethod::_dependencies_offset nor its immutable data");
		return -ENOTSUP;
	}
	if (vm->heap_block_size == 0 || vm->heap_block_size > 64) {
		say(why, "its HeapBlock size is out of bounds");
		return -ENOTSUP;
	}
	return 0;
}

/* Reads the three tables and asks each for its rows of wanted. */
static int read_tables(const struct ember_jvm_elf *elf, uint64_t bias, ember_jvm_read_fn read,
                       void *ctx, struct ember_jvm_found *found)
{
	const struct ember_jvm_table_vars *vars[3] = {&elf->structs, &elf->types, &elf->ints};
	struct ember_jvm_want want[NWANTED];
	struct ember_jvm_found part[NWANTED];

	memset(found, 0, NWANTED * sizeof(*found));
	for (int t = STRUCTS; t <= INTS; t++) {
		struct ember_jvm_table_vars at = ember_jvm_vars_at(vars[t], bias);
		struct ember_jvm_table table;
		size_t n = 0, k = 0;
		int err = ember_jvm_table_locate(&at, t == INTS ? 4 : 8, read, ctx, &table);

		for (size_t i = 0; i < NWANTED; i++)
			if (wanted[i].table == t)
				want[n++] =
				    (struct ember_jvm_want){wanted[i].type, wanted[i].field};
		if (!err)
			err = ember_jvm_table_read(&table, read, ctx, want, n, part);
		if (err)
			return err;
		for (size_t i = 0; i < NWANTED; i++)
			if (wanted[i].table == t)
				found[i] = part[k++];
	}
	return 0;
}

static int read_le(ember_jvm_read_fn read, void *ctx, uint64_t addr, unsigned int width,
                   uint64_t *out)
{
	uint8_t b[8];

	if (!addr || addr >= EMBER_JVM_USER_LIMIT || read(ctx, addr, b, width))
		return -EFAULT;
	*out = ember_le_in(b, width, 0, width);
	return 0;
}

static int read_version(struct ember_jvm_vm *vm, ember_jvm_read_fn read, void *ctx, char *why)
{
	const uint64_t at[4] = {vm->vm_major, vm->vm_minor, vm->vm_security, vm->vm_build};
	uint64_t v, release;
	int err;

	for (int i = 0; i < 4; i++) {
		err = read_le(read, ctx, at[i], 4, &v);
		if (err)
			return err;
		vm->version[i] = (unsigned int)v;
	}
	if (vm->version[0] > 1000) {
		say(why, "its version is out of bounds");
		return -ENOTSUP;
	}
	if (!vm->version[0])
		return -EAGAIN; /* set while the VM starts */
	if (vm->version[0] < EMBER_JVM_OLDEST) {
		say(why, "a release older than JDK 17");
		return -ENOTSUP;
	}
	vm->unsigned5_x = vm->version[0] >= 20; /* JDK-8292758 left byte 0 out */
	/* The release string is for logs: a VM without one is still read. */
	memset(vm->release, 0, sizeof(vm->release));
	if (!read_le(read, ctx, vm->vm_release, 8, &release) && release &&
	    !read(ctx, release, vm->release, sizeof(vm->release) - 1)) {
		for (size_t i = 0; vm->release[i]; i++)
			if (vm->release[i] < 0x20 || vm->release[i] > 0x7e)
				vm->release[i] = '?';
	} else {
		vm->release[0] = '\0';
	}
	return 0;
}

/* One heap, at heap: 0, -EFAULT, or -ENOTSUP for a range no code heap has. */
static int read_heap(const struct ember_jvm_vm *vm, ember_jvm_read_fn read, void *ctx,
                     uint64_t heap, struct ember_jvm_heap *out)
{
	uint64_t log2;
	int err = read_le(read, ctx, heap + vm->heap_memory + vm->space_low, 8, &out->low);

	if (!err)
		err = read_le(read, ctx, heap + vm->heap_memory + vm->space_high, 8, &out->high);
	if (!err)
		err = read_le(read, ctx, heap + vm->heap_segmap + vm->space_low, 8, &out->segmap);
	if (!err)
		err = read_le(read, ctx, heap + vm->heap_log2_segment, 4, &log2);
	if (err)
		return err;
	out->log2_segment = (uint32_t)log2;
	if (out->low >= out->high || out->high > EMBER_JVM_USER_LIMIT ||
	    out->high - out->low > MAX_CODE_CACHE || (out->low | out->high) % 4096 ||
	    !out->segmap || out->segmap >= EMBER_JVM_USER_LIMIT || log2 < 4 || log2 > 16)
		return -ENOTSUP;
	return 0;
}

static int read_heaps(struct ember_jvm_vm *vm, ember_jvm_read_fn read, void *ctx, char *why)
{
	uint64_t array, len, data, heap;
	int err = read_le(read, ctx, vm->code_cache_heaps, 8, &array);

	if (!err && !array)
		return -EAGAIN; /* made while the VM starts */
	if (!err)
		err = read_le(read, ctx, array + vm->array_len, 4, &len);
	if (!err)
		err = read_le(read, ctx, array + vm->array_data, 8, &data);
	if (err)
		return err;
	if (!len)
		return -EAGAIN;
	if (len > EMBER_JVM_MAX_HEAPS) {
		say(why, "more code heaps than HotSpot makes");
		return -ENOTSUP;
	}
	vm->nheaps = 0;
	for (uint32_t i = 0; i < len; i++) {
		err = read_le(read, ctx, data + 8ull * i, 8, &heap);
		if (!err)
			err = read_heap(vm, read, ctx, heap, &vm->heaps[i]);
		if (err) {
			say(why, "a code heap out of bounds");
			return err;
		}
		/* Ordered by address, none overlapping: the walker's lookup relies on it. */
		for (uint32_t j = i; j > 0 && vm->heaps[j].low < vm->heaps[j - 1].low; j--) {
			struct ember_jvm_heap t = vm->heaps[j];

			vm->heaps[j] = vm->heaps[j - 1];
			vm->heaps[j - 1] = t;
		}
		vm->nheaps = i + 1;
	}
	for (uint32_t i = 1; i < vm->nheaps; i++)
		if (vm->heaps[i].low < vm->heaps[i - 1].high) {
			say(why, "code heaps that overlap");
			return -ENOTSUP;
		}
	return 0;
}

int ember_jvm_vm_read(const struct ember_jvm_elf *elf, uint64_t bias, ember_jvm_read_fn read,
                      void *ctx, struct ember_jvm_vm *out, char why[EMBER_JVM_WHY])
{
	struct ember_jvm_found found[NWANTED];
	int err;

	memset(out, 0, sizeof(*out));
	why[0] = '\0';
	if (elf->kind != EMBER_JVM_ELF_HOTSPOT)
		return -EINVAL;
	err = read_tables(elf, bias, read, ctx, found);
	if (err == -EBADMSG || err == -E2BIG) {
		say(why, "its self-description tables are out of bounds");
		return -ENOTSUP;
	}
	if (!err)
		err = take_values(out, found, why);
	if (!err)
		err = read_version(out, read, ctx, why);
	if (!err)
		err = read_heaps(out, read, ctx, why);
	if (err == -ENOTSUP && !why[0])
		say(why, "a code heap out of bounds");
	return err;
}
