// SPDX-License-Identifier: Apache-2.0
/*
 * The Ruby frame reader on a fake process memory laid out as Ruby 3.1 lays
 * out its objects: iseq bodies (methods, blocks, the main script), labels
 * qualified as stackprof qualifies them, paths as Strings and Arrays,
 * embedded and heap Strings, the succinct line index built by Ruby's own
 * algorithm (iseq.c, succ_index_table_create) against a plain search, C
 * functions named through the symbol table and their classes' ivar tables
 * (iclasses, singleton classes), and hostile memory (wrong type flags,
 * huge lengths, indexes out of range, an iclass of an iclass, pointers
 * nowhere).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "symbolizer/interp/ruby_frames.h"

#define MEM_BASE 0x100000ull
#define MEM_SIZE (1u << 20)
#define NOWHERE  0x900000000ull /* no memory there */

/*
 * Ruby's own values (its object types, imemo kinds, FL_SINGLETON, Qnil, iseq types), as
 * Ruby writes them into its objects, restated here rather than taken from
 * ruby_frames.c: the fake memory is Ruby's truth, not the reader's, so that a wrong value
 * in the reader fails these tests (as the line index below is built by a port of Ruby's
 * own algorithm, not by the reader's).
 */
#define T_CLASS      0x02u
#define T_MODULE     0x03u
#define T_STRING     0x05u
#define T_ARRAY      0x07u
#define T_IMEMO      0x1au
#define T_ICLASS     0x1cu
#define T_MOVED      0x1eu
#define IMEMO_MENT   (6u << 12)
#define IMEMO_ISEQ   (7u << 12)
#define FL_SINGLETON (1u << 12)
#define QNIL         8u

#define TYPE_TOP    0u
#define TYPE_METHOD 1u
#define TYPE_BLOCK  2u
#define TYPE_CLASS  3u
#define TYPE_MAIN   7u

#define ENCODED 0x7f0000001000ull /* iseq_encoded: only hashed */

struct mem {
	uint8_t bytes[MEM_SIZE];
	uint64_t next;
};

static struct ember_rb_layout l;

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct mem *m = ctx;

	if (addr < MEM_BASE || addr - MEM_BASE > MEM_SIZE || len > MEM_SIZE - (addr - MEM_BASE))
		return -EFAULT;
	memcpy(buf, m->bytes + (addr - MEM_BASE), len);
	return 0;
}

static struct mem *mem_new(void)
{
	struct mem *m = calloc(1, sizeof(*m));

	ck_assert_ptr_nonnull(m);
	m->next = MEM_BASE + 0x100;
	ck_assert_int_eq(ember_rb_layout_for(3, 1, &l), 0);
	return m;
}

static uint64_t alloc(struct mem *m, size_t len)
{
	uint64_t at = m->next;

	m->next += (len + 15) & ~(size_t)15;
	ck_assert_uint_le(m->next, MEM_BASE + MEM_SIZE);
	return at;
}

static void put64(struct mem *m, uint64_t addr, uint64_t v)
{
	memcpy(m->bytes + (addr - MEM_BASE), &v, 8);
}

static void put32(struct mem *m, uint64_t addr, uint32_t v)
{
	memcpy(m->bytes + (addr - MEM_BASE), &v, 4);
}

static uint64_t get64(struct mem *m, uint64_t addr)
{
	uint64_t v;

	memcpy(&v, m->bytes + (addr - MEM_BASE), 8);
	return v;
}

/* A String: embedded (up to 23 bytes, length in the flags) unless heap. */
static uint64_t rstring(struct mem *m, const char *s, size_t n, bool heap)
{
	uint64_t o = alloc(m, 40), p;

	if (!heap) {
		ck_assert_uint_le(n, 23);
		put64(m, o, T_STRING | (uint64_t)n << 14);
		memcpy(m->bytes + (o + l.string_embed - MEM_BASE), s, n);
		return o;
	}
	p = alloc(m, n + 1);
	memcpy(m->bytes + (p - MEM_BASE), s, n);
	put64(m, o, T_STRING | 1u << 13);
	put64(m, o + l.string_len, n);
	put64(m, o + l.string_ptr, p);
	return o;
}

static uint64_t str(struct mem *m, const char *s)
{
	return rstring(m, s, strlen(s), strlen(s) > 23);
}

/* An Array: embedded (up to 3, length in bits 15-16) unless heap. */
static uint64_t rarray(struct mem *m, const uint64_t *v, size_t n, bool heap)
{
	uint64_t o = alloc(m, 40), p;

	if (!heap) {
		ck_assert_uint_le(n, 3);
		put64(m, o, T_ARRAY | 1u << 13 | (uint64_t)n << 15);
		for (size_t i = 0; i < n; i++)
			put64(m, o + l.array_embed + 8 * i, v[i]);
		return o;
	}
	p = alloc(m, 8 * n);
	for (size_t i = 0; i < n; i++)
		put64(m, p + 8 * i, v[i]);
	put64(m, o, T_ARRAY);
	put64(m, o + l.array_len, n);
	put64(m, o + l.array_ptr, p);
	return o;
}

/* An iseq object for body. */
static uint64_t iseq_obj(struct mem *m, uint64_t body)
{
	uint64_t o = alloc(m, 40);

	put64(m, o, T_IMEMO | IMEMO_ISEQ);
	put64(m, o + l.iseq_body, body);
	return o;
}

/* A body of type with its label and base label; local: its local iseq, 0 for itself. */
static uint64_t body_new(struct mem *m, uint32_t type, const char *label, const char *base,
                         uint64_t path, int32_t first, uint64_t local)
{
	uint64_t b = alloc(m, 0x140);

	put32(m, b + l.body_type, type);
	put32(m, b + l.body_size, 40);
	put64(m, b + l.body_encoded, ENCODED);
	put64(m, b + l.body_first_lineno, (uint64_t)((int64_t)first * 2 + 1));
	put64(m, b + l.body_label, str(m, label));
	put64(m, b + l.body_base_label, str(m, base));
	put64(m, b + l.body_pathobj, path);
	put64(m, b + l.body_local_iseq, local ? local : iseq_obj(m, b));
	return b;
}

static uint64_t local_of(struct mem *m, uint64_t body)
{
	return get64(m, body + l.body_local_iseq);
}

/* Ruby's succ_index_table_create (iseq.c) for the entries starting at data[0..size). */
static uint64_t succ_table(struct mem *m, uint32_t max_pos, const uint32_t *data, uint32_t size)
{
	uint32_t imm = (max_pos < 54 ? max_pos + 8 : 54) / 9;
	uint32_t blocks = max_pos < 54 ? 0 : (max_pos - 54 + 511) / 512, r = 0;
	uint64_t t = alloc(m, imm * 8 + blocks * 80);

	for (uint32_t j = 0; j < imm; j++) {
		uint64_t w = 0;

		for (uint32_t i = 0; i < 9; i++) {
			if (r < size && data[r] == j * 9 + i)
				r++;
			w |= (uint64_t)r << (7 * i);
		}
		put64(m, t + 8 * j, w);
	}
	for (uint32_t k = 0; k < blocks; k++) {
		uint64_t b = t + 48 + 80 * k, small = 0, rank = 0;

		put32(m, b, r);
		for (uint32_t j = 0; j < 8; j++) {
			uint64_t bits = 0;

			if (j)
				small |= rank << (9 * (j - 1));
			for (uint32_t i = 0; i < 64; i++)
				if (r < size && data[r] == k * 512 + j * 64 + i + 54) {
					bits |= 1ull << i;
					r++;
				}
			put64(m, b + 16 + 8 * j, bits);
			rank += (uint64_t)__builtin_popcountll(bits);
		}
		put64(m, b + 8, small);
	}
	return t;
}

/* The line table of body: entries at positions pos[] with lines line[]. */
static void put_lines(struct mem *m, uint64_t body, uint32_t iseq_size, const uint32_t *pos,
                      const int32_t *line, uint32_t n)
{
	uint64_t info = alloc(m, 12 * n);

	for (uint32_t i = 0; i < n; i++) {
		put32(m, info + 12 * i, (uint32_t)line[i]);
		put32(m, info + 12 * i + 4, i);       /* node_id */
		put32(m, info + 12 * i + 8, 1u << 1); /* events */
	}
	put32(m, body + l.body_size, iseq_size);
	put64(m, body + l.body_insns_info, info);
	put32(m, body + l.body_insns_size, n);
	put64(m, body + l.body_succ_table, n > 1 ? succ_table(m, iseq_size, pos, n) : 0);
}

static struct ember_rb_iseq read_ok(struct mem *m, uint64_t body)
{
	struct ember_rb_iseq is;

	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, body, &is), 0);
	return is;
}

START_TEST(test_method_names)
{
	struct mem *m = mem_new();
	uint64_t path = str(m, "/srv/app/lib/shop/cart.rb");
	uint64_t leaf = body_new(m, TYPE_METHOD, "leaf_a", "leaf_a", path, 14, 0);
	struct ember_rb_iseq is = read_ok(m, leaf);
	char *name;

	ck_assert_str_eq(is.name, "leaf_a");
	ck_assert_str_eq(is.label, "leaf_a");
	ck_assert_str_eq(is.method, "leaf_a");
	ck_assert_str_eq(is.path, "/srv/app/lib/shop/cart.rb");
	ck_assert_int_eq(is.first_lineno, 14);
	ck_assert_uint_eq(is.type, TYPE_METHOD);
	ck_assert_uint_eq(is.iseq_size, 40);
	/* What the walker computes from the body's window: the first line as its 8 raw bytes. */
	ck_assert_uint_eq(is.checksum,
	                  ember_interp_checksum(ENCODED, 40 | (uint64_t)TYPE_METHOD << 32, 29));
	ck_assert_int_eq(ember_rb_iseq_name(&is, "Shop::Cart", false, &name), 0);
	ck_assert_str_eq(name, "Shop::Cart#leaf_a");
	free(name);
	ck_assert_int_eq(ember_rb_iseq_name(&is, "Shop::Cart", true, &name), 0);
	ck_assert_str_eq(name, "Shop::Cart.leaf_a");
	free(name);
	ck_assert_int_eq(ember_rb_iseq_name(&is, NULL, false, &name), 0);
	ck_assert_str_eq(name, "leaf_a");
	free(name);
	ember_rb_iseq_free(&is);
	ck_assert_ptr_null(is.name);
	free(m);
}
END_TEST

START_TEST(test_block_and_script_labels)
{
	struct mem *m = mem_new();
	uint64_t path = str(m, "cart.rb");
	uint64_t run = body_new(m, TYPE_METHOD, "run", "run", path, 30, 0);
	uint64_t blk = body_new(m, TYPE_BLOCK, "block in run", "run", path, 31, local_of(m, run));
	uint64_t blk2 =
	    body_new(m, TYPE_BLOCK, "block (2 levels) in run", "run", path, 32, local_of(m, run));
	uint64_t main_ = body_new(m, TYPE_MAIN, "<main>", "<main>", path, 0, 0);
	uint64_t in_main =
	    body_new(m, TYPE_BLOCK, "block in <main>", "<main>", path, 3, local_of(m, main_));
	uint64_t cls = body_new(m, TYPE_CLASS, "<class:Cart>", "<class:Cart>", path, 2, 0);
	uint64_t top = body_new(m, TYPE_TOP, "<top (required)>", "<top (required)>", path, 0, 0);
	struct ember_rb_iseq is = read_ok(m, blk);
	char *name;

	ck_assert_str_eq(is.name, "block in run");
	ck_assert_str_eq(is.method, "run");
	ck_assert_int_eq(ember_rb_iseq_name(&is, "Shop::Cart", false, &name), 0);
	ck_assert_str_eq(name, "block in Shop::Cart#run");
	free(name);
	ember_rb_iseq_free(&is);
	is = read_ok(m, blk2);
	ck_assert_int_eq(ember_rb_iseq_name(&is, "Shop::Cart", false, &name), 0);
	ck_assert_str_eq(name, "block (2 levels) in Shop::Cart#run");
	free(name);
	ember_rb_iseq_free(&is);
	/* Outside a method a class qualifies nothing: stackprof prints the label. */
	for (int i = 0; i < 4; i++) {
		static const char *const want[] = {"<main>", "block in <main>", "<class:Cart>",
		                                   "<top (required)>"};
		uint64_t body = i == 0 ? main_ : i == 1 ? in_main : i == 2 ? cls : top;

		is = read_ok(m, body);
		ck_assert_ptr_null(is.method);
		ck_assert_str_eq(is.name, want[i]);
		ck_assert_int_eq(ember_rb_iseq_name(&is, "Object", false, &name), 0);
		ck_assert_str_eq(name, want[i]);
		free(name);
		ember_rb_iseq_free(&is);
	}
	/* An eval without a parent has no local iseq: its label. */
	put64(m, blk + l.body_local_iseq, 0);
	is = read_ok(m, blk);
	ck_assert_ptr_null(is.method);
	ck_assert_str_eq(is.name, "block in run");
	ember_rb_iseq_free(&is);
	free(m);
}
END_TEST

START_TEST(test_path_from_array)
{
	struct mem *m = mem_new();
	uint64_t pair[2] = {str(m, "lib/shop.rb"), str(m, "/srv/app/lib/shop.rb")};
	uint64_t body = body_new(m, TYPE_METHOD, "m", "m", rarray(m, pair, 2, false), 1, 0);
	struct ember_rb_iseq is = read_ok(m, body);

	ck_assert_str_eq(is.path, "lib/shop.rb");
	ember_rb_iseq_free(&is);
	put64(m, body + l.body_pathobj, rarray(m, pair, 2, true));
	is = read_ok(m, body);
	ck_assert_str_eq(is.path, "lib/shop.rb");
	ember_rb_iseq_free(&is);
	/* An empty Array, an Array of something else, a path neither. */
	put64(m, body + l.body_pathobj, rarray(m, pair, 0, false));
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, body, &is), -EBADMSG);
	put64(m, body + l.body_pathobj, rarray(m, (uint64_t[]){QNIL}, 1, false));
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, body, &is), -EBADMSG);
	put64(m, body + l.body_pathobj, local_of(m, body));
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, body, &is), -EBADMSG);
	free(m);
}
END_TEST

START_TEST(test_strings)
{
	struct mem *m = mem_new();
	char big[EMBER_RB_MAX_STRING + 1], *s;
	uint64_t o;

	memset(big, 'x', sizeof(big));
	/* Embedded up to 23 bytes, heap beyond; empty of both kinds. */
	o = rstring(m, "abcdefghijklmnopqrstuvw", 23, false);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, o, 100, &s), 0);
	ck_assert_str_eq(s, "abcdefghijklmnopqrstuvw");
	free(s);
	o = rstring(m, "abcdefghijklmnopqrstuvwxyz", 26, true);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, o, 100, &s), 0);
	ck_assert_str_eq(s, "abcdefghijklmnopqrstuvwxyz");
	free(s);
	for (int heap = 0; heap < 2; heap++) {
		ck_assert_int_eq(
		    ember_rb_read_string(&l, mem_read, m, rstring(m, "", 0, heap), 100, &s), 0);
		ck_assert_str_eq(s, "");
		free(s);
	}
	/* A NUL would cut the name short: U+FFFD. */
	o = rstring(m, "a\0b", 3, false);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, o, 100, &s), 0);
	ck_assert_str_eq(s, "a\xef\xbf\xbd"
	                    "b");
	free(s);
	/* Caps: max, and EMBER_RB_MAX_STRING whatever max says. */
	o = rstring(m, big, 30, true);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, o, 29, &s), -EBADMSG);
	ck_assert_ptr_null(s);
	o = rstring(m, big, sizeof(big), true);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, o, SIZE_MAX, &s), -EBADMSG);
	o = rstring(m, big, 10, false);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, o, 9, &s), -EBADMSG);
	free(m);
}
END_TEST

START_TEST(test_hostile_strings)
{
	struct mem *m = mem_new();
	uint64_t o = rstring(m, "abcdefghijklmnopqrstuvwxyz", 26, true);
	char *s;

	/* An embedded length past the 24 bytes there are (the mask allows 31). */
	put64(m, o, T_STRING | 31ull << 14);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, o, 100, &s), -EBADMSG);
	/* A heap length of 2^63, a pointer nowhere, a NULL pointer. */
	put64(m, o, T_STRING | 1u << 13);
	put64(m, o + l.string_len, 1ull << 63);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, o, 100, &s), -EBADMSG);
	put64(m, o + l.string_len, 26);
	put64(m, o + l.string_ptr, NOWHERE);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, o, 100, &s), -EFAULT);
	put64(m, o + l.string_ptr, 0);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, o, 100, &s), -EBADMSG);
	/* Not a String; special constants; misaligned; nowhere. */
	put64(m, o, T_ARRAY | 1u << 13);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, o, 100, &s), -EBADMSG);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, QNIL, 100, &s), -EBADMSG);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, 0, 100, &s), -EBADMSG);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, 0x2a1, 100, &s), -EBADMSG);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, o + 4, 100, &s), -EBADMSG);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, NOWHERE, 100, &s), -EFAULT);
	ck_assert_int_eq(ember_rb_read_string(&l, mem_read, m, 1ull << 60, 100, &s), -EBADMSG);
	free(m);
}
END_TEST

/* The line Ruby gives instruction pos: the last entry starting at or before it. */
static int32_t plain_line(const uint32_t *pos, const int32_t *line, uint32_t n, uint32_t at)
{
	uint32_t k = 0;

	while (k + 1 < n && pos[k + 1] <= at)
		k++;
	return line[k];
}

/* Tables of every size class: immediate part only, exactly 54, one block, several. */
START_TEST(test_succinct_lines)
{
	static const uint32_t sizes[] = {1, 2, 10, 53, 54, 55, 100, 566, 567, 1200, 5000};
	struct mem *m = mem_new();
	uint64_t body = body_new(m, TYPE_METHOD, "m", "m", str(m, "m.rb"), 10, 0);
	uint32_t *pos = malloc(5000 * sizeof(*pos));
	int32_t *line = malloc(5000 * sizeof(*line));

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint32_t size = sizes[s], n = 0;
		struct ember_rb_iseq is;

		/* Instructions of 1 to 6 words; a line per entry, up and down. */
		for (uint32_t at = 0; at < size; at += 1 + (at * 7 + s) % 6, n++) {
			pos[n] = at;
			line[n] = (int32_t)(10 + (n * 13) % 40);
		}
		put_lines(m, body, size, pos, line, n);
		is = read_ok(m, body);
		ck_assert_int_eq(is.lines_error, 0);
		ck_assert_uint_eq(is.nlines, n);
		for (uint32_t at = 0; at < size; at++) {
			int32_t got = 0;

			ck_assert_int_eq(ember_rb_iseq_line(&is, at, &got), 0);
			ck_assert_msg(got == plain_line(pos, line, n, at),
			              "size %u pos %u: %d not %d", size, at, got,
			              plain_line(pos, line, n, at));
		}
		ck_assert_int_eq(ember_rb_iseq_line(&is, size, &(int32_t){0}), -ENOENT);
		ck_assert_int_eq(ember_rb_iseq_line(&is, UINT32_MAX, &(int32_t){0}), -ENOENT);
		ember_rb_iseq_free(&is);
	}
	free(pos);
	free(line);
	free(m);
}
END_TEST

/* iseq.c's own example, the index written out by hand: entries at 0, 2 and 8 of 10. */
START_TEST(test_succinct_by_hand)
{
	struct mem *m = mem_new();
	uint64_t body = body_new(m, TYPE_METHOD, "m", "m", str(m, "m.rb"), 10, 0);
	uint64_t info = alloc(m, 36), t = alloc(m, 16);
	/* rank(x) for x = 0..8: 1 1 2 2 2 2 2 2 3; x = 9: 3. 7 bits each. */
	static const uint64_t ranks[] = {1, 1, 2, 2, 2, 2, 2, 2, 3};
	static const int32_t want[] = {1, 1, 2, 2, 2, 2, 2, 2, 3, 3};
	uint64_t w = 0;
	struct ember_rb_iseq is;

	for (int i = 0; i < 9; i++)
		w |= ranks[i] << (7 * i);
	put64(m, t, w);
	put64(m, t + 8, 3);
	for (int i = 0; i < 3; i++)
		put32(m, info + 12 * i, (uint32_t)i + 1);
	put32(m, body + l.body_size, 10);
	put64(m, body + l.body_insns_info, info);
	put32(m, body + l.body_insns_size, 3);
	put64(m, body + l.body_succ_table, t);
	is = read_ok(m, body);
	for (uint32_t x = 0; x < 10; x++) {
		int32_t got;

		ck_assert_int_eq(ember_rb_iseq_line(&is, x, &got), 0);
		ck_assert_int_eq(got, want[x]);
	}
	ember_rb_iseq_free(&is);
	free(m);
}
END_TEST

START_TEST(test_hostile_line_tables)
{
	struct mem *m = mem_new();
	uint64_t body = body_new(m, TYPE_METHOD, "m", "m", str(m, "m.rb"), 10, 0);
	static const uint32_t pos[] = {0, 3, 60};
	static const int32_t line[] = {11, 0, 13};
	struct ember_rb_iseq is;
	int32_t got;

	/* No table: the frame keeps its name, its lines are unknown. */
	is = read_ok(m, body);
	ck_assert_int_eq(is.lines_error, 0);
	ck_assert_int_eq(ember_rb_iseq_line(&is, 0, &got), -ENOENT);
	ember_rb_iseq_free(&is);
	/* One entry: its line everywhere (no index). Line 0: none. */
	put_lines(m, body, 100, pos, line, 1);
	is = read_ok(m, body);
	ck_assert_int_eq(ember_rb_iseq_line(&is, 99, &got), 0);
	ck_assert_int_eq(got, 11);
	ember_rb_iseq_free(&is);
	put_lines(m, body, 100, pos, line, 3);
	is = read_ok(m, body);
	ck_assert_int_eq(ember_rb_iseq_line(&is, 4, &got), -ENOENT);
	ck_assert_int_eq(ember_rb_iseq_line(&is, 70, &got), 0);
	ck_assert_int_eq(got, 13);
	ember_rb_iseq_free(&is);
	/* An index whose ranks point past the 3 entries, or before the first. */
	put64(m, get64(m, body + l.body_succ_table), 0x7full);
	put32(m, get64(m, body + l.body_succ_table) + 48, 200);
	is = read_ok(m, body);
	ck_assert_int_eq(ember_rb_iseq_line(&is, 0, &got), -EBADMSG);
	ck_assert_int_eq(ember_rb_iseq_line(&is, 1, &got), -EBADMSG);
	ck_assert_int_eq(ember_rb_iseq_line(&is, 70, &got), -EBADMSG);
	ember_rb_iseq_free(&is);
	/* More entries than instructions; the entries or index nowhere: lines unknown. */
	put32(m, body + l.body_insns_size, 101);
	is = read_ok(m, body);
	ck_assert_int_eq(is.lines_error, -EBADMSG);
	ck_assert_int_eq(ember_rb_iseq_line(&is, 0, &got), -ENOENT);
	ember_rb_iseq_free(&is);
	put32(m, body + l.body_insns_size, 3);
	put64(m, body + l.body_succ_table, NOWHERE);
	is = read_ok(m, body);
	ck_assert_int_eq(is.lines_error, -EFAULT);
	ck_assert_int_eq(ember_rb_iseq_line(&is, 0, &got), -ENOENT);
	ember_rb_iseq_free(&is);
	put64(m, body + l.body_succ_table, 0);
	is = read_ok(m, body);
	ck_assert_int_eq(is.lines_error, -EBADMSG);
	ember_rb_iseq_free(&is);
	free(m);
}
END_TEST

START_TEST(test_hostile_bodies)
{
	struct mem *m = mem_new();
	uint64_t path = str(m, "m.rb");
	uint64_t run = body_new(m, TYPE_METHOD, "run", "run", path, 30, 0);
	uint64_t blk = body_new(m, TYPE_BLOCK, "block in run", "run", path, 31, local_of(m, run));
	uint64_t local = local_of(m, run);
	struct ember_rb_iseq is;

	/* Type past ISEQ_TYPE_PLAIN, size over 2^20, a first line not a Fixnum or out of int32. */
	put32(m, blk + l.body_type, 9);
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, blk, &is), -EBADMSG);
	put32(m, blk + l.body_type, TYPE_BLOCK);
	put32(m, blk + l.body_size, EMBER_RB_MAX_ISEQ + 1);
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, blk, &is), -EBADMSG);
	put32(m, blk + l.body_size, 40);
	put64(m, blk + l.body_first_lineno, 62);
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, blk, &is), -EBADMSG);
	put64(m, blk + l.body_first_lineno, (1ull << 33) | 1);
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, blk, &is), -EBADMSG);
	put64(m, blk + l.body_first_lineno, 63);
	/* Its local iseq not an iseq: another imemo, not an imemo, a body that is not one. */
	put64(m, local, T_IMEMO | IMEMO_MENT);
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, blk, &is), -EBADMSG);
	put64(m, local, T_STRING);
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, blk, &is), -EBADMSG);
	put64(m, local, T_IMEMO | IMEMO_ISEQ);
	put32(m, run + l.body_type, 77);
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, blk, &is), -EBADMSG);
	put32(m, run + l.body_type, TYPE_METHOD);
	put64(m, local + l.iseq_body, NOWHERE);
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, blk, &is), -EFAULT);
	put64(m, local + l.iseq_body, run);
	/* A label not a String; a body nowhere, misaligned, in the kernel. */
	put64(m, blk + l.body_label, local);
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, blk, &is), -EBADMSG);
	ck_assert_ptr_null(is.name);
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, NOWHERE, &is), -EFAULT);
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, run + 4, &is), -EBADMSG);
	ck_assert_int_eq(ember_rb_read_iseq(&l, mem_read, m, 0xffff800000001000ull, &is), -EBADMSG);
	/* A layout whose offsets lie outside their windows is refused, not followed. */
	{
		struct ember_rb_layout bad = l;

		bad.body_label = 300;
		ck_assert_int_eq(ember_rb_read_iseq(&bad, mem_read, m, run, &is), -EINVAL);
	}
	free(m);
}
END_TEST

/* The symbol table: ids[serial / 512][2 * (serial % 512)], chunks of 1024 slots. */
static uint64_t symtab(struct mem *m, uint32_t last_id, uint64_t *chunks, size_t nchunks)
{
	uint64_t t = alloc(m, 0x20);

	for (size_t c = 0; c < nchunks; c++) {
		uint64_t slots[1024];

		for (size_t i = 0; i < 1024; i++)
			slots[i] = QNIL;
		chunks[c] = rarray(m, slots, 1024, true);
	}
	put32(m, t + l.symbols_last_id, last_id);
	put64(m, t + l.symbols_ids, rarray(m, chunks, nchunks, nchunks > 3));
	return t;
}

/* Symbol serial named name; its id as Ruby makes a local name's (serial << 4 | static bit). */
static uint64_t add_sym(struct mem *m, const uint64_t *chunks, uint32_t serial, const char *name)
{
	uint64_t slots = get64(m, chunks[serial / 512] + l.array_ptr);

	put64(m, slots + 8 * (2 * (serial % 512)), str(m, name));
	return (uint64_t)serial << 4 | 1;
}

struct ivar {
	uint64_t key, value;
	bool deleted; /* st.c marks a deleted entry by its hash, ~0; its key stays */
};

/* A class (flags) with ivars in its rb_classext_t's st_table. */
static uint64_t rclass(struct mem *m, uint64_t flags, const struct ivar *iv, size_t n)
{
	uint64_t c = alloc(m, 40), ext = alloc(m, 0x80), st = alloc(m, 0x38);
	uint64_t entries = alloc(m, 24 * (n + 1));

	put64(m, c, flags);
	put64(m, c + l.class_ext, ext);
	put64(m, ext + l.ext_iv_tbl, n ? st : 0);
	m->bytes[st - MEM_BASE + l.st_entry_power] = 3;
	put64(m, st + l.st_entries_start, 0);
	put64(m, st + l.st_entries_bound, n);
	put64(m, st + l.st_entries, entries);
	for (size_t i = 0; i < n; i++) {
		put64(m, entries + 24 * i + l.st_entry_hash, iv[i].deleted ? ~0ull : i * 77);
		put64(m, entries + 24 * i + l.st_entry_key, iv[i].key);
		put64(m, entries + 24 * i + l.st_entry_record, iv[i].value);
	}
	return c;
}

static uint64_t new_cme(struct mem *m, uint64_t defined_class, unsigned int def_type, uint64_t id)
{
	uint64_t me = alloc(m, 40), def = alloc(m, 0x30);

	put64(m, me, T_IMEMO | IMEMO_MENT);
	put64(m, me + l.cme_defined_class, defined_class);
	put64(m, me + l.cme_def, def);
	put64(m, me + l.cme_called_id, id);
	put64(m, me + l.cme_owner, defined_class);
	m->bytes[def - MEM_BASE + l.def_type] = (uint8_t)(0x10 | def_type); /* iseq_overload set */
	put64(m, def + l.def_original_id, id);
	return me;
}

/* A process: Integer, Kernel (included: an iclass), Process and its singleton class. */
struct proc {
	struct mem *m;
	struct ember_rb_symbols syms;
	uint64_t chunks[2], classpath, attached, times, sleep_, gettime;
	uint64_t integer, kernel, iclass, process, process_meta;
};

static void proc_new(struct proc *p)
{
	struct mem *m = p->m = mem_new();
	uint64_t table = symtab(m, 900, p->chunks, 2);

	p->classpath = add_sym(m, p->chunks, 700, "__classpath__");
	p->attached = add_sym(m, p->chunks, 0xc1, "__attached__");
	p->times = add_sym(m, p->chunks, 300, "times");
	p->sleep_ = add_sym(m, p->chunks, 512, "sleep");
	p->gettime = add_sym(m, p->chunks, 899, "clock_gettime");
	add_sym(m, p->chunks, 600, "@ivar");
	p->integer =
	    rclass(m, T_CLASS, (struct ivar[]){{p->classpath, str(m, "Integer"), false}}, 1);
	p->kernel = rclass(
	    m, T_MODULE,
	    (struct ivar[]){{600ull << 4, QNIL, false}, {p->classpath, str(m, "Kernel"), false}},
	    2);
	p->iclass = rclass(m, T_ICLASS, NULL, 0);
	put64(m, p->iclass + 8, p->kernel);
	p->process =
	    rclass(m, T_MODULE, (struct ivar[]){{p->classpath, str(m, "Process"), false}}, 1);
	p->process_meta =
	    rclass(m, T_CLASS | FL_SINGLETON, (struct ivar[]){{p->attached, p->process, false}}, 1);
	ember_rb_symbols_init(&l, table, &p->syms);
}

static void expect_cfunc(struct proc *p, uint64_t klass, uint64_t id, const char *want)
{
	uint64_t me = new_cme(p->m, klass, 1, id);
	struct ember_rb_cfunc c;

	ck_assert_int_eq(ember_rb_read_cfunc(&l, mem_read, p->m, &p->syms, me, &c), 0);
	ck_assert_str_eq(c.name, want);
	ck_assert_uint_eq(c.checksum,
	                  ember_interp_checksum(get64(p->m, me + l.cme_def), id, klass));
	ember_rb_cfunc_free(&c);
}

START_TEST(test_cfunc_names)
{
	struct proc p;
	char *s;

	proc_new(&p);
	/* The id of __classpath__ is learnt from the first class named; __attached__ is fixed. */
	ck_assert_uint_eq(p.syms.classpath, 0);
	ck_assert_uint_eq(p.syms.attached, 0xc11);
	expect_cfunc(&p, p.integer, p.times, "Integer#times");
	ck_assert_uint_eq(p.syms.classpath, p.classpath);
	expect_cfunc(&p, p.iclass, p.sleep_, "Kernel#sleep");
	expect_cfunc(&p, p.process_meta, p.gettime, "Process.clock_gettime");
	/* Ids at or below tLAST_OP_ID are their own serial. */
	add_sym(p.m, p.chunks, 43, "+");
	expect_cfunc(&p, p.integer, 43, "Integer#+");
	ck_assert_int_eq(ember_rb_id_name(&l, mem_read, p.m, p.syms.table, p.times, &s), 0);
	ck_assert_str_eq(s, "times");
	free(s);
	/* The class path alone, and through a method entry. */
	ck_assert_int_eq(ember_rb_method_class(&l, mem_read, p.m, &p.syms,
	                                       new_cme(p.m, p.process_meta, 0, p.times), &s,
	                                       &(bool){false}),
	                 0);
	ck_assert_str_eq(s, "Process");
	free(s);
	free(p.m);
}
END_TEST

START_TEST(test_class_paths)
{
	struct proc p;
	bool singleton;
	uint64_t anon, tmp, obj_meta, meta_meta;
	char *s;

	proc_new(&p);
	/* A deleted entry for the key is skipped; a temporary path when there is no other. */
	tmp = add_sym(p.m, p.chunks, 701, "__tmp_classpath__");
	expect_cfunc(&p, p.integer, p.times, "Integer#times"); /* learns __classpath__'s id */
	anon = rclass(p.m, T_CLASS, (struct ivar[]){{p.classpath, str(p.m, "Gone"), true}}, 1);
	ck_assert_int_eq(ember_rb_class_path(&l, mem_read, p.m, &p.syms, anon, &s, &singleton),
	                 -ENOENT);
	anon =
	    rclass(p.m, T_CLASS, (struct ivar[]){{tmp, str(p.m, "#<Class:0x1>::Inner"), false}}, 1);
	ck_assert_int_eq(ember_rb_class_path(&l, mem_read, p.m, &p.syms, anon, &s, &singleton), 0);
	ck_assert_str_eq(s, "#<Class:0x1>::Inner");
	ck_assert(!singleton);
	free(s);
	/* Anonymous (no ivars): the bare method name. */
	expect_cfunc(&p, rclass(p.m, T_CLASS, NULL, 0), p.times, "times");
	/* A singleton class of an object, of a singleton class: no path. */
	obj_meta = rclass(p.m, T_CLASS | FL_SINGLETON,
	                  (struct ivar[]){{p.attached, str(p.m, "x"), false}}, 1);
	ck_assert_int_eq(ember_rb_class_path(&l, mem_read, p.m, &p.syms, obj_meta, &s, &singleton),
	                 -ENOENT);
	meta_meta = rclass(p.m, T_CLASS | FL_SINGLETON,
	                   (struct ivar[]){{p.attached, p.process_meta, false}}, 1);
	ck_assert_int_eq(ember_rb_class_path(&l, mem_read, p.m, &p.syms, meta_meta, &s, &singleton),
	                 -ENOENT);
	expect_cfunc(&p, meta_meta, p.times, "times");
	free(p.m);
}
END_TEST

START_TEST(test_hostile_symbols_and_classes)
{
	struct proc p;
	uint64_t me, bad, st;
	struct ember_rb_cfunc c;
	bool singleton;
	char *s;

	proc_new(&p);
	/* Ids: 0, past the last id, a serial of 2^24, a nil slot, a table nowhere or unknown. */
	ck_assert_int_eq(ember_rb_id_name(&l, mem_read, p.m, p.syms.table, 0, &s), -ENOENT);
	ck_assert_int_eq(ember_rb_id_name(&l, mem_read, p.m, p.syms.table, 901 << 4, &s), -ENOENT);
	ck_assert_int_eq(ember_rb_id_name(&l, mem_read, p.m, p.syms.table, 1ull << 28, &s),
	                 -ENOENT);
	ck_assert_int_eq(ember_rb_id_name(&l, mem_read, p.m, p.syms.table, 800 << 4, &s), -ENOENT);
	ck_assert_int_eq(ember_rb_id_name(&l, mem_read, p.m, NOWHERE, p.times, &s), -EFAULT);
	ck_assert_int_eq(ember_rb_id_name(&l, mem_read, p.m, 0, p.times, &s), -ENOENT);
	/* A last id of 2^24, ids not an Array, a chunk index past the Array. */
	put32(p.m, p.syms.table + l.symbols_last_id, EMBER_RB_MAX_SERIAL);
	ck_assert_int_eq(ember_rb_id_name(&l, mem_read, p.m, p.syms.table, p.times, &s), -EBADMSG);
	put32(p.m, p.syms.table + l.symbols_last_id, 5000);
	ck_assert_int_eq(ember_rb_id_name(&l, mem_read, p.m, p.syms.table, 4000 << 4, &s), -ENOENT);
	put64(p.m, get64(p.m, p.syms.table + l.symbols_ids), T_STRING);
	ck_assert_int_eq(ember_rb_id_name(&l, mem_read, p.m, p.syms.table, p.times, &s), -EBADMSG);
	put64(p.m, get64(p.m, p.syms.table + l.symbols_ids), T_ARRAY | 1u << 13 | 2u << 15);
	/* Method entries: not a ment, not a C function, a definition nowhere. */
	me = new_cme(p.m, p.integer, 1, p.times);
	put64(p.m, me, T_IMEMO | IMEMO_ISEQ);
	ck_assert_int_eq(ember_rb_read_cfunc(&l, mem_read, p.m, &p.syms, me, &c), -EBADMSG);
	ck_assert_ptr_null(c.name);
	me = new_cme(p.m, p.integer, 0, p.times);
	ck_assert_int_eq(ember_rb_read_cfunc(&l, mem_read, p.m, &p.syms, me, &c), -EBADMSG);
	put64(p.m, me + l.cme_def, NOWHERE);
	ck_assert_int_eq(ember_rb_read_cfunc(&l, mem_read, p.m, &p.syms, me, &c), -EFAULT);
	/* Classes: an iclass of an iclass, not a class, a table past its 2^power entries. */
	bad = rclass(p.m, T_ICLASS, NULL, 0);
	put64(p.m, bad + 8, p.iclass);
	ck_assert_int_eq(ember_rb_class_path(&l, mem_read, p.m, &p.syms, bad, &s, &singleton),
	                 -EBADMSG);
	expect_cfunc(&p, bad, p.times, "times");
	ck_assert_int_eq(
	    ember_rb_class_path(&l, mem_read, p.m, &p.syms, p.syms.table, &s, &singleton),
	    -EBADMSG);
	st = get64(p.m, get64(p.m, p.integer + l.class_ext) + l.ext_iv_tbl);
	put64(p.m, st + l.st_entries_bound, 9);
	ck_assert_int_eq(ember_rb_class_path(&l, mem_read, p.m, &p.syms, p.integer, &s, &singleton),
	                 -EBADMSG);
	put64(p.m, st + l.st_entries_start, 2);
	put64(p.m, st + l.st_entries_bound, 1);
	ck_assert_int_eq(ember_rb_class_path(&l, mem_read, p.m, &p.syms, p.integer, &s, &singleton),
	                 -EBADMSG);
	/* A table of 2^20 entries is looked at for its first EMBER_RB_MAX_IVARS only. */
	{
		uint64_t e = alloc(p.m, 24 * (EMBER_RB_MAX_IVARS + 1));

		p.m->bytes[st - MEM_BASE + l.st_entry_power] = 20;
		put64(p.m, st + l.st_entries_start, 0);
		put64(p.m, st + l.st_entries_bound, 1u << 20);
		put64(p.m, st + l.st_entries, e);
		put64(p.m, e + 24 * EMBER_RB_MAX_IVARS + l.st_entry_key, p.classpath);
		put64(p.m, e + 24 * EMBER_RB_MAX_IVARS + l.st_entry_record, str(p.m, "Integer"));
		ck_assert_int_eq(
		    ember_rb_class_path(&l, mem_read, p.m, &p.syms, p.integer, &s, &singleton),
		    -ENOENT);
		put64(p.m, e + 24 * (EMBER_RB_MAX_IVARS - 1) + l.st_entry_key, p.classpath);
		put64(p.m, e + 24 * (EMBER_RB_MAX_IVARS - 1) + l.st_entry_record,
		      str(p.m, "Integer"));
		ck_assert_int_eq(
		    ember_rb_class_path(&l, mem_read, p.m, &p.syms, p.integer, &s, &singleton), 0);
		ck_assert_str_eq(s, "Integer");
		free(s);
	}
	free(p.m);
}
END_TEST

/* The slot an object left under GC.compact: T_MOVED, its new place at +16 (gc.c's RMoved). */
static uint64_t moved_to(struct mem *m, uint64_t to)
{
	uint64_t slot = alloc(m, 40);

	put64(m, slot, T_MOVED);
	put64(m, slot + 16, to);
	return slot;
}

/*
 * While GC.compact runs, references not yet updated lead to the slots objects left: a
 * class, its path string and a method entry are found at their new places (the name is
 * the one the method had, never a bare one); a second hop, or a destination that is no
 * pointer, is refused.
 */
START_TEST(test_objects_moved_by_compaction)
{
	struct proc p;
	struct ember_rb_cfunc c;
	uint64_t moved, me;
	bool singleton;
	char *s;

	proc_new(&p);
	expect_cfunc(&p, p.integer, p.times, "Integer#times");
	moved = moved_to(p.m, p.integer);
	expect_cfunc(&p, moved, p.times, "Integer#times");
	expect_cfunc(&p, moved_to(p.m, p.process_meta), p.gettime, "Process.clock_gettime");
	/* The path string moved too. */
	{
		uint64_t st = get64(p.m, get64(p.m, p.process + l.class_ext) + l.ext_iv_tbl);
		uint64_t entry = get64(p.m, st + l.st_entries) + l.st_entry_record;

		put64(p.m, entry, moved_to(p.m, get64(p.m, entry)));
		expect_cfunc(&p, p.process_meta, p.gettime, "Process.clock_gettime");
	}
	/* The method entry itself: read at its new place, checked by its checksum. */
	me = new_cme(p.m, p.integer, 1, p.times);
	ck_assert_int_eq(ember_rb_read_cfunc(&l, mem_read, p.m, &p.syms, moved_to(p.m, me), &c), 0);
	ck_assert_str_eq(c.name, "Integer#times");
	ck_assert_uint_eq(c.checksum,
	                  ember_interp_checksum(get64(p.m, me + l.cme_def), p.times, p.integer));
	ember_rb_cfunc_free(&c);
	/* Two hops, a destination nowhere or not a pointer: refused, never followed on. */
	ck_assert_int_eq(
	    ember_rb_class_path(&l, mem_read, p.m, &p.syms, moved_to(p.m, moved), &s, &singleton),
	    -EBADMSG);
	ck_assert_int_eq(
	    ember_rb_class_path(&l, mem_read, p.m, &p.syms, moved_to(p.m, NOWHERE), &s, &singleton),
	    -EFAULT);
	ck_assert_int_eq(
	    ember_rb_class_path(&l, mem_read, p.m, &p.syms, moved_to(p.m, 7), &s, &singleton),
	    -EBADMSG);
	free(p.m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ruby_frames");
	TCase *tc = tcase_create("core");

	ember_tcase_cpu_bound(tc);
	tcase_add_test(tc, test_method_names);
	tcase_add_test(tc, test_block_and_script_labels);
	tcase_add_test(tc, test_path_from_array);
	tcase_add_test(tc, test_strings);
	tcase_add_test(tc, test_hostile_strings);
	tcase_add_test(tc, test_succinct_lines);
	tcase_add_test(tc, test_succinct_by_hand);
	tcase_add_test(tc, test_hostile_line_tables);
	tcase_add_test(tc, test_hostile_bodies);
	tcase_add_test(tc, test_cfunc_names);
	tcase_add_test(tc, test_class_paths);
	tcase_add_test(tc, test_hostile_symbols_and_classes);
	tcase_add_test(tc, test_objects_moved_by_compaction);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
