// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/v8_code.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BYTE_ARRAY_DATA  16 /* a ByteArray's bytes, after its map and length */
#define INLINING_ENTRY   16 /* an InliningPosition: a SourcePosition, an int, padding */
#define WRAPPED_SFI      8  /* a SharedFunctionInfo's wrapper (V8 12) holds it here */
#define MAX_INSTRUCTIONS (64u << 20)
#define MAX_LITERALS     65536

static bool type_is(const struct ember_v8_heap *h, uint64_t tagged, int32_t want)
{
	uint32_t type;

	return !ember_v8_type(h, tagged, &type) && type == (uint32_t)want;
}

/* A strong reference from a weak slot (a weak one has bit 1 set too). */
static uint64_t strong(uint64_t v)
{
	return (v & 3) == 3 ? v & ~2ull : v;
}

/* The SharedFunctionInfo at v (tagged), or behind its wrapper: untagged, or 0. */
static uint64_t sfi_at(const struct ember_v8_heap *h, uint64_t v)
{
	uint64_t inner;

	v = strong(v);
	if (type_is(h, v, h->l->type_sfi))
		return v - 1;
	if (ember_v8_is_object(v) && !ember_v8_field(h, v, WRAPPED_SFI, &inner) &&
	    type_is(h, inner, h->l->type_sfi))
		return inner - 1;
	return 0;
}

/* Copies the bytes of the (Trusted)ByteArray at tagged, at most max: 0 or why not. */
static int byte_array(const struct ember_v8_heap *h, uint64_t tagged, uint32_t max, uint8_t **out,
                      uint32_t *len)
{
	const struct ember_v8_layout *l = h->l;
	uint32_t n;
	int err = ember_v8_array_length(h, tagged, (uint32_t)l->type_byte_array,
	                                (uint32_t)l->type_trusted_byte_array, max, &n);

	if (err)
		return err;
	*out = malloc(n ? n : 1);
	if (!*out)
		return -ENOMEM;
	if (n && h->read(h->ctx, tagged - 1 + BYTE_ARRAY_DATA, *out, n)) {
		free(*out);
		*out = NULL;
		return -EFAULT;
	}
	*len = n;
	return 0;
}

/* Entry i of the (Trusted/Weak)FixedArray at tagged of length n. */
static int array_at(const struct ember_v8_heap *h, uint64_t tagged, uint32_t n, uint32_t i,
                    uint64_t *out)
{
	if (i >= n)
		return -EINVAL;
	return ember_v8_field(h, tagged, h->l->fixed_array_data + (int32_t)(8 * i), out);
}

/* The function and inlined functions from the deoptimization data at deopt (tagged). */
static int read_deopt(const struct ember_v8_heap *h, uint64_t deopt, struct ember_v8_code *c)
{
	const struct ember_v8_layout *l = h->l;
	uint64_t v, literals, positions;
	uint32_t n, nliterals;
	uint8_t *bytes = NULL;
	uint32_t len = 0;
	int err;

	if (!ember_v8_is_object(deopt) || ember_v8_length(h, deopt, 4096, &n) ||
	    (uint32_t)l->deopt_inlining_index >= n)
		return 0; /* code without deoptimization data: no function known */
	if (array_at(h, deopt, n, (uint32_t)l->deopt_sfi_index, &v))
		return -EFAULT;
	c->sfi = sfi_at(h, v);
	if (array_at(h, deopt, n, (uint32_t)l->deopt_literals_index, &literals) ||
	    array_at(h, deopt, n, (uint32_t)l->deopt_inlining_index, &positions))
		return -EFAULT;
	if (!ember_v8_is_object(positions))
		return 0;
	err = byte_array(h, positions, EMBER_V8_MAX_INLINED * INLINING_ENTRY, &bytes, &len);
	if (err == -EINVAL)
		return 0; /* more inlining than kept: the function alone */
	if (err)
		return err;
	/* The deoptimization data and its literals are a different one of V8's fixed array
	 * kinds in each version: their length is where every kind keeps it. */
	err = ember_v8_length(h, literals, MAX_LITERALS, &nliterals);
	for (uint32_t i = 0; !err && i < len / INLINING_ENTRY; i++) {
		struct ember_v8_inlining *in = &c->inlined[c->ninlined++];
		int32_t id;

		memcpy(&in->position, bytes + i * INLINING_ENTRY, 8);
		memcpy(&id, bytes + i * INLINING_ENTRY + 8, 4);
		in->sfi = 0;
		if (id >= 0 && !array_at(h, literals, nliterals, (uint32_t)id, &v))
			in->sfi = sfi_at(h, v);
	}
	free(bytes);
	return err == -EFAULT ? err : 0;
}

#define MAX_BYTECODES (1u << 20)

/* A baseline Code's bytecodes: its BytecodeArray's, copied. */
static int baseline_bytecodes(const struct ember_v8_heap *h, uint64_t array,
                              struct ember_v8_code *c)
{
	const struct ember_v8_layout *l = h->l;
	uint32_t n;

	if (!type_is(h, array, l->type_bytecode_array) ||
	    ember_v8_length(h, array, MAX_BYTECODES, &n))
		return -EINVAL;
	c->bytecodes = malloc(n ? n : 1);
	if (!c->bytecodes)
		return -ENOMEM;
	if (n && h->read(h->ctx, array - 1 + (uint64_t)l->bytecode_data, c->bytecodes, n))
		return -EFAULT;
	c->nbytes = n;
	c->baseline = true;
	return 0;
}

int ember_v8_code_read(const struct ember_v8_heap *h, uint64_t code, struct ember_v8_code *out)
{
	const struct ember_v8_layout *l = h->l;
	uint64_t tagged = code + 1, deopt, table;
	uint32_t flags;
	int32_t size;
	int err;

	memset(out, 0, sizeof(*out));
	out->code = code;
	if (!type_is(h, tagged, l->type_code))
		return ember_v8_is_object(tagged) ? -EINVAL : -EFAULT;
	if (l->code_start_inline)
		out->start = code + (uint64_t)l->code_instruction_start;
	else if (ember_v8_field(h, tagged, l->code_instruction_start, &out->start))
		return -EFAULT;
	if (h->read(h->ctx, code + (uint64_t)l->code_instruction_size, &size, sizeof(size)))
		return -EFAULT;
	if (size <= 0 || (uint32_t)size > MAX_INSTRUCTIONS || out->start >= EMBER_V8_USER_LIMIT)
		return -EINVAL;
	out->size = (uint32_t)size;
	if (ember_v8_field(h, tagged, l->code_deopt_data, &deopt) ||
	    ember_v8_field(h, tagged, l->code_position_table, &table))
		return -EFAULT;
	/* Where its instructions are kept: the InstructionStream's map, or the Code's. */
	if (l->code_instruction_stream) {
		uint64_t stream;

		if (!ember_v8_field(h, tagged, l->code_instruction_stream, &stream))
			ember_v8_field(h, stream, 0, &out->code_space_map);
	} else {
		ember_v8_field(h, tagged, 0, &out->code_space_map);
	}
	/* Baseline code keeps its bytecode where optimized code keeps its deoptimization data,
	 * and the map from its pcs to bytecodes where it keeps positions. */
	if (l->nbytecodes &&
	    !h->read(h->ctx, code + (uint64_t)l->code_flags, &flags, sizeof(flags)) &&
	    ((flags >> (l->code_kind_shift & 31)) & (uint32_t)l->code_kind_mask) ==
	        (uint32_t)l->code_kind_baseline) {
		err = baseline_bytecodes(h, deopt, out);
		if (!err && ember_v8_is_object(table))
			err =
			    byte_array(h, table, EMBER_V8_MAX_TABLE, &out->table, &out->table_len);
		if (err == -EINVAL)
			err = 0;
		if (err)
			ember_v8_code_free(out);
		return err;
	}
	err = read_deopt(h, deopt, out);
	if (!err && ember_v8_is_object(table)) {
		err = byte_array(h, table, EMBER_V8_MAX_TABLE, &out->table, &out->table_len);
		if (err == -EINVAL)
			err = 0; /* no table (or an empty placeholder): no lines */
	}
	if (err)
		ember_v8_code_free(out);
	return err;
}

void ember_v8_code_free(struct ember_v8_code *c)
{
	free(c->table);
	free(c->bytecodes);
	c->table = NULL;
	c->bytecodes = NULL;
	c->table_len = c->nbytes = 0;
}

/* The size of the bytecode at off (with its scaling prefix): 0 when it does not decode. */
static uint32_t bytecode_size(const struct ember_v8_layout *l, const struct ember_v8_code *c,
                              uint32_t off)
{
	uint8_t op = c->bytecodes[off];
	uint32_t scale = 0, prefix = 0;

	/* Wide and ExtraWide, and their debug-break forms, scale the next bytecode's operands. */
	if (op < 4) {
		scale = op % 2 ? 2 : 1;
		prefix = 1;
		if (off + 1 >= c->nbytes)
			return 0;
		op = c->bytecodes[off + 1];
	}
	if (op >= l->nbytecodes || !l->bytecode_sizes[scale][op])
		return 0;
	return prefix + l->bytecode_sizes[scale][op];
}

/* The next unsigned varint of a baseline Code's table at *at: 0, or -1 past its end. */
static int table_varint(const struct ember_v8_code *c, size_t *at, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*at >= c->table_len || shift > 28)
			return -1;
		b = c->table[(*at)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*out = v;
	return 0;
}

int32_t ember_v8_baseline_offset(const struct ember_v8_layout *l, const struct ember_v8_code *c,
                                 uint32_t pc_offset)
{
	uint64_t end, size, v, want = pc_offset ? pc_offset - 1 : 0;
	uint32_t off = 0;
	size_t at = 0;

	if (!c->baseline || !c->table)
		return -1;
	/* Sparkplug records where its code stands after the prologue, then after each
	 * bytecode, in order: the first varint is the prologue's size, each next one the
	 * size of one bytecode's code. A pc in the prologue is the function's entry. */
	if (table_varint(c, &at, &end) || want < end)
		return -1;
	while (off < c->nbytes && !table_varint(c, &at, &v)) {
		end += v;
		if (want < end)
			return (int32_t)off;
		size = bytecode_size(l, c, off);
		if (!size)
			return -1;
		off += (uint32_t)size;
	}
	return -1;
}

int ember_v8_code_scopes(const struct ember_v8_code *c, uint32_t pc_offset,
                         struct ember_v8_scope *out, int max)
{
	struct ember_v8_position pos = {-1, -1};
	uint64_t raw;
	int n = 0;

	if (!c->sfi || max <= 0)
		return 0;
	/* A return address follows its call: the call's position is the one before it. */
	if (c->table && pc_offset &&
	    !ember_v8_position_at(c->table, c->table_len, pc_offset - 1, &raw))
		pos = ember_v8_position_decode(raw);
	while (n < max - 1 && pos.inlining_id >= 0 && (uint32_t)pos.inlining_id < c->ninlined) {
		const struct ember_v8_inlining *in = &c->inlined[pos.inlining_id];

		out[n++] = (struct ember_v8_scope){in->sfi, pos.script_offset};
		pos = ember_v8_position_decode(in->position);
	}
	out[n++] = (struct ember_v8_scope){c->sfi, pos.inlining_id < 0 ? pos.script_offset : -1};
	return n;
}

#define SCAN_CHUNK 4096

int ember_v8_code_at(const struct ember_v8_heap *h, uint64_t code_space_map, uint64_t pc,
                     struct ember_v8_code *out)
{
	const struct ember_v8_layout *l = h->l;
	uint64_t words[SCAN_CHUNK / 8], end = pc & ~7ull;

	if (!ember_v8_is_object(code_space_map) || pc >= EMBER_V8_USER_LIMIT)
		return -ENOENT;
	for (uint64_t back = 0; back < EMBER_V8_MAX_CODE_SCAN; back += SCAN_CHUNK) {
		uint64_t at = end - back - SCAN_CHUNK;

		if (end < back + SCAN_CHUNK || h->read(h->ctx, at, words, sizeof(words)))
			return -EFAULT;
		for (int i = SCAN_CHUNK / 8 - 1; i >= 0; i--) {
			uint64_t header = at + 8 * (uint64_t)i, code = header, back_ref;

			if (words[i] != code_space_map)
				continue;
			/* V8 11 on: the InstructionStream's Code follows its map. */
			if (l->code_instruction_stream) {
				if (h->read(h->ctx, header + 8, &back_ref, sizeof(back_ref)) ||
				    !ember_v8_is_object(back_ref))
					continue;
				code = back_ref - 1;
			}
			if (ember_v8_code_read(h, code, out))
				continue;
			if (pc >= out->start && pc - out->start < out->size)
				return 0;
			ember_v8_code_free(out);
			/* The nearest header before pc is its object's: a pc past its end is in
			 * no Code. */
			return -ENOENT;
		}
	}
	return -ENOENT;
}

int ember_v8_bytecode_table(const struct ember_v8_heap *h, uint64_t sfi, uint8_t **table,
                            uint32_t *len)
{
	const struct ember_v8_layout *l = h->l;
	static const int32_t holders[] = {WRAPPED_SFI, 16};
	uint64_t data, inner, positions;
	int err;

	*table = NULL;
	*len = 0;
	if (ember_v8_field(h, sfi + 1, l->sfi_function_data, &data))
		return -EFAULT;
	/* Baseline code keeps its function's bytecode where optimized code keeps its
	 * deoptimization data; V8 9's BaselineData and an InterpreterData hold it in a field. */
	if (type_is(h, data, l->type_code)) {
		if (ember_v8_field(h, data, l->code_deopt_data, &data))
			return -EFAULT;
	} else if (!type_is(h, data, l->type_bytecode_array)) {
		for (size_t i = 0; i < 2; i++)
			if (ember_v8_is_object(data) &&
			    !ember_v8_field(h, data, holders[i], &inner) &&
			    type_is(h, inner, l->type_bytecode_array)) {
				data = inner;
				break;
			}
	}
	if (!type_is(h, data, l->type_bytecode_array))
		return -ENOENT;
	if (ember_v8_field(h, data, l->bytecode_position_table, &positions))
		return -EFAULT;
	if (!ember_v8_is_object(positions))
		return -ENOENT;
	err = byte_array(h, positions, EMBER_V8_MAX_TABLE, table, len);
	return err == -EINVAL ? -ENOENT : err;
}

int32_t ember_v8_bytecode_offset(const struct ember_v8_layout *l, int32_t slot)
{
	int32_t off = slot - (l->bytecode_data - 1);

	return off >= 0 ? off : -1;
}
