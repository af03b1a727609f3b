/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A running HotSpot VM as the JVM reader and walker need it: its version,
 * its code heaps (where compiled code, the interpreter and the stubs are,
 * and the segment maps that lead from a pc to its code blob) and the
 * offsets of every field they read, all from the VM's own description
 * (jvm_structs.h) rather than from tables per release. JDK 17 and JDK 25
 * are what it is tested with; a release that renames what it needs is
 * refused with the name it lacks.
 *
 * Everything is read from the process and is hostile: each offset and size
 * is capped (EMBER_JVM_MAX_CLASS), heaps must be ordered, page-aligned user
 * ranges with a segment map, the counts are capped.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_JVM_LAYOUT_H
#define EMBER_SYMBOLIZER_INTERP_JVM_LAYOUT_H

#include <stdint.h>

#include "symbolizer/interp/jvm_elf.h"
#include "symbolizer/interp/jvm_structs.h"

#define EMBER_JVM_MAX_CLASS   (64u << 10)  /* bytes of a class or an offset in one */
#define EMBER_JVM_MAX_HEAPS   3u           /* non-nmethods, profiled, non-profiled */
#define EMBER_JVM_MAX_RELEASE 64u          /* bytes of the release string kept */
#define EMBER_JVM_OLDEST      17u          /* the oldest feature release read */
#define EMBER_JVM_WHY         160u         /* bytes of a refusal's reason */
#define EMBER_JVM_USER_LIMIT  (1ull << 47) /* no address the VM's structures have is this high */

/* One code heap: its reserved range and its segment map (one byte per segment). */
struct ember_jvm_heap {
	uint64_t low, high; /* [low, high) */
	uint64_t segmap;    /* the map's first byte */
	uint32_t log2_segment;
};

/*
 * Offsets (bytes into an object of the class named first), sizes, and the
 * statics' addresses. A field a release does not have is EMBER_JVM_ABSENT;
 * fields whose meaning changed say so.
 */
#define EMBER_JVM_ABSENT UINT64_MAX
struct ember_jvm_vm {
	unsigned int version[4];             /* feature, interim, update, build: 17, 0, 15, 6 */
	char release[EMBER_JVM_MAX_RELEASE]; /* "17.0.15+6-Debian-1deb12u1" */
	unsigned int unsigned5_x; /* bytes UNSIGNED5 leaves out: 1 from JDK 20 on (jvm_lines.h) */
	struct ember_jvm_heap heaps[EMBER_JVM_MAX_HEAPS];
	uint32_t nheaps;
	/* Statics: addresses in the process. */
	uint64_t code_cache_heaps; /* GrowableArray<CodeHeap *> * */
	uint64_t code_cache_low, code_cache_high, vm_release;
	uint64_t vm_major, vm_minor, vm_security, vm_build;
	/* GrowableArray<CodeHeap *>, CodeHeap, VirtualSpace, HeapBlock. */
	uint64_t array_len, array_data;
	uint64_t heap_memory, heap_segmap, heap_log2_segment;
	uint64_t space_low, space_high;
	uint64_t heap_block_size;
	/* CodeBlob: code_begin and code_end are pointers up to JDK 22, then code_offset and
	 * data_offset (int32 offsets from the blob); kind is JDK 23+'s blob kind, else ABSENT
	 * (then the name's first bytes say). */
	uint64_t blob_size_of, blob_name, blob_kind, blob_size;
	uint64_t blob_frame_complete, blob_frame_size;
	uint64_t blob_code_begin, blob_code_end, blob_code_offset, blob_data_offset;
	/* JDK 25 on: the metadata lies in the mutable data, after the relocations. */
	uint64_t blob_mutable_data, blob_mutable_data_size, blob_relocation_size;
	/* nmethod (CompiledMethod's fields up to JDK 22). scopes_data is a pointer
	 * (_scopes_data_begin) up to JDK 22, then an offset into the immutable data. */
	uint64_t nm_size_of, nm_compile_id, nm_method, nm_orig_pc_offset;
	uint64_t nm_scopes_pcs_offset, nm_scopes_data, nm_dependencies_offset;
	uint64_t nm_immutable_data, nm_immutable_data_size;
	uint64_t nm_metadata_offset; /* up to JDK 24: from the blob (17) or the code's end (23) */
	/* The deopt handler: a pointer up to JDK 22 (deopt_begin), then an int offset from the
	 * blob (deopt_offset); one of them is there. */
	uint64_t nm_deopt_begin, nm_deopt_offset;
	/* Method, ConstMethod, ConstantPool, Klass, Symbol, PcDesc. */
	uint64_t method_const_method;
	uint64_t cm_size_of, cm_constants, cm_flags, cm_code_size, cm_name_index,
	    cm_signature_index;
	uint64_t cm_const_method_size; /* int: the ConstMethod's size in words, tables included */
	uint64_t cp_size_of, cp_pool_holder, cp_source_file_name_index, cp_length;
	uint64_t klass_name;
	uint64_t symbol_length, symbol_body;
	uint64_t pc_size_of, pc_pc_offset, pc_scope_decode_offset, pc_flags;
	/* Interpreter frames: the sender's sp, in words from fp (int constant, negative). */
	int64_t frame_sender_sp;
};

/* Reads the VM of a process whose libjvm (elf) is loaded at bias: 0; -EAGAIN while the
 * VM is still starting (its tables or code heaps not set up yet); -ENOTSUP with the reason
 * in why for a VM ember does not read (older than EMBER_JVM_OLDEST, a field it needs
 * missing, a layout out of bounds); -EFAULT; -ENOMEM. */
int ember_jvm_vm_read(const struct ember_jvm_elf *elf, uint64_t bias, ember_jvm_read_fn read,
                      void *ctx, struct ember_jvm_vm *out, char why[EMBER_JVM_WHY]);

#endif
