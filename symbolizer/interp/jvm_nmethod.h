/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A compiled Java method (an nmethod) as a running HotSpot VM holds it, and
 * the inlining its debug information records: for a pc in its code, the
 * chain of (method, bytecode index) scopes from the innermost inlined
 * callee out to the method compiled. Read from the VM's memory with the
 * offsets of jvm_layout.h; the PcDescs, the scopes data and the metadata
 * (the Methods the scopes name, by index) are copied, so that frames are
 * named later without reading the process again.
 *
 * Where those lie moved between releases: in the code cache after the
 * code (JDK 17), in an immutable-data block (the PcDescs and scopes, JDK 23
 * on) and a mutable-data block after the relocations (the metadata, JDK 25
 * on). JDK 23 and 24 keep the metadata where no field describes its end:
 * their inlined frames are not named (the method compiled still is).
 *
 * The memory is hostile: each block is capped and must lie where the
 * layout says; a PcDesc's scope must lie in the scopes data, a chain must
 * go strictly outward (each sender's offset below its callee's) and ends
 * after EMBER_JVM_MAX_SCOPES.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_JVM_NMETHOD_H
#define EMBER_SYMBOLIZER_INTERP_JVM_NMETHOD_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/jvm_layout.h"

#define EMBER_JVM_MAX_DEBUG  (1u << 20) /* bytes of PcDescs, scopes or metadata copied */
#define EMBER_JVM_MAX_SCOPES 64u        /* scopes of one chain */

struct ember_jvm_nmethod {
	uint64_t method;                       /* the Method compiled */
	uint32_t compile_id;                   /* what the walker's cookie checks */
	uint64_t code_begin, code_end;         /* [begin, end) */
	unsigned int x;                        /* UNSIGNED5's left-out bytes (jvm_lines.h) */
	uint32_t pc_size, pc_offset, pc_scope; /* a PcDesc's size and fields (from the layout) */
	uint8_t *pcs;                          /* npcs PcDescs, by pc offset */
	size_t npcs;
	uint8_t *scopes; /* the scopes data */
	size_t scopes_len;
	uint64_t *metadata; /* metadata[i - 1] is index i's; 0 is none */
	size_t nmetadata;
};

/* One scope: a Method and the bytecode index in it (-1: its entry). */
struct ember_jvm_scope {
	uint64_t method;
	int32_t bci;
};

/* Reads the nmethod at blob: 0; -EFAULT, -EBADMSG (what it holds cannot be an nmethod),
 * -ENOMEM. Debug information that cannot be read leaves it without scopes, not refused. */
int ember_jvm_nmethod_read(const struct ember_jvm_vm *vm, ember_jvm_read_fn read, void *ctx,
                           uint64_t blob, struct ember_jvm_nmethod *out);

/*
 * The scopes at pc offset pc (from code_begin) into out (at most max), innermost first,
 * chosen as HotSpot chooses them (the PcDesc at pc, else the first after it): how many;
 * -ENOENT when no PcDesc there records a scope; -EBADMSG for debug information that does
 * not decode (a bad number, an offset outside the scopes, a chain that does not go
 * outward, a method index without metadata).
 */
int ember_jvm_nmethod_scopes(const struct ember_jvm_nmethod *nm, uint64_t pc,
                             struct ember_jvm_scope *out, size_t max);

void ember_jvm_nmethod_free(struct ember_jvm_nmethod *nm);

#endif
