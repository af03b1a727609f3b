// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/ruby_frames.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/bytes.h"

/* Ruby's object types (flags & T_MASK) and imemo types ((flags >> 12) & 0xf), 2.6 to 3.4. */
#define T_MASK        0x1fu
#define T_CLASS       0x02u
#define T_MODULE      0x03u
#define T_STRING      0x05u
#define T_ARRAY       0x07u
#define T_IMEMO       0x1au
#define T_ICLASS      0x1cu
#define T_MOVED       0x1eu /* a slot GC.compact moved its object out of */
#define IMEMO_SHIFT   12
#define IMEMO_MENT    6u
#define IMEMO_ISEQ    7u
#define FL_SINGLETON  (1u << 12)
#define QNIL          8u
#define METHOD_ISEQ   0u   /* VM_METHOD_TYPE_ISEQ */
#define METHOD_CFUNC  1u   /* VM_METHOD_TYPE_CFUNC */
#define ID_ENTRY_UNIT 512u /* symbol.c: ids in arrays of 512 (string, symbol) pairs */
#define MOVED_TO      16u  /* gc.c's struct RMoved: flags, a dummy, the destination */

enum iseq_type {
	TYPE_TOP,
	TYPE_METHOD,
	TYPE_BLOCK,
	TYPE_CLASS,
	TYPE_RESCUE,
	TYPE_ENSURE,
	TYPE_EVAL,
	TYPE_MAIN,
	TYPE_PLAIN
};

/*
 * iseq.c's succinct index (VM_INSN_INFO_TABLE_IMPL 2, unchanged 2.6 to 3.4):
 * six words of 9 ranks of 7 bits for the first 54 positions, then blocks of
 * 512 positions {u32 rank; u64 ranks of 7 small blocks, 9 bits each; u64 bits[8]}.
 */
#define SUCC_IMM        54u
#define SUCC_IMM_WORDS  6u
#define SUCC_BLOCK      512u
#define SUCC_BLOCK_SIZE 80u

#define OBJ_WINDOW  0x28u /* flags, klass and the 24-byte union of a String, Array or Class */
#define BODY_WINDOW 256u  /* the most of an iseq body read at once */
#define SMALL_READ  64u   /* an iseq object, method entry, definition, st_table, symbol table */

/* A heap object or malloc'd block: aligned, in user space, not a special constant. */
static bool user_ptr(uint64_t p)
{
	return p >= 4096 && p < EMBER_INTERP_USER_LIMIT && !(p & 7);
}

static size_t body_window(const struct ember_rb_layout *l)
{
	const uint16_t at[] = {l->body_encoded,    l->body_first_lineno, l->body_pathobj,
	                       l->body_base_label, l->body_label,        l->body_insns_info,
	                       l->body_succ_table, l->body_parent_iseq,  l->body_local_iseq};
	size_t end = (size_t)l->body_insns_size + 4;

	if ((size_t)l->body_type + 4 > end)
		end = (size_t)l->body_type + 4;
	if ((size_t)l->body_size + 4 > end)
		end = (size_t)l->body_size + 4;
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		if ((size_t)at[i] + 8 > end)
			end = (size_t)at[i] + 8;
	return end;
}

/* Every offset inside the window read for it: a table mistake is -EINVAL, never a wild read. */
static bool layout_ok(const struct ember_rb_layout *l)
{
	return body_window(l) <= BODY_WINDOW && l->iseq_body + 8u <= l->iseq_read &&
	       l->iseq_read <= SMALL_READ && l->cme_def + 8u <= l->cme_read &&
	       l->cme_called_id + 8u <= l->cme_read && l->cme_owner + 8u <= l->cme_read &&
	       l->cme_defined_class + 8u <= l->cme_read && l->cme_read <= SMALL_READ &&
	       l->def_type < l->def_original_id + 8u && l->def_original_id + 8u <= SMALL_READ &&
	       l->string_len + 8u <= OBJ_WINDOW && l->string_ptr + 8u <= OBJ_WINDOW &&
	       l->string_embed <= OBJ_WINDOW && l->array_len + 8u <= OBJ_WINDOW &&
	       l->array_ptr + 8u <= OBJ_WINDOW && l->array_embed <= OBJ_WINDOW &&
	       l->class_ext + 8u <= OBJ_WINDOW && l->symbols_last_id + 4u <= SMALL_READ &&
	       l->symbols_ids + 8u <= SMALL_READ && l->st_read <= SMALL_READ &&
	       l->st_entry_power < l->st_read && l->st_entries_start + 8u <= l->st_read &&
	       l->st_entries_bound + 8u <= l->st_read && l->st_entries + 8u <= l->st_read &&
	       l->st_entry_size <= SMALL_READ && l->st_entry_hash + 8u <= l->st_entry_size &&
	       l->st_entry_key + 8u <= l->st_entry_size &&
	       l->st_entry_record + 8u <= l->st_entry_size && l->insn_info_size &&
	       l->insn_info_line + 4u <= l->insn_info_size && l->string_embed_shift < 64 &&
	       l->array_embed_shift < 64;
}

/*
 * The len bytes (at least 8) of the object at value. While GC.compact runs, a reference
 * not yet updated leads to the slot the object left: a T_MOVED whose destination is the
 * object's new place (as rb_gc_location follows it). One hop: an object moves once a
 * compaction, and whatever is read there is checked by its caller like any other.
 */
static int read_slot(ember_rb_read_fn read, void *ctx, uint64_t value, uint8_t *buf, size_t len)
{
	uint64_t to;

	if (!user_ptr(value))
		return -EBADMSG;
	if (read(ctx, value, buf, len))
		return -EFAULT;
	if ((ember_u64_at(buf, 0) & T_MASK) != T_MOVED)
		return 0;
	if (read(ctx, value + MOVED_TO, &to, sizeof(to)))
		return -EFAULT;
	if (!user_ptr(to))
		return -EBADMSG;
	return read(ctx, to, buf, len) ? -EFAULT : 0;
}

/* The len bytes of the object at value, whose type (flags & T_MASK) must be type. */
static int read_object(ember_rb_read_fn read, void *ctx, uint64_t value, unsigned int type,
                       uint8_t *buf, size_t len)
{
	int err = read_slot(read, ctx, value, buf, len);

	return err ? err : (ember_u64_at(buf, 0) & T_MASK) == type ? 0 : -EBADMSG;
}

/* The len bytes of the imemo at value, of imemo type kind. */
static int read_imemo(ember_rb_read_fn read, void *ctx, uint64_t value, unsigned int kind,
                      uint8_t *buf, size_t len)
{
	int err = read_object(read, ctx, value, T_IMEMO, buf, len);

	if (!err && ((ember_u64_at(buf, 0) >> IMEMO_SHIFT) & 0xf) != kind)
		err = -EBADMSG;
	return err;
}

/* A copy of n bytes as a C string, each NUL (which would cut it) as U+FFFD. */
static char *c_string(const uint8_t *s, size_t n)
{
	size_t nuls = 0, at = 0;
	char *out;

	for (size_t i = 0; i < n; i++)
		nuls += !s[i];
	out = malloc(n + 2 * nuls + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i]) {
			out[at++] = (char)s[i];
		} else {
			memcpy(out + at, "\xef\xbf\xbd", 3);
			at += 3;
		}
	}
	out[at] = '\0';
	return out;
}

int ember_rb_read_string(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                         uint64_t value, size_t max, char **out)
{
	uint8_t hdr[OBJ_WINDOW], *data;
	uint64_t flags, len, ptr;
	int err;

	*out = NULL;
	if (!layout_ok(l))
		return -EINVAL;
	err = read_object(read, ctx, value, T_STRING, hdr, sizeof(hdr));
	if (err)
		return err;
	flags = ember_u64_at(hdr, 0);
	if (max > EMBER_RB_MAX_STRING)
		max = EMBER_RB_MAX_STRING;
	if (!(flags & l->string_noembed_flag)) {
		len = (flags >> l->string_embed_shift) & l->string_embed_mask;
		if (len > max || len > sizeof(hdr) - l->string_embed)
			return -EBADMSG;
		*out = c_string(hdr + l->string_embed, len);
		return *out ? 0 : -ENOMEM;
	}
	len = ember_u64_at(hdr, l->string_len);
	ptr = ember_u64_at(hdr, l->string_ptr);
	if (len > max || (len && (!ptr || ptr >= EMBER_INTERP_USER_LIMIT)))
		return -EBADMSG;
	data = malloc(len ? len : 1);
	if (!data)
		return -ENOMEM;
	if (len && read(ctx, ptr, data, len)) {
		free(data);
		return -EFAULT;
	}
	*out = c_string(data, len);
	free(data);
	return *out ? 0 : -ENOMEM;
}

/* Element index of the Array at value: -ENOENT past its end (rb_ary_entry's nil). */
static int array_at(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                    uint64_t value, uint64_t index, uint64_t *elem)
{
	uint8_t hdr[OBJ_WINDOW];
	uint64_t flags, len, ptr;
	int err = read_object(read, ctx, value, T_ARRAY, hdr, sizeof(hdr));

	if (err)
		return err;
	flags = ember_u64_at(hdr, 0);
	if (flags & l->array_embed_flag) {
		len = (flags >> l->array_embed_shift) & l->array_embed_mask;
		if (len > (sizeof(hdr) - l->array_embed) / 8)
			return -EBADMSG;
		if (index >= len)
			return -ENOENT;
		*elem = ember_u64_at(hdr, l->array_embed + 8 * index);
		return 0;
	}
	len = ember_u64_at(hdr, l->array_len);
	ptr = ember_u64_at(hdr, l->array_ptr);
	if (index >= len)
		return -ENOENT;
	if (!user_ptr(ptr) || len > EMBER_INTERP_USER_LIMIT / 8)
		return -EBADMSG;
	return read(ctx, ptr + 8 * index, elem, 8) ? -EFAULT : 0;
}

int ember_rb_id_name(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                     uint64_t table, uint64_t id, char **out)
{
	uint8_t sym[SMALL_READ];
	uint64_t serial = id > l->id_last_op ? id >> 4 : id, chunk, str;
	size_t len = (size_t)l->symbols_ids + 8;
	uint32_t last_id;
	int err;

	*out = NULL;
	if (!layout_ok(l))
		return -EINVAL;
	if (!table || !serial || serial >= EMBER_RB_MAX_SERIAL)
		return -ENOENT;
	if (len < l->symbols_last_id + 4u)
		len = l->symbols_last_id + 4u;
	if (!user_ptr(table))
		return -EBADMSG;
	if (read(ctx, table, sym, len))
		return -EFAULT;
	last_id = ember_u32_at(sym, l->symbols_last_id);
	if (last_id >= EMBER_RB_MAX_SERIAL)
		return -EBADMSG;
	if (serial > last_id)
		return -ENOENT;
	/* ids: an Array of Arrays, [serial / 512][2 * (serial % 512)] the name. */
	err = array_at(l, read, ctx, ember_u64_at(sym, l->symbols_ids), serial / ID_ENTRY_UNIT,
	               &chunk);
	if (!err && chunk == QNIL)
		err = -ENOENT;
	if (!err)
		err = array_at(l, read, ctx, chunk, 2 * (serial % ID_ENTRY_UNIT), &str);
	if (!err && str == QNIL)
		err = -ENOENT;
	if (err)
		return err;
	return ember_rb_read_string(l, read, ctx, str, EMBER_RB_MAX_STRING, out);
}

void ember_rb_symbols_init(const struct ember_rb_layout *l, uint64_t table,
                           struct ember_rb_symbols *out)
{
	memset(out, 0, sizeof(*out));
	out->table = table;
	out->attached = l->id_attached;
}

/* The hidden ivars a class's path and a singleton class's object live under (variable.c). */
enum hidden_ivar { IVAR_CLASSPATH, IVAR_TMP_CLASSPATH, IVAR_ATTACHED };

static const char *const hidden_names[] = {"__classpath__", "__tmp_classpath__", "__attached__"};

static uint64_t *hidden_id(struct ember_rb_symbols *syms, enum hidden_ivar which)
{
	return which == IVAR_CLASSPATH       ? &syms->classpath
	       : which == IVAR_TMP_CLASSPATH ? &syms->tmp_classpath
	                                     : &syms->attached;
}

/* Whether symbol key is the hidden ivar which: by its id once known, else by its name, learnt. */
static int is_hidden(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                     struct ember_rb_symbols *syms, enum hidden_ivar which, uint64_t key)
{
	uint64_t *id = hidden_id(syms, which);
	char *name;
	int err, same;

	if (*id)
		return key == *id;
	/* A key without a readable name is not the one: the others may still be. */
	err = ember_rb_id_name(l, read, ctx, syms->table, key, &name);
	if (err)
		return err == -ENOMEM ? err : 0;
	same = !strcmp(name, hidden_names[which]);
	free(name);
	if (same)
		*id = key;
	return same;
}

/*
 * The ivar which of the class whose header is cls (rb_ivar_get on a class:
 * an st_lookup in its rb_classext_t's iv_tbl, here a scan of its entries in
 * insertion order, deleted ones with hash ~0 skipped): -ENOENT when absent.
 */
static int class_ivar(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                      struct ember_rb_symbols *syms, const uint8_t *cls, enum hidden_ivar which,
                      uint64_t *value)
{
	uint8_t st[SMALL_READ], *entries;
	uint64_t ext = ember_u64_at(cls, l->class_ext), tbl, start, bound, n;
	int err = -ENOENT;

	if (!user_ptr(ext))
		return ext ? -EBADMSG : -ENOENT;
	if (read(ctx, ext + l->ext_iv_tbl, &tbl, 8))
		return -EFAULT;
	if (!tbl)
		return -ENOENT;
	if (!user_ptr(tbl))
		return -EBADMSG;
	if (read(ctx, tbl, st, l->st_read))
		return -EFAULT;
	start = ember_u64_at(st, l->st_entries_start);
	bound = ember_u64_at(st, l->st_entries_bound);
	if (st[l->st_entry_power] > 31 || start > bound || bound > 1ull << st[l->st_entry_power] ||
	    (bound > start && !user_ptr(ember_u64_at(st, l->st_entries))))
		return -EBADMSG;
	n = bound - start < EMBER_RB_MAX_IVARS ? bound - start : EMBER_RB_MAX_IVARS;
	entries = malloc(n * l->st_entry_size + 1);
	if (!entries)
		return -ENOMEM;
	if (n && read(ctx, ember_u64_at(st, l->st_entries) + start * l->st_entry_size, entries,
	              n * l->st_entry_size)) {
		free(entries);
		return -EFAULT;
	}
	for (uint64_t i = 0; i < n && err == -ENOENT; i++) {
		const uint8_t *e = entries + i * l->st_entry_size;
		int hit;

		if (ember_u64_at(e, l->st_entry_hash) == ~0ull)
			continue;
		hit = is_hidden(l, read, ctx, syms, which, ember_u64_at(e, l->st_entry_key));
		if (hit < 0)
			err = hit;
		else if (hit)
			err = (*value = ember_u64_at(e, l->st_entry_record), 0);
	}
	free(entries);
	return err;
}

/* The header of the class, module or iclass at value; its type in *type. */
static int read_class(ember_rb_read_fn read, void *ctx, uint64_t value, uint8_t *cls,
                      unsigned int *type)
{
	int err = read_slot(read, ctx, value, cls, OBJ_WINDOW);

	if (err)
		return err;
	*type = ember_u64_at(cls, 0) & T_MASK;
	return *type == T_CLASS || *type == T_MODULE || *type == T_ICLASS ? 0 : -EBADMSG;
}

int ember_rb_class_path(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                        struct ember_rb_symbols *syms, uint64_t klass, char **out, bool *singleton)
{
	uint8_t cls[OBJ_WINDOW];
	uint64_t path;
	unsigned int type;
	int err;

	*out = NULL;
	*singleton = false;
	if (!layout_ok(l))
		return -EINVAL;
	err = read_class(read, ctx, klass, cls, &type);
	/* An included module's iclass: the module (its klass); no second iclass. */
	if (!err && type == T_ICLASS)
		err = read_class(read, ctx, ember_u64_at(cls, 8), cls, &type);
	if (!err && type == T_ICLASS)
		err = -EBADMSG;
	if (!err && (ember_u64_at(cls, 0) & FL_SINGLETON)) {
		*singleton = true;
		err = class_ivar(l, read, ctx, syms, cls, IVAR_ATTACHED, &klass);
		/* Attached to an object, or a singleton's singleton: no path of its own. */
		if (!err)
			err = read_class(read, ctx, klass, cls, &type);
		if (err == -EBADMSG ||
		    (!err && (type == T_ICLASS || (ember_u64_at(cls, 0) & FL_SINGLETON))))
			err = -ENOENT;
	}
	if (err)
		return err;
	err = class_ivar(l, read, ctx, syms, cls, IVAR_CLASSPATH, &path);
	if (err == -ENOENT)
		err = class_ivar(l, read, ctx, syms, cls, IVAR_TMP_CLASSPATH, &path);
	if (err)
		return err;
	return ember_rb_read_string(l, read, ctx, path, EMBER_RB_MAX_STRING, out);
}

/* The body of the iseq object at iseq. */
static int iseq_body_of(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                        uint64_t iseq, uint64_t *body)
{
	uint8_t obj[SMALL_READ];
	int err = read_imemo(read, ctx, iseq, IMEMO_ISEQ, obj, l->iseq_read);

	if (err)
		return err;
	*body = ember_u64_at(obj, l->iseq_body);
	return user_ptr(*body) ? 0 : -EBADMSG;
}

/*
 * The window of the body at body into b, checked as far as its own fields
 * go (a body is malloc'd, not an object: it has no type flags): a known
 * type, a size under the cap, a Fixnum first line in int32 range.
 */
static int read_body(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                     uint64_t body, uint8_t *b)
{
	int64_t first;

	if (!user_ptr(body))
		return -EBADMSG;
	if (read(ctx, body, b, body_window(l)))
		return -EFAULT;
	first = (int64_t)ember_u64_at(b, l->body_first_lineno);
	if (ember_u32_at(b, l->body_type) > TYPE_PLAIN ||
	    ember_u32_at(b, l->body_size) > EMBER_RB_MAX_ISEQ || !(first & 1) ||
	    first >> 1 < INT32_MIN || first >> 1 > INT32_MAX)
		return -EBADMSG;
	return 0;
}

/* pathobj: the path String, or an Array [path, realpath]. */
static int read_path(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                     uint64_t pathobj, char **out)
{
	uint64_t path;
	int err = ember_rb_read_string(l, read, ctx, pathobj, EMBER_RB_MAX_STRING, out);

	if (err != -EBADMSG)
		return err;
	err = array_at(l, read, ctx, pathobj, 0, &path);
	if (err)
		return err == -ENOENT ? -EBADMSG : err;
	return ember_rb_read_string(l, read, ctx, path, EMBER_RB_MAX_STRING, out);
}

/*
 * The method the iseq at body belongs to: its local iseq's base label when
 * that is a method. Not its class: the iseqs do not know it (a method's
 * parent_iseq is 0, compile.c's NEW_ISEQ for def and def self), only the
 * method entry of a frame does (ember_rb_method_class).
 */
static int method_of(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                     uint64_t body, const uint8_t *b, struct ember_rb_iseq *out)
{
	uint64_t local = ember_u64_at(b, l->body_local_iseq), method = body;
	uint8_t lb[BODY_WINDOW];
	const uint8_t *mb = b;
	int err;

	if (!local) /* iseq.c's set_relation leaves it 0 for an eval without a parent */
		return 0;
	err = iseq_body_of(l, read, ctx, local, &method);
	if (!err && method != body) {
		err = read_body(l, read, ctx, method, lb);
		mb = lb;
	}
	if (err || ember_u32_at(mb, l->body_type) != TYPE_METHOD)
		return err;
	return ember_rb_read_string(l, read, ctx, ember_u64_at(mb, l->body_base_label),
	                            EMBER_RB_MAX_STRING, &out->method);
}

/* The bytes of the succinct index Ruby allocates for an iseq of size instructions. */
static size_t succ_bytes(uint32_t size)
{
	if (size < SUCC_IMM)
		return (size_t)(size + 8) / 9 * 8;
	return SUCC_IMM_WORDS * 8 +
	       (size_t)(size - SUCC_IMM + SUCC_BLOCK - 1) / SUCC_BLOCK * SUCC_BLOCK_SIZE;
}

/* insns_info: the line of each entry, and the index from positions to entries. */
static int read_lines(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                      const uint8_t *b, struct ember_rb_iseq *out)
{
	uint32_t n = ember_u32_at(b, l->body_insns_size);
	uint64_t info = ember_u64_at(b, l->body_insns_info);
	uint64_t succ = ember_u64_at(b, l->body_succ_table);
	uint8_t *raw;
	int err = 0;

	if (!n)
		return 0;
	if (n > out->iseq_size || !user_ptr(info) || (n > 1 && !user_ptr(succ)))
		return -EBADMSG;
	/* The last bytes first: a hostile size costs a read, not megabytes. */
	if (read(ctx, info + (size_t)n * l->insn_info_size - 1, &(uint8_t){0}, 1) ||
	    (n > 1 && read(ctx, succ + succ_bytes(out->iseq_size) - 1, &(uint8_t){0}, 1)))
		return -EFAULT;
	raw = malloc((size_t)n * l->insn_info_size);
	out->lines = malloc((size_t)n * sizeof(*out->lines));
	if (n > 1) {
		out->succ_len = succ_bytes(out->iseq_size);
		out->succ = malloc(out->succ_len);
	}
	if (!raw || !out->lines || (n > 1 && !out->succ))
		err = -ENOMEM;
	else if (read(ctx, info, raw, (size_t)n * l->insn_info_size) ||
	         (n > 1 && read(ctx, succ, out->succ, out->succ_len)))
		err = -EFAULT;
	for (uint32_t i = 0; i < n && !err; i++)
		out->lines[i] =
		    (int32_t)ember_u32_at(raw, (size_t)i * l->insn_info_size + l->insn_info_line);
	free(raw);
	if (err) {
		free(out->lines);
		free(out->succ);
		out->lines = NULL;
		out->succ = NULL;
		out->succ_len = 0;
		return err;
	}
	out->nlines = n;
	return 0;
}

/* rank(pos): how many entries start at or before instruction pos (succ_index_lookup). */
static int succ_rank(const uint8_t *t, size_t len, uint32_t pos, uint64_t *rank)
{
	uint32_t bit, small;
	uint64_t ranks;
	size_t at;

	if (pos < SUCC_IMM) {
		at = (size_t)pos / 9 * 8;
		if (at + 8 > len)
			return -EBADMSG;
		*rank = (ember_u64_at(t, at) >> (7 * (pos % 9))) & 0x7f;
		return 0;
	}
	pos -= SUCC_IMM;
	at = SUCC_IMM_WORDS * 8 + (size_t)(pos / SUCC_BLOCK) * SUCC_BLOCK_SIZE;
	if (at + SUCC_BLOCK_SIZE > len)
		return -EBADMSG;
	bit = pos % SUCC_BLOCK;
	small = bit / 64;
	ranks = ember_u64_at(t, at + 8);
	*rank =
	    ember_u32_at(t, at) + (small ? (ranks >> (9 * (small - 1))) & 0x1ff : 0) +
	    (uint64_t)__builtin_popcountll(ember_u64_at(t, at + 16 + 8 * small) << (63 - bit % 64));
	return 0;
}

int ember_rb_iseq_line(const struct ember_rb_iseq *is, uint32_t pos, int32_t *line)
{
	uint64_t rank = 1;
	int err;

	if (!is->nlines || pos >= is->iseq_size)
		return -ENOENT;
	if (is->nlines > 1) {
		err = succ_rank(is->succ, is->succ_len, pos, &rank);
		if (err)
			return err;
	}
	if (!rank || rank > is->nlines)
		return -EBADMSG;
	if (is->lines[rank - 1] <= 0)
		return -ENOENT;
	*line = is->lines[rank - 1];
	return 0;
}

int ember_rb_iseq_name(const struct ember_rb_iseq *is, const char *class_path, bool singleton,
                       char **out)
{
	size_t label_len, base_len;
	int prefix;

	*out = NULL;
	if (!is->label)
		return -EINVAL;
	if (!is->method) {
		*out = strdup(is->label);
		return *out ? 0 : -ENOMEM;
	}
	/* stackprof: the label's prefix ("block in ") before the qualified method name. */
	label_len = strlen(is->label);
	base_len = is->base_label ? strlen(is->base_label) : label_len;
	prefix = label_len > base_len ? (int)(label_len - base_len) : 0;
	if (asprintf(out, "%.*s%s%s%s", prefix, is->label, class_path ? class_path : "",
	             class_path ? (singleton ? "." : "#") : "", is->method) < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

void ember_rb_iseq_free(struct ember_rb_iseq *is)
{
	free(is->name);
	free(is->label);
	free(is->base_label);
	free(is->method);
	free(is->path);
	free(is->lines);
	free(is->succ);
	memset(is, 0, sizeof(*is));
}

int ember_rb_read_iseq(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                       uint64_t body, struct ember_rb_iseq *out)
{
	uint8_t b[BODY_WINDOW];
	int err;

	memset(out, 0, sizeof(*out));
	if (!layout_ok(l))
		return -EINVAL;
	err = read_body(l, read, ctx, body, b);
	if (err)
		return err;
	out->type = ember_u32_at(b, l->body_type);
	out->iseq_size = ember_u32_at(b, l->body_size);
	out->first_lineno = (int32_t)((int64_t)ember_u64_at(b, l->body_first_lineno) >> 1);
	out->checksum = ember_interp_checksum(ember_u64_at(b, l->body_encoded),
	                                      out->iseq_size | (uint64_t)out->type << 32,
	                                      ember_u64_at(b, l->body_first_lineno));
	err = ember_rb_read_string(l, read, ctx, ember_u64_at(b, l->body_label),
	                           EMBER_RB_MAX_STRING, &out->label);
	if (!err)
		err = ember_rb_read_string(l, read, ctx, ember_u64_at(b, l->body_base_label),
		                           EMBER_RB_MAX_STRING, &out->base_label);
	if (!err)
		err = read_path(l, read, ctx, ember_u64_at(b, l->body_pathobj), &out->path);
	if (!err)
		err = method_of(l, read, ctx, body, b, out);
	if (!err)
		err = ember_rb_iseq_name(out, NULL, false, &out->name);
	if (err) {
		ember_rb_iseq_free(out);
		return err;
	}
	/* Without its line table a frame keeps its name: lines stay unknown. */
	out->lines_error = read_lines(l, read, ctx, b, out);
	return 0;
}

int ember_rb_read_cfunc(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                        struct ember_rb_symbols *syms, uint64_t cme, struct ember_rb_cfunc *out)
{
	uint8_t me[SMALL_READ], def[SMALL_READ];
	char *method, *cls;
	bool singleton;
	uint64_t d;
	int err;

	memset(out, 0, sizeof(*out));
	if (!layout_ok(l))
		return -EINVAL;
	err = read_imemo(read, ctx, cme, IMEMO_MENT, me, l->cme_read);
	if (err)
		return err;
	d = ember_u64_at(me, l->cme_def);
	out->checksum = ember_interp_checksum(d, ember_u64_at(me, l->cme_called_id),
	                                      ember_u64_at(me, l->cme_owner));
	if (!user_ptr(d))
		return -EBADMSG;
	if (read(ctx, d, def, l->def_original_id + 8u))
		return -EFAULT;
	if ((def[l->def_type] & 0xf) != METHOD_CFUNC)
		return -EBADMSG;
	err = ember_rb_id_name(l, read, ctx, syms->table, ember_u64_at(def, l->def_original_id),
	                       &method);
	if (err)
		return err;
	/* As stackprof: the class the entry was found in; without one, the bare name. */
	err = ember_rb_class_path(l, read, ctx, syms, ember_u64_at(me, l->cme_defined_class), &cls,
	                          &singleton);
	if (err) {
		out->name = method;
		out->class_error = err;
		return err == -ENOMEM ? (ember_rb_cfunc_free(out), err) : 0;
	}
	err = asprintf(&out->name, "%s%s%s", cls, singleton ? "." : "#", method);
	free(cls);
	free(method);
	if (err < 0) {
		out->name = NULL;
		return -ENOMEM;
	}
	return 0;
}

void ember_rb_cfunc_free(struct ember_rb_cfunc *c)
{
	free(c->name);
	memset(c, 0, sizeof(*c));
}

int ember_rb_method_class(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                          struct ember_rb_symbols *syms, uint64_t cme, char **out, bool *singleton)
{
	uint8_t me[SMALL_READ];
	int err;

	*out = NULL;
	*singleton = false;
	if (!layout_ok(l))
		return -EINVAL;
	err = read_imemo(read, ctx, cme, IMEMO_MENT, me, l->cme_read);
	if (err)
		return err;
	return ember_rb_class_path(l, read, ctx, syms, ember_u64_at(me, l->cme_defined_class), out,
	                           singleton);
}

int ember_rb_method_body(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                         uint64_t cme, uint64_t *body)
{
	uint8_t me[SMALL_READ], def[SMALL_READ];
	uint64_t d;
	int err;

	if (!layout_ok(l) || l->def_iseq + 8u > SMALL_READ)
		return -EINVAL;
	err = read_imemo(read, ctx, cme, IMEMO_MENT, me, l->cme_read);
	if (err)
		return err;
	d = ember_u64_at(me, l->cme_def);
	if (!user_ptr(d))
		return -EBADMSG;
	if (read(ctx, d, def, l->def_iseq + 8u))
		return -EFAULT;
	if ((def[l->def_type] & 0xf) != METHOD_ISEQ)
		return -EBADMSG;
	return iseq_body_of(l, read, ctx, ember_u64_at(def, l->def_iseq), body);
}
