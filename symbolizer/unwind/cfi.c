// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/unwind/cfi.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>

#include "shared/bytes.h"
#include "shared/vec.h"
#include "shared/sort.h"

#define DWARF_REG_BX       3 /* rbx */
#define DWARF_REG_DI       5 /* rdi */
#define DWARF_REG_FP       6 /* rbp */
#define DWARF_REG_SP       7 /* rsp */
#define DWARF_REG_RA       16
#define MAX_REMEMBER_DEPTH 16
#define MAX_FDE_RANGE      (1ull << 30)

/* A bounds-checked little-endian reader: a read past the end sets bad and yields 0. */
/* One section being parsed. */
struct section {
	const uint8_t *data;
	size_t len;
	uint64_t vaddr;
	enum ember_cfi_section kind;
};

/* RULE_REGISTER: the value is in register `offset` (DW_CFA_register). */
enum rule_type { RULE_SAME = 0, RULE_UNDEFINED, RULE_OFFSET, RULE_REGISTER, RULE_OTHER };

struct reg_rule {
	uint8_t type;
	int64_t offset;
};

struct cfa_state {
	uint64_t cfa_reg;
	int64_t cfa_offset;
	const uint8_t *cfa_expr; /* DW_CFA_def_cfa_expression, or NULL */
	uint64_t cfa_expr_len;
	struct reg_rule fp, ra, bx;
};

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_encoding;
	uint8_t addr_size;
	bool has_z, signal;
	const uint8_t *insns, *insns_end;
	/* The state its instructions set, run once per CIE rather than once per FDE:
	 * a CIE of many instructions must not cost that much for every FDE. */
	struct cfa_state initial;
	bool initial_bad; /* instructions it cannot follow: its FDEs get INVALID rows */
};

/* Reads a pointer in a DW_EH_PE_* encoding. Returns false for one we do not follow. */
static bool read_pointer(struct ember_bytes *r, uint8_t enc, const struct section *s,
                         uint8_t addr_size, uint64_t *out)
{
	uint64_t at = s->vaddr + (uint64_t)(r->p - s->data), v;

	if (enc == 0xff || (enc & 0x80))
		return false; /* omitted, or indirect: no initial location can be either */
	switch (enc & 0x0f) {
	case 0x00:
		v = ember_bytes_le(r, addr_size);
		break;
	case 0x01:
		v = ember_bytes_uleb(r);
		break;
	case 0x02:
		v = ember_bytes_le(r, 2);
		break;
	case 0x03:
		v = ember_bytes_le(r, 4);
		break;
	case 0x04:
		v = ember_bytes_le(r, 8);
		break;
	case 0x09:
		v = (uint64_t)ember_bytes_sleb(r);
		break;
	case 0x0a:
		v = (uint64_t)(int64_t)(int16_t)ember_bytes_le(r, 2);
		break;
	case 0x0b:
		v = (uint64_t)(int64_t)(int32_t)ember_bytes_le(r, 4);
		break;
	case 0x0c:
		v = ember_bytes_le(r, 8);
		break;
	default:
		return false;
	}
	switch (enc & 0x70) {
	case 0x00:
		break;
	case 0x10:
		v += at;
		break; /* pc-relative */
	default:
		return false; /* text-, data-, function-relative: not in FDEs we meet */
	}
	*out = v;
	return !r->bad;
}

/* Opens the entry at off: its header's reader, id and end. */
static bool open_entry(const struct section *s, size_t off, struct ember_bytes *r, uint64_t *id,
                       bool *is_cie, const uint8_t **end, size_t *id_off)
{
	uint64_t length;
	bool is64 = false;

	if (off >= s->len)
		return false;
	r->p = s->data + off;
	r->end = s->data + s->len;
	r->bad = false;
	length = ember_bytes_le(r, 4);
	if (length == 0xffffffffu) {
		length = ember_bytes_le(r, 8);
		is64 = true;
	}
	if (r->bad || length < 4 || length > (uint64_t)(r->end - r->p))
		return false;
	*end = r->p + length;
	r->end = *end;
	*id_off = (size_t)(r->p - s->data);
	*id = ember_bytes_le(r, is64 ? 8 : 4);
	if (s->kind == EMBER_CFI_EH_FRAME)
		*is_cie = *id == 0;
	else
		*is_cie = *id == (is64 ? UINT64_MAX : 0xffffffffu);
	return !r->bad;
}

/*
 * The augmentation data of a 'z' CIE, in a, as its string aug (aug_len
 * bytes, 'z' first) describes it. Returns false when it cannot be read.
 */
static bool read_augmentation(const struct section *s, const uint8_t *aug, size_t aug_len,
                              struct ember_bytes *a, struct cie *c)
{
	c->has_z = true;
	for (size_t i = 1; i < aug_len; i++) {
		uint64_t ignored;

		switch (aug[i]) {
		case 'R':
			c->fde_encoding = (uint8_t)ember_bytes_le(a, 1);
			break;
		case 'L':
			ember_bytes_le(a, 1);
			break;
		case 'S':
			c->signal = true;
			break;
		case 'P': {
			uint8_t enc = (uint8_t)ember_bytes_le(a, 1);

			/* The personality routine's address may be indirect: only skip it. */
			if (!read_pointer(a, enc & 0x7f, s, c->addr_size, &ignored))
				return false;
			break;
		}
		case 'B':
			break;
		default:
			i = aug_len;
			break; /* the 'z' length lets us skip the rest */
		}
	}
	return !a->bad;
}

static bool parse_cie(const struct section *s, size_t off, struct cie *c, uint64_t *bytes)
{
	const uint8_t *end, *aug;
	size_t id_off, aug_len;
	uint64_t id;
	uint8_t version;
	bool is_cie;
	struct ember_bytes r;

	if (!open_entry(s, off, &r, &id, &is_cie, &end, &id_off) || !is_cie)
		return false;
	*bytes += (uint64_t)(end - (s->data + off));
	memset(c, 0, sizeof(*c));
	c->addr_size = 8;
	c->fde_encoding = 0x00; /* absptr unless the augmentation says otherwise */
	version = (uint8_t)ember_bytes_le(&r, 1);
	if (version != 1 && version != 3 && version != 4)
		return false;
	aug = r.p;
	aug_len = strnlen((const char *)aug, (size_t)(r.end - r.p));
	if (aug_len == (size_t)(r.end - r.p))
		return false;
	r.p += aug_len + 1;
	if (version == 4) {
		c->addr_size = (uint8_t)ember_bytes_le(&r, 1);
		if (ember_bytes_le(&r, 1) != 0 || (c->addr_size != 4 && c->addr_size != 8))
			return false; /* segment selectors */
	}
	c->code_align = ember_bytes_uleb(&r);
	c->data_align = ember_bytes_sleb(&r);
	c->ra_reg = version == 1 ? ember_bytes_le(&r, 1) : ember_bytes_uleb(&r);
	if (aug_len && aug[0] == 'z') {
		uint64_t len = ember_bytes_uleb(&r);
		struct ember_bytes a;

		if (r.bad || len > (uint64_t)(r.end - r.p))
			return false;
		a = (struct ember_bytes){.p = r.p, .end = r.p + len};
		if (!read_augmentation(s, aug, aug_len, &a, c))
			return false;
		r.p += len;
	} else if (aug_len) {
		return false; /* an augmentation without 'z' we cannot skip */
	}
	if (r.bad || !c->code_align)
		return false;
	c->insns = r.p;
	c->insns_end = r.end;
	return true;
}

/* v * factor with the wrap-around of the hardware, not C's undefined overflow. */
static int64_t scaled(uint64_t v, int64_t factor)
{
	return (int64_t)(v * (uint64_t)factor);
}

/* The CFA expression the linker writes for x86-64 .plt entries:
 * rsp + 8 + ((rip & 15) >= N ? 8 : 0), with N at index 6 as DW_OP_litN. */
static const uint8_t plt_expr[] = {0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a,
                                   0x30, 0x2a, 0x33, 0x24, 0x22};

static bool is_plt_expr(const uint8_t *e, uint64_t len, uint8_t *threshold)
{
	if (len != sizeof(plt_expr) || e[6] < 0x30 || e[6] > 0x3f)
		return false;
	for (size_t i = 0; i < sizeof(plt_expr); i++)
		if (i != 6 && e[i] != plt_expr[i])
			return false;
	*threshold = (uint8_t)(e[6] - 0x30);
	return true;
}

static struct ember_unwind_row invalid_row(void)
{
	return (struct ember_unwind_row){.kind = EMBER_ROW_INVALID};
}

/* Where the caller's rbx is, as a row's bx_slot. */
static uint8_t bx_slot(const struct reg_rule *bx)
{
	if (bx->type == RULE_SAME)
		return 0;
	if (bx->type == RULE_OFFSET && bx->offset < 0 && bx->offset % 8 == 0 &&
	    -bx->offset / 8 <= EMBER_ROW_BX_SLOT_MAX)
		return (uint8_t)(-bx->offset / 8);
	return EMBER_ROW_BX_LOST; /* undefined, in a register, an expression, out of range */
}

static struct ember_unwind_row to_row(const struct cfa_state *st, struct ember_cfi_builder *b)
{
	struct ember_unwind_row row = {0};
	uint8_t threshold;

	if (st->ra.type == RULE_UNDEFINED) {
		row.kind = EMBER_ROW_END;
		return row;
	}
	/* glibc's vfork pops its return address into rdi around the system call (the stack
	 * is the child's too): a frame that can only be the leaf, its CFA the stack pointer. */
	if (st->ra.type == RULE_REGISTER && st->ra.offset == DWARF_REG_DI && !st->cfa_expr &&
	    st->cfa_reg == DWARF_REG_SP && st->cfa_offset == 0 &&
	    (st->fp.type == RULE_SAME || st->fp.type == RULE_UNDEFINED) &&
	    st->bx.type == RULE_SAME) {
		row.kind = EMBER_ROW_RA_DI;
		return row;
	}
	if (st->ra.type != RULE_OFFSET || st->ra.offset != -8)
		return invalid_row();
	if (st->cfa_expr) {
		if (!is_plt_expr(st->cfa_expr, st->cfa_expr_len, &threshold))
			return invalid_row();
		b->plt_rows++;
		row.kind = EMBER_ROW_PLT;
		row.cfa_slots = threshold;
		return row;
	}
	if (st->cfa_reg == DWARF_REG_SP)
		row.kind = EMBER_ROW_CFA_SP;
	else if (st->cfa_reg == DWARF_REG_FP)
		row.kind = EMBER_ROW_CFA_FP;
	else if (st->cfa_reg == DWARF_REG_BX) /* glibc's _dl_runtime_resolve aligns rsp */
		row.kind = EMBER_ROW_CFA_BX;
	else
		return invalid_row();
	row.bx_slot = bx_slot(&st->bx) & 0xf;
	/* Frames on x86-64 are whole 8-byte slots: odd offsets are hand-written oddities. */
	if (st->cfa_offset < 8 || st->cfa_offset % 8 ||
	    st->cfa_offset / 8 > EMBER_ROW_CFA_SLOTS_MAX)
		return invalid_row();
	row.cfa_slots = (int16_t)(st->cfa_offset / 8);
	switch (st->fp.type) {
	case RULE_SAME:
	case RULE_UNDEFINED:
		break;
	case RULE_OFFSET:
		if (st->fp.offset % 8 || st->fp.offset / 8 < EMBER_ROW_FP_SLOT_MIN ||
		    st->fp.offset >= 0)
			return invalid_row();
		row.fp_slot = (int8_t)(st->fp.offset / 8);
		break;
	default:
		return invalid_row();
	}
	return row;
}

static bool same_rule(const struct ember_unwind_row *a, const struct ember_unwind_row *b)
{
	return a->kind == b->kind && a->cfa_slots == b->cfa_slots && a->fp_slot == b->fp_slot &&
	       a->bx_slot == b->bx_slot;
}

/* Appends a row of the FDE being built at pc; a row at the same pc replaces the last. */
static int emit(struct ember_cfi_builder *b, struct ember_cfi_fde *fde, uint64_t pc,
                struct ember_unwind_row row)
{
	struct ember_cfi_raw_row *last = fde->nrows ? &b->raw[b->nraw - 1] : NULL;
	int err;

	if (row.kind == EMBER_ROW_INVALID)
		b->invalid_rows++;
	if (last && last->pc == pc) {
		last->row = row;
		return 0;
	}
	if (last && same_rule(&last->row, &row))
		return 0;
	err = EMBER_ENSURE(b->raw, b->raw_cap, b->nraw + 1, b->max_rows);
	if (err)
		return err;
	b->raw[b->nraw].pc = pc;
	b->raw[b->nraw].row = row;
	b->nraw++;
	fde->nrows++;
	return 0;
}

static struct reg_rule *rule_of(struct cfa_state *st, uint64_t reg, uint64_t ra_reg)
{
	if (reg == DWARF_REG_FP)
		return &st->fp;
	if (reg == DWARF_REG_BX)
		return &st->bx;
	if (reg == ra_reg)
		return &st->ra;
	return NULL; /* a register the unwinder does not need */
}

static void restore_rule(struct cfa_state *st, const struct cfa_state *initial, uint64_t reg,
                         uint64_t ra_reg)
{
	if (reg == DWARF_REG_FP)
		st->fp = initial->fp;
	else if (reg == DWARF_REG_BX)
		st->bx = initial->bx;
	else if (reg == ra_reg)
		st->ra = initial->ra;
}

static void set_rule(struct cfa_state *st, const struct cie *c, uint64_t reg, uint8_t type,
                     int64_t offset)
{
	struct reg_rule *rule = rule_of(st, reg, c->ra_reg);

	if (rule) {
		rule->type = type;
		rule->offset = offset;
	}
}

/*
 * An instruction that sets a register's rule, other than the two whose
 * register is in op (op read, its operands next in r). Returns 0 when done,
 * 1 when it cannot be followed, -ENOENT when op is not one of these.
 */
static int register_insn(uint8_t op, const struct cie *c, struct ember_bytes *r,
                         struct cfa_state *st, const struct cfa_state *initial)
{
	uint64_t reg, len;
	int64_t off;

	switch (op) {
	case 0x05: /* offset_extended */
		reg = ember_bytes_uleb(r);
		off = scaled(ember_bytes_uleb(r), c->data_align);
		set_rule(st, c, reg, RULE_OFFSET, off);
		return 0;
	case 0x06: /* restore_extended */
		reg = ember_bytes_uleb(r);
		if (!initial)
			return 1;
		restore_rule(st, initial, reg, c->ra_reg);
		return 0;
	case 0x07:
		set_rule(st, c, ember_bytes_uleb(r), RULE_UNDEFINED, 0);
		return 0;
	case 0x08:
		set_rule(st, c, ember_bytes_uleb(r), RULE_SAME, 0);
		return 0;
	case 0x09: /* register */
		reg = ember_bytes_uleb(r);
		off = (int64_t)(ember_bytes_uleb(r) & 0xffff);
		set_rule(st, c, reg, RULE_REGISTER, off);
		return 0;
	case 0x14: /* val_offset */
		reg = ember_bytes_uleb(r);
		ember_bytes_uleb(r);
		set_rule(st, c, reg, RULE_OTHER, 0);
		return 0;
	case 0x10: /* expression */
	case 0x16: /* val_expression */
		reg = ember_bytes_uleb(r);
		len = ember_bytes_uleb(r);
		if (r->bad || len > (uint64_t)(r->end - r->p))
			return 1;
		r->p += len;
		set_rule(st, c, reg, RULE_OTHER, 0);
		return 0;
	case 0x11: /* offset_extended_sf */
		reg = ember_bytes_uleb(r);
		off = scaled((uint64_t)ember_bytes_sleb(r), c->data_align);
		set_rule(st, c, reg, RULE_OFFSET, off);
		return 0;
	case 0x15: /* val_offset_sf */
		reg = ember_bytes_uleb(r);
		ember_bytes_sleb(r);
		set_rule(st, c, reg, RULE_OTHER, 0);
		return 0;
	case 0x2f: /* GNU_negative_offset_extended */
		reg = ember_bytes_uleb(r);
		off = scaled(0 - ember_bytes_uleb(r), c->data_align);
		set_rule(st, c, reg, RULE_OFFSET, off);
		return 0;
	default:
		return -ENOENT;
	}
}

/* An instruction that defines the CFA (op one of those). Returns 0, or 1 when it cannot be
 * followed. */
static int cfa_insn(uint8_t op, const struct cie *c, struct ember_bytes *r, struct cfa_state *st)
{
	uint64_t len;

	switch (op) {
	case 0x0c: /* def_cfa */
		st->cfa_reg = ember_bytes_uleb(r);
		st->cfa_offset = (int64_t)ember_bytes_uleb(r);
		st->cfa_expr = NULL;
		return 0;
	case 0x0d: /* def_cfa_register */
		st->cfa_reg = ember_bytes_uleb(r);
		st->cfa_expr = NULL;
		return 0;
	case 0x0e: /* def_cfa_offset */
		st->cfa_offset = (int64_t)ember_bytes_uleb(r);
		return 0;
	case 0x0f: /* def_cfa_expression */
		len = ember_bytes_uleb(r);
		if (r->bad || len > (uint64_t)(r->end - r->p))
			return 1;
		st->cfa_expr = r->p;
		st->cfa_expr_len = len;
		r->p += len;
		return 0;
	case 0x12: /* def_cfa_sf */
		st->cfa_reg = ember_bytes_uleb(r);
		st->cfa_offset = scaled((uint64_t)ember_bytes_sleb(r), c->data_align);
		st->cfa_expr = NULL;
		return 0;
	case 0x13: /* def_cfa_offset_sf */
		st->cfa_offset = scaled((uint64_t)ember_bytes_sleb(r), c->data_align);
		return 0;
	default:
		return 1;
	}
}

/*
 * An advance of delta in an FDE: the row in force so far ends here. Returns
 * 0 to go on, 1 when the FDE ends, or a negative errno.
 */
static int advance(struct ember_cfi_builder *b, struct ember_cfi_fde *fde,
                   const struct cfa_state *st, uint64_t *loc, uint64_t delta)
{
	int err;

	if (delta > fde->end - *loc)
		delta = fde->end - *loc;
	if (delta) {
		err = emit(b, fde, *loc, to_row(st, b));
		if (err)
			return err;
		*loc += delta;
	}
	return *loc >= fde->end;
}

/*
 * Runs CFA instructions. In a CIE (fde NULL) they set the initial state; in
 * an FDE every advance emits the row in force before it. Returns 0 when the
 * instructions ended, 1 when they cannot be followed from *loc on, or a
 * negative errno.
 */
static int run_insns(struct ember_cfi_builder *b, const struct section *s, const struct cie *c,
                     struct ember_bytes *r, struct cfa_state *st, const struct cfa_state *initial,
                     struct ember_cfi_fde *fde, uint64_t *loc)
{
	struct cfa_state stack[MAX_REMEMBER_DEPTH];
	int depth = 0, err;

	while (r->p < r->end && !r->bad) {
		uint8_t op = (uint8_t)ember_bytes_le(r, 1);
		uint64_t delta, target;
		int64_t off;

		/* The classes with an operand in the low bits, then the operations. */
		switch (op & 0xc0 ? op & 0xc0 : op) {
		case 0x40: /* advance_loc */
			delta = (op & 0x3f) * c->code_align;
			break;
		case 0x80: /* offset: the common register rule */
			off = scaled(ember_bytes_uleb(r), c->data_align);
			set_rule(st, c, op & 0x3f, RULE_OFFSET, off);
			continue;
		case 0xc0: /* restore */
			if (!initial)
				return 1;
			restore_rule(st, initial, op & 0x3f, c->ra_reg);
			continue;
		case 0x0c ... 0x0f: /* def_cfa, _register, _offset, _expression */
		case 0x12 ... 0x13: /* def_cfa_sf, def_cfa_offset_sf */
			if (cfa_insn(op, c, r, st))
				return 1;
			continue;
		case 0x00: /* nop */
			continue;
		case 0x01: /* set_loc */
			if (!fde || !read_pointer(r, c->fde_encoding, s, c->addr_size, &target) ||
			    target < *loc)
				return 1;
			delta = target - *loc;
			break;
		case 0x02:
			delta = ember_bytes_le(r, 1) * c->code_align;
			break;
		case 0x03:
			delta = ember_bytes_le(r, 2) * c->code_align;
			break;
		case 0x04:
			delta = ember_bytes_le(r, 4) * c->code_align;
			break;
		case 0x0a: /* remember_state */
			if (depth == MAX_REMEMBER_DEPTH)
				return 1;
			stack[depth++] = *st;
			continue;
		case 0x0b: /* restore_state */
			if (!depth)
				return 1;
			*st = stack[--depth];
			continue;
		case 0x2e: /* GNU_args_size */
			ember_bytes_uleb(r);
			continue;
		default: /* a register's rule, or an operation we do not know */
			err = register_insn(op, c, r, st, initial);
			if (err)
				return err == -ENOENT ? 1 : err;
			continue;
		}
		if (r->bad)
			return 1;
		if (!fde)
			continue; /* an advance in a CIE has no row to end */
		err = advance(b, fde, st, loc, delta);
		if (err)
			return err < 0 ? err : 0;
	}
	return r->bad ? 1 : 0;
}

static int add_fde(struct ember_cfi_builder *b, uint64_t start, uint64_t end)
{
	struct ember_cfi_fde *f;
	int err = EMBER_ENSURE(b->fdes, b->fdes_cap, b->nfdes + 1, EMBER_VEC_NO_MAX);

	if (err)
		return err;
	f = &b->fdes[b->nfdes++];
	f->start = start;
	f->end = end;
	f->first_row = b->nraw;
	f->nrows = 0;
	return 0;
}

static int parse_fde(struct ember_cfi_builder *b, const struct section *s, struct ember_bytes *r,
                     const struct cie *c)
{
	struct cfa_state st;
	struct ember_cfi_fde *fde;
	uint64_t start, range, loc;
	int err;

	if (!read_pointer(r, c->fde_encoding, s, c->addr_size, &start) ||
	    !read_pointer(r, c->fde_encoding & 0x0f, s, c->addr_size, &range))
		return 1;
	if (!range || range > MAX_FDE_RANGE || start > UINT64_MAX - range)
		return 1;
	if (c->has_z) {
		uint64_t len = ember_bytes_uleb(r);

		if (r->bad || len > (uint64_t)(r->end - r->p))
			return 1;
		r->p += len;
	}
	err = add_fde(b, start, start + range);
	if (err)
		return err;
	fde = &b->fdes[b->nfdes - 1];
	if (c->signal) {
		b->signal_fdes++;
		return emit(b, fde, start, (struct ember_unwind_row){.kind = EMBER_ROW_SIGNAL});
	}
	if (c->initial_bad)
		return emit(b, fde, start, invalid_row());
	loc = start;
	st = c->initial;
	err = run_insns(b, s, c, r, &st, &c->initial, fde, &loc);
	if (err < 0)
		return err;
	if (loc < fde->end)
		return emit(b, fde, loc, err ? invalid_row() : to_row(&st, b));
	return 0;
}

/* Runs the CIE's instructions: the state every one of its FDEs starts from. */
static void run_cie(struct ember_cfi_builder *b, const struct section *s, struct cie *c)
{
	struct ember_bytes ci = {c->insns, c->insns_end, false};
	uint64_t loc = 0;

	memset(&c->initial, 0, sizeof(c->initial));
	c->initial_bad = run_insns(b, s, c, &ci, &c->initial, NULL, NULL, &loc) != 0;
}

void ember_cfi_builder_init(struct ember_cfi_builder *b, size_t max_rows)
{
	memset(b, 0, sizeof(*b));
	b->max_rows = max_rows ? max_rows : EMBER_UNWIND_MAX_TABLE_ROWS;
}

void ember_cfi_builder_free(struct ember_cfi_builder *b)
{
	free(b->fdes);
	free(b->raw);
	memset(b, 0, sizeof(*b));
}

int ember_cfi_parse(struct ember_cfi_builder *b, const uint8_t *data, size_t len,
                    uint64_t section_vaddr, enum ember_cfi_section kind)
{
	struct section s = {data, len, section_vaddr, kind};
	size_t off = 0, cached_cie = SIZE_MAX;
	/* FDEs that alternate between CIEs make each CIE be read again: bound
	 * those bytes by a multiple of the section, far above what linkers write. */
	uint64_t cie_bytes = 0, cie_budget = 4 * (uint64_t)len + (64u << 10);
	struct cie cie;

	if (len > EMBER_CFI_MAX_SECTION)
		return -E2BIG;
	while (off + 4 <= len) {
		const uint8_t *end;
		size_t id_off, cie_off;
		uint64_t id;
		bool is_cie;
		struct ember_bytes r;
		int err;

		if (!memcmp(data + off, "\0\0\0\0", 4)) {
			/* A zero length ends .eh_frame; .debug_frame may pad with them. */
			if (kind == EMBER_CFI_EH_FRAME)
				break;
			off += 4;
			continue;
		}
		if (!open_entry(&s, off, &r, &id, &is_cie, &end, &id_off)) {
			b->bad_entries++; /* unreadable length: nothing after it can be found */
			break;
		}
		off = (size_t)(end - data);
		if (is_cie) {
			b->cies++;
			continue;
		}
		if (kind == EMBER_CFI_EH_FRAME) {
			if (id > id_off) {
				b->bad_entries++;
				continue;
			}
			cie_off = id_off - (size_t)id;
		} else {
			if (id >= len) {
				b->bad_entries++;
				continue;
			}
			cie_off = (size_t)id;
		}
		if (cie_off != cached_cie) {
			if (cie_bytes > cie_budget) {
				b->bad_entries++;
				continue;
			}
			cached_cie = cie_off;
			if (!parse_cie(&s, cie_off, &cie, &cie_bytes)) {
				/* Remembered: FDEs that all name one bad CIE read it once. */
				cie.code_align = 0;
				b->bad_entries++;
				continue;
			}
			run_cie(b, &s, &cie);
		} else if (!cie.code_align) {
			b->bad_entries++;
			continue;
		}
		err = parse_fde(b, &s, &r, &cie);
		if (err < 0)
			return err;
		if (err)
			b->bad_entries++;
	}
	return 0;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct ember_cfi_fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* Equal starts: the one parsed first (fewer rows before it) wins. */
	return x->first_row < y->first_row ? -1 : x->first_row > y->first_row;
}

static void push_row(struct ember_unwind_rows *out, uint64_t pc, struct ember_unwind_row row)
{
	struct ember_unwind_row *last = out->count ? &out->rows[out->count - 1] : NULL;

	row.pc = (uint32_t)pc;
	if (last && last->pc == row.pc) {
		*last = row;
		/* The replaced row may now equal the one before it. */
		if (out->count > 1 && same_rule(&out->rows[out->count - 2], last))
			out->count--;
		return;
	}
	if (last && same_rule(last, &row))
		return;
	out->rows[out->count++] = row;
}

int ember_cfi_finish(struct ember_cfi_builder *b, struct ember_unwind_rows *out)
{
	const struct ember_unwind_row gap = {.kind = EMBER_ROW_GAP};
	uint64_t prev_end = 0;
	bool have_prev = false;

	memset(out, 0, sizeof(*out));
	/* Every raw row, a GAP before each FDE and a final one at most. */
	out->rows = malloc((b->nraw + 2 * b->nfdes + 1) * sizeof(*out->rows));
	if (!out->rows)
		return -ENOMEM;
	if (b->nfdes > 1)
		ember_sort(b->fdes, b->nfdes, sizeof(*b->fdes), fde_cmp);
	for (size_t i = 0; i < b->nfdes; i++) {
		const struct ember_cfi_fde *f = &b->fdes[i];

		if (f->end > UINT32_MAX || (have_prev && f->start < prev_end))
			continue;
		if (have_prev && f->start > prev_end)
			push_row(out, prev_end, gap);
		for (size_t k = 0; k < f->nrows; k++)
			push_row(out, b->raw[f->first_row + k].pc, b->raw[f->first_row + k].row);
		prev_end = f->end;
		have_prev = true;
	}
	if (have_prev)
		push_row(out, prev_end, gap);
	return 0;
}

void ember_unwind_rows_free(struct ember_unwind_rows *r)
{
	free(r->rows);
	memset(r, 0, sizeof(*r));
}

const struct ember_unwind_row *ember_unwind_rows_find(const struct ember_unwind_rows *r,
                                                      uint64_t addr)
{
	size_t lo = 0, hi = r->count;

	if (!r->count || addr < r->rows[0].pc || addr > UINT32_MAX)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->rows[mid].pc <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return &r->rows[lo];
}

static int parse_section(struct ember_cfi_builder *b, Elf_Scn *scn, const GElf_Shdr *sh,
                         enum ember_cfi_section kind)
{
	Elf_Data *d;

	if (sh->sh_type == SHT_NOBITS || sh->sh_size > EMBER_CFI_MAX_SECTION)
		return 0;
	if (sh->sh_flags & SHF_COMPRESSED) {
		GElf_Chdr ch;

		/* Its size before inflating it: a small section can claim gigabytes. */
		if (!gelf_getchdr(scn, &ch) || ch.ch_size > EMBER_CFI_MAX_SECTION ||
		    elf_compress(scn, 0, 0) < 0)
			return 0;
	}
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size > EMBER_CFI_MAX_SECTION)
		return 0;
	return ember_cfi_parse(b, d->d_buf, d->d_size, sh->sh_addr, kind);
}

static int from_elf(Elf *elf, size_t max_rows, struct ember_unwind_rows *out)
{
	Elf_Scn *scn = NULL, *eh = NULL, *dbg = NULL;
	GElf_Shdr eh_sh, dbg_sh, sh;
	struct ember_cfi_builder b;
	GElf_Ehdr ehdr;
	size_t shstrndx;
	int err = 0;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr) ||
	    ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_machine != EM_X86_64 ||
	    elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!eh && !strcmp(name, ".eh_frame")) {
			eh = scn;
			eh_sh = sh;
		} else if (!dbg && !strcmp(name, ".debug_frame")) {
			dbg = scn;
			dbg_sh = sh;
		}
	}
	if (!eh && !dbg)
		return -ENOENT;
	ember_cfi_builder_init(&b, max_rows ? MIN(max_rows, EMBER_UNWIND_MAX_TABLE_ROWS)
	                                    : EMBER_UNWIND_MAX_TABLE_ROWS);
	/* .eh_frame first: where both describe an address, it wins. */
	if (eh)
		err = parse_section(&b, eh, &eh_sh, EMBER_CFI_EH_FRAME);
	if (!err && dbg)
		err = parse_section(&b, dbg, &dbg_sh, EMBER_CFI_DEBUG_FRAME);
	if (!err)
		err = b.nfdes ? ember_cfi_finish(&b, out) : -ENOENT;
	ember_cfi_builder_free(&b);
	return err;
}

int ember_cfi_from_elf(const void *image, size_t len, size_t max_rows,
                       struct ember_unwind_rows *out)
{
	Elf *elf;
	int err;

	memset(out, 0, sizeof(*out));
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, len);
	err = from_elf(elf, max_rows, out);
	elf_end(elf);
	return err;
}

int ember_cfi_from_fd(int fd, size_t max_rows, struct ember_unwind_rows *out)
{
	Elf *elf;
	int err;

	memset(out, 0, sizeof(*out));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = from_elf(elf, max_rows, out);
	elf_end(elf);
	return err;
}
