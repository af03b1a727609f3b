// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/jvm_nmethod.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shared/bytes.h"
#include "symbolizer/interp/jvm_lines.h"

#define WINDOW 512u /* bytes of an nmethod read: JDK 17's is 352, JDK 25's 224 */

/* Where the debug information lies: [start, end) each, in the process. */
struct where {
	uint64_t pcs[2], scopes[2], metadata[2];
};

static uint64_t at(const uint8_t *w, uint64_t off, unsigned int width)
{
	return off == EMBER_JVM_ABSENT ? 0 : ember_le_in(w, WINDOW, off, width);
}

/* A signed 32-bit field, as an offset added to base. */
static uint64_t plus_int(uint64_t base, const uint8_t *w, uint64_t off)
{
	return base + (uint64_t)(int64_t)(int32_t)(uint32_t)at(w, off, 4);
}

/* JDK 17 to 22: all in the code cache blob, the scopes data by its own pointer. */
static void where_in_blob(const struct ember_jvm_vm *vm, uint64_t blob, const uint8_t *w,
                          struct where *d)
{
	d->pcs[0] = plus_int(blob, w, vm->nm_scopes_pcs_offset);
	d->pcs[1] = plus_int(blob, w, vm->nm_dependencies_offset);
	d->scopes[0] = at(w, vm->nm_scopes_data, 8);
	d->scopes[1] = d->pcs[0];
	d->metadata[0] = plus_int(blob, w, vm->nm_metadata_offset);
	d->metadata[1] = d->scopes[0];
}

/* JDK 23 on: PcDescs then scopes in the immutable data; JDK 25 on, the metadata after the
 * relocations in the mutable data. */
static void where_apart(const struct ember_jvm_vm *vm, const uint8_t *w, struct where *d)
{
	uint64_t imm = at(w, vm->nm_immutable_data, 8), mut;

	d->pcs[0] = plus_int(imm, w, vm->nm_scopes_pcs_offset);
	d->pcs[1] = d->scopes[0] = plus_int(imm, w, vm->nm_scopes_data);
	d->scopes[1] = plus_int(imm, w, vm->nm_immutable_data_size);
	if (vm->blob_mutable_data == EMBER_JVM_ABSENT ||
	    vm->blob_relocation_size == EMBER_JVM_ABSENT ||
	    vm->blob_mutable_data_size == EMBER_JVM_ABSENT)
		return; /* JDK 23, 24: no metadata */
	mut = at(w, vm->blob_mutable_data, 8);
	d->metadata[0] = plus_int(mut, w, vm->blob_relocation_size);
	d->metadata[1] = plus_int(mut, w, vm->blob_mutable_data_size);
}

/* Copies [r[0], r[1]) into *out (*len bytes): 0, or nothing copied for a range that is empty,
 * reversed, too large or unreadable (-ENOMEM only is an error). */
static int copy_range(ember_jvm_read_fn read, void *ctx, const uint64_t r[2], uint8_t **out,
                      size_t *len)
{
	uint8_t *b;

	*out = NULL;
	*len = 0;
	if (!r[0] || r[1] <= r[0] || r[1] > EMBER_JVM_USER_LIMIT ||
	    r[1] - r[0] > EMBER_JVM_MAX_DEBUG)
		return 0;
	b = malloc((size_t)(r[1] - r[0]));
	if (!b)
		return -ENOMEM;
	if (read(ctx, r[0], b, (size_t)(r[1] - r[0]))) {
		free(b);
		return 0;
	}
	*out = b;
	*len = (size_t)(r[1] - r[0]);
	return 0;
}

static int read_debug(const struct ember_jvm_vm *vm, ember_jvm_read_fn read, void *ctx,
                      uint64_t blob, const uint8_t *w, struct ember_jvm_nmethod *out)
{
	struct where d = {{0}, {0}, {0}};
	uint8_t *meta;
	size_t len;
	int err;

	if (vm->nm_immutable_data != EMBER_JVM_ABSENT)
		where_apart(vm, w, &d);
	else
		where_in_blob(vm, blob, w, &d);
	err = copy_range(read, ctx, d.pcs, &out->pcs, &len);
	out->npcs = out->pc_size ? len / out->pc_size : 0;
	if (!err)
		err = copy_range(read, ctx, d.scopes, &out->scopes, &out->scopes_len);
	if (!err)
		err = copy_range(read, ctx, d.metadata, &meta, &len);
	if (err)
		return err;
	out->metadata = (uint64_t *)meta; /* malloc's alignment holds 8-byte words */
	out->nmetadata = len / 8;
	return 0;
}

int ember_jvm_nmethod_read(const struct ember_jvm_vm *vm, ember_jvm_read_fn read, void *ctx,
                           uint64_t blob, struct ember_jvm_nmethod *out)
{
	uint8_t w[WINDOW];
	int err;

	memset(out, 0, sizeof(*out));
	if (vm->nm_size_of > WINDOW || vm->pc_size_of < 8 || vm->pc_size_of > 64)
		return -EINVAL;
	if (!blob || blob >= EMBER_JVM_USER_LIMIT || read(ctx, blob, w, (size_t)vm->nm_size_of))
		return -EFAULT;
	out->method = at(w, vm->nm_method, 8);
	out->compile_id = (uint32_t)at(w, vm->nm_compile_id, 4);
	if (vm->blob_code_offset != EMBER_JVM_ABSENT) {
		out->code_begin = plus_int(blob, w, vm->blob_code_offset);
		out->code_end = plus_int(blob, w, vm->blob_data_offset);
	} else {
		out->code_begin = at(w, vm->blob_code_begin, 8);
		out->code_end = at(w, vm->blob_code_end, 8);
	}
	if (!out->method || out->code_begin >= out->code_end ||
	    out->code_end > EMBER_JVM_USER_LIMIT)
		return -EBADMSG;
	out->x = vm->unsigned5_x;
	out->pc_size = (uint32_t)vm->pc_size_of;
	out->pc_offset = (uint32_t)vm->pc_pc_offset;
	out->pc_scope = (uint32_t)vm->pc_scope_decode_offset;
	err = read_debug(vm, read, ctx, blob, w, out);
	if (err)
		ember_jvm_nmethod_free(out);
	return err;
}

static int32_t pc_field(const struct ember_jvm_nmethod *nm, size_t i, uint32_t off)
{
	return (int32_t)(uint32_t)ember_le_in(nm->pcs + i * nm->pc_size, nm->pc_size, off, 4);
}

/* The first PcDesc whose pc offset is at least pc (they are sorted): its index, or npcs. */
static size_t pc_desc_at(const struct ember_jvm_nmethod *nm, uint64_t pc)
{
	size_t lo = 0, hi = nm->npcs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((int64_t)pc_field(nm, mid, nm->pc_offset) < (int64_t)pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The chain of scopes PcDesc i records into out (at most max), innermost first: how many;
 * -ENOENT (no scope there), -EBADMSG. */
static int chain_at(const struct ember_jvm_nmethod *nm, size_t i, struct ember_jvm_scope *out,
                    size_t max)
{
	int64_t offset = i < nm->npcs ? pc_field(nm, i, nm->pc_scope) : 0;
	size_t n = 0;

	if (offset <= 0)
		return -ENOENT; /* 0: DebugInformationRecorder's serialized null */
	while (offset > 0 && n < max && n < EMBER_JVM_MAX_SCOPES) {
		struct ember_jvm_stream s;
		uint32_t sender, index;

		if ((uint64_t)offset >= nm->scopes_len)
			return -EBADMSG;
		s = (struct ember_jvm_stream){nm->scopes + offset, nm->scopes + nm->scopes_len,
		                              nm->x, false};
		sender = ember_jvm_read_uint(&s);
		index = ember_jvm_read_uint(&s);
		/* The bci is written plus one (InvocationEntryBci, -1, is the entry). */
		out[n].bci = (int32_t)(ember_jvm_read_uint(&s) - 1u);
		if (s.bad || !index || index > nm->nmetadata || !nm->metadata[index - 1] ||
		    (int64_t)sender >= offset)
			return -EBADMSG;
		out[n++].method = nm->metadata[index - 1];
		offset = sender;
	}
	return (int)n;
}

int ember_jvm_nmethod_scopes(const struct ember_jvm_nmethod *nm, uint64_t pc,
                             struct ember_jvm_scope *out, size_t max)
{
	struct ember_jvm_scope before[EMBER_JVM_MAX_SCOPES], after[EMBER_JVM_MAX_SCOPES];
	size_t i = pc_desc_at(nm, pc), j = i, k = i, common = 0;
	int nb = -ENOENT, na = -ENOENT;

	if (i < nm->npcs && pc_field(nm, i, nm->pc_offset) == (int64_t)pc)
		return chain_at(nm, i, out, max); /* a call's return address: exact */
	/* Between two PcDescs (a pc the compiler recorded nothing at: a loop with no safepoint
	 * poll, or code inlined there): the chain of the next one, as HotSpot's own
	 * AsyncGetCallTrace takes it (nmethod::pc_desc_near). Code runs on into the next place
	 * the compiler recorded, in the same inlined method; the one before often ends another
	 * inlined method's code. (Measured: a handle() with three leaves inlined, a storm of
	 * recompilations: the next PcDesc named the running leaf in 100% of 5,100 samples, the
	 * one before in 62%, and what both record, handle() alone, lost the leaf.) */
	while (k < nm->npcs && k - i <= 16 &&
	       (na = chain_at(nm, k, after, EMBER_JVM_MAX_SCOPES)) == -ENOENT)
		k++;
	while (j-- > 0 && i - j <= 16 &&
	       (nb = chain_at(nm, j, before, EMBER_JVM_MAX_SCOPES)) == -ENOENT)
		;
	if (na == -EBADMSG || nb == -EBADMSG)
		return -EBADMSG;
	if (na < 0 && nb < 0)
		return -ENOENT;
	if (na < 0) { /* past the last one: the method compiled, at its last bci */
		out[0] = before[nb - 1];
		return max ? 1 : 0;
	}
	if (nb > 0) {
		while (common < (size_t)na && common < (size_t)nb &&
		       before[nb - 1 - common].method == after[na - 1 - common].method)
			common++;
		if (!common)
			return -EBADMSG; /* two methods compiled: the PcDescs are not one nmethod's
			                  */
	}
	/* An inlined method the next one records at its entry (no bci) has not started: its
	 * caller runs, at the call. */
	while ((size_t)na > common && na > 1 && after[0].bci < 0) {
		memmove(after, after + 1, (size_t)(na - 1) * sizeof(after[0]));
		na--;
	}
	/* The innermost at its entry still: the one before, in the same method, is nearer. */
	if (after[0].bci < 0 && (size_t)na <= common && before[nb - na].bci >= 0)
		after[0].bci = before[nb - na].bci;
	if ((size_t)na > max)
		na = (int)max; /* the innermost kept, as chain_at cuts */
	memcpy(out, after, (size_t)na * sizeof(out[0]));
	return na;
}

void ember_jvm_nmethod_free(struct ember_jvm_nmethod *nm)
{
	free(nm->pcs);
	free(nm->scopes);
	free(nm->metadata);
	memset(nm, 0, sizeof(*nm));
}
