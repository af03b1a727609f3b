// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/dwarf.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/memory/mem_owners.h"
#include "symbolizer/symbols/debug_image.h"
#include "shared/sorted.h"
#include "shared/vec.h"

#define NO_NODE UINT32_MAX

/* A function or an inlined call with code: one frame of an inline chain. */
struct node {
	const char *name;
	const char *decl_file;
	const char *call_file; /* where the parent calls this inlined instance */
	uint32_t decl_line;
	uint32_t call_line;
	uint32_t parent;
};

/* A run of addresses whose deepest inline instance is node. */
struct seg {
	uint64_t lo, hi;
	uint32_t node;
};

struct unit {
	Dwarf_Die cudie;
	const char *comp_dir; /* DW_AT_comp_dir once expanded, or NULL */
	bool expanded;
	bool failed;
	struct node *nodes;
	size_t nnodes, nodes_cap;
	struct seg *segs;
	size_t nsegs;
	Dwarf_Files *files;
	size_t nfiles;
	Dwarf_Half version; /* of the unit's header: file 0 names a file from DWARF 5 on */
};

struct unit_range {
	uint64_t lo, hi;
	uint32_t unit;
};

/*
 * Relative source file names joined with their unit's DW_AT_comp_dir (or
 * NULL: kept as they are), by the address of libdw's string (stable while
 * the handle lives): open addressing.
 */
struct path_slot {
	const char *relative;
	char *joined;
};

struct ember_dwarf {
	Dwarf *dw;
	struct ember_debug_image image; /* of compressed sections, when dw reads one */
	struct path_slot *paths;
	size_t npaths, paths_cap;
	struct unit *units;
	size_t nunits;
	struct unit_range *ranges;
	size_t nranges;
	size_t bytes;
	uint64_t dies;
	uint64_t ranges_read; /* of functions and inlined calls, over all units */
	uint64_t errors;
};

/* A range of an inline instance while a unit is being expanded. */
struct span {
	uint64_t lo, hi;
	uint32_t node;
	uint32_t depth;
};

struct expander {
	struct ember_dwarf *d;
	struct unit *u;
	struct span *spans;
	size_t nspans, spans_cap;
	uint32_t *depths; /* per node */
	size_t depths_cap;
	Dwarf_Off unit_end; /* section offset where the unit ends, 0 if unknown */
};

static int cmp_unit_range(const void *a, const void *b)
{
	const struct unit_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Heap taken since opening began (counted0: the owner's count then), measured or estimated. */
static size_t taken(const struct ember_dwarf *d, size_t counted0)
{
	size_t now;

	if (!ember_mem_counting())
		return d->nunits * EMBER_DWARF_UNIT_BYTES;
	now = ember_mem_owner_bytes((enum ember_mem_owner)ember_mem_tag);
	return now > counted0 ? now - counted0 : 0;
}

static int read_units(struct ember_dwarf *d, size_t max_bytes, size_t counted0)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie;
	size_t units_cap = 0, ranges_cap = 0;
	int r;

	/* No subdie: asking for it makes libdw look for .dwo files by path. */
	while ((r = dwarf_get_units(d->dw, cu, &next, &version, &unit_type, &cudie, NULL)) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		unsigned int n = 0;

		cu = next;
		if (max_bytes != SIZE_MAX && taken(d, counted0) > max_bytes)
			return -ENOBUFS; /* no room: given up before it takes more */
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue; /* type units have no code; split units are not read */
		if (d->nunits == EMBER_DWARF_MAX_UNITS) {
			d->errors++;
			break;
		}
		if (EMBER_ENSURE(d->units, units_cap, d->nunits + 1, EMBER_VEC_NO_MAX))
			return -ENOMEM;
		memset(&d->units[d->nunits], 0, sizeof(d->units[0]));
		d->units[d->nunits].cudie = cudie;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0 &&
		       n++ < EMBER_DWARF_MAX_DIE_RANGES) {
			if (hi <= lo)
				continue;
			/* Units can share one long range list: the total is capped too. */
			if (d->nranges == EMBER_DWARF_MAX_CU_RANGES) {
				d->errors++;
				break;
			}
			if (EMBER_ENSURE(d->ranges, ranges_cap, d->nranges + 1, EMBER_VEC_NO_MAX))
				return -ENOMEM;
			d->ranges[d->nranges++] = (struct unit_range){lo, hi, (uint32_t)d->nunits};
		}
		d->nunits++;
	}
	if (r < 0)
		d->errors++; /* a broken unit header ends the list; keep what was read */
	if (d->nranges > 1)
		qsort(d->ranges, d->nranges, sizeof(*d->ranges), cmp_unit_range);
	d->bytes += units_cap * sizeof(*d->units) + ranges_cap * sizeof(*d->ranges);
	return d->nranges ? 0 : -ENODATA;
}

int ember_dwarf_open(Elf *elf, Dwarf *alt, struct ember_dwarf **out)
{
	return ember_dwarf_open_within(elf, alt, SIZE_MAX, out);
}

int ember_dwarf_open_within(Elf *elf, Dwarf *alt, size_t max_bytes, struct ember_dwarf **out)
{
	size_t counted0 = ember_mem_owner_bytes((enum ember_mem_owner)ember_mem_tag);
	struct ember_dwarf *d = calloc(1, sizeof(*d));
	int err;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	/* Compressed sections: those lookups read, inflated into an image libdw reads. */
	err = ember_debug_image_open(elf, EMBER_DWARF_MAX_INFLATED, &d->image);
	if (err && err != -ENOENT && err != -ENOTSUP) {
		free(d);
		return err == -EINVAL ? -ENODATA : err;
	}
	d->dw = dwarf_begin_elf(d->image.elf ? d->image.elf : elf, DWARF_C_READ, NULL);
	if (!d->dw) {
		ember_debug_image_close(&d->image);
		free(d);
		return -ENODATA;
	}
	if (alt)
		dwarf_setalt(d->dw, alt);
	d->bytes = sizeof(*d);
	err = read_units(d, max_bytes, counted0);
	if (err) {
		ember_dwarf_close(d);
		return err;
	}
	*out = d;
	return 0;
}

static void unit_free(struct unit *u)
{
	free(u->nodes);
	free(u->segs);
	u->nodes = NULL;
	u->segs = NULL;
	u->nnodes = u->nsegs = u->nodes_cap = 0;
}

void ember_dwarf_close(struct ember_dwarf *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nunits; i++)
		unit_free(&d->units[i]);
	for (size_t i = 0; i < d->paths_cap; i++)
		free(d->paths[i].joined);
	free(d->paths);
	free(d->units);
	free(d->ranges);
	if (d->dw)
		dwarf_end(d->dw);
	ember_debug_image_close(&d->image);
	free(d);
}

size_t ember_dwarf_bytes(const struct ember_dwarf *d)
{
	return d ? d->bytes : 0;
}

size_t ember_dwarf_image_bytes(const struct ember_dwarf *d)
{
	return d ? d->image.len : 0;
}

uint64_t ember_dwarf_errors(const struct ember_dwarf *d)
{
	return d ? d->errors : 0;
}

static const char *die_string(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute a;

	return dwarf_formstring(dwarf_attr_integrate(die, name, &a));
}

/*
 * The mangled linkage name when there is one (C++, Rust: demangled later,
 * kept as the system name), else the source name: a C function's linkage
 * name is at best an alias (glibc's __GI_ names), at worst a clone's.
 */
static const char *function_name(Dwarf_Die *die)
{
	const char *name = die_string(die, DW_AT_linkage_name);

	if (!name)
		name = die_string(die, DW_AT_MIPS_linkage_name);
	if (name && name[0] == '_' && (name[1] == 'Z' || name[1] == 'R'))
		return name;
	return dwarf_diename(die) ? dwarf_diename(die) : name;
}

static size_t path_hash(const char *p, size_t cap)
{
	return (size_t)(((uint64_t)(uintptr_t)p >> 3) * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
}

static int paths_grow(struct ember_dwarf *d)
{
	size_t cap = d->paths_cap ? d->paths_cap * 2 : 64;
	struct path_slot *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < d->paths_cap; i++) {
		size_t h;

		if (!d->paths[i].relative)
			continue;
		for (h = path_hash(d->paths[i].relative, cap); v[h].relative;
		     h = (h + 1) & (cap - 1))
			;
		v[h] = d->paths[i];
	}
	free(d->paths);
	d->bytes += (cap - d->paths_cap) * sizeof(*v);
	d->paths = v;
	d->paths_cap = cap;
	return 0;
}

/*
 * The file name as eu-addr2line and llvm-symbolizer print it: a relative name
 * (the compiler was given a relative path) joined with the unit's
 * compilation directory, so that it can be opened. The directory itself may
 * be relative (Debian builds with -ffile-prefix-map=BUILDDIR=., which makes
 * glibc's "./stdlib"): then the joined name is relative to the source tree,
 * "./stdlib/../sysdeps/unix/syscall-template.S". A file of the compilation
 * directory itself comes from libdw under that directory already
 * ("./libio/genops.c"): joined again, as both peers do, it would name
 * "./libio/./libio/genops.c", which does not exist. Falls back to the name as
 * it is when it cannot be joined.
 */
static const char *absolute(struct ember_dwarf *d, const struct unit *u, const char *name)
{
	size_t h, dir_len, name_len = 0;
	char *joined = NULL;

	if (!name || name[0] == '/' || !u->comp_dir || !u->comp_dir[0])
		return name;
	/* Asked at every address looked up: the answer is kept, joined or not
	 * (NULL: the name as it is). */
	if (d->paths_cap)
		for (h = path_hash(name, d->paths_cap); d->paths[h].relative;
		     h = (h + 1) & (d->paths_cap - 1))
			if (d->paths[h].relative == name)
				return d->paths[h].joined ? d->paths[h].joined : name;
	if (d->npaths == EMBER_DWARF_MAX_PATHS ||
	    (2 * (d->npaths + 1) > d->paths_cap && paths_grow(d)))
		return name;
	dir_len = strnlen(u->comp_dir, EMBER_DWARF_MAX_PATH);
	while (dir_len > 1 && u->comp_dir[dir_len - 1] == '/')
		dir_len--;
	if (u->comp_dir[0] == '/' || strncmp(name, u->comp_dir, dir_len) || name[dir_len] != '/') {
		if (dir_len == 1 && u->comp_dir[0] == '/')
			dir_len = 0; /* "/" gets its slash back below */
		name_len = strnlen(name, EMBER_DWARF_MAX_PATH);
		joined = malloc(dir_len + 1 + name_len + 1);
		if (!joined)
			return name;
		memcpy(joined, u->comp_dir, dir_len);
		joined[dir_len] = '/';
		memcpy(joined + dir_len + 1, name, name_len);
		joined[dir_len + 1 + name_len] = '\0';
		d->bytes += dir_len + name_len + 2;
	}
	for (h = path_hash(name, d->paths_cap); d->paths[h].relative;
	     h = (h + 1) & (d->paths_cap - 1))
		;
	d->paths[h] = (struct path_slot){name, joined};
	d->npaths++;
	return joined ? joined : name;
}

static const char *unit_file(const struct unit *u, Dwarf_Word idx)
{
	if (!u->files || idx >= u->nfiles || (!idx && u->version < 5))
		return NULL;
	return dwarf_filesrc(u->files, idx, NULL, NULL);
}

/* dwarf_decl_file() of elfutils before 0.191 takes file 0 for none, as DWARF 4 meant it; from
 * DWARF 5 on (clang's default) it is the unit's primary file, where most functions are
 * declared. The attribute is read here when it is this unit's; else (another unit's, through
 * an abstract origin) libdw finds that unit's file table. */
static const char *decl_file(const struct unit *u, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (!dwarf_attr_integrate(die, DW_AT_decl_file, &a))
		return NULL;
	if (a.cu != u->cudie.cu)
		return dwarf_decl_file(die);
	return dwarf_formudata(&a, &w) ? NULL : unit_file(u, w);
}

static int add_node(struct expander *x, Dwarf_Die *die, int tag, uint32_t parent, uint32_t depth,
                    uint32_t *out)
{
	struct unit *u = x->u;
	Dwarf_Addr base, lo, hi;
	Dwarf_Attribute a;
	Dwarf_Word w;
	ptrdiff_t off = 0;
	unsigned int n = 0;
	struct node *nd;
	int line = 0;
	uint32_t id = (uint32_t)u->nnodes;

	*out = NO_NODE;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0 &&
	       n++ < EMBER_DWARF_MAX_DIE_RANGES) {
		if (hi <= lo)
			continue;
		if (x->nspans == EMBER_DWARF_MAX_UNIT_RANGES ||
		    ++x->d->ranges_read > EMBER_DWARF_MAX_FILE_RANGES)
			return -E2BIG;
		if (EMBER_ENSURE(x->spans, x->spans_cap, x->nspans + 1, EMBER_VEC_NO_MAX))
			return -ENOMEM;
		x->spans[x->nspans++] = (struct span){lo, hi, id, depth};
	}
	if (!n)
		return 0; /* a declaration or an instance without code */
	if (EMBER_ENSURE(u->nodes, u->nodes_cap, u->nnodes + 1, EMBER_VEC_NO_MAX))
		return -ENOMEM;
	if (EMBER_ENSURE(x->depths, x->depths_cap, u->nnodes + 1, EMBER_VEC_NO_MAX))
		return -ENOMEM;
	nd = &u->nodes[u->nnodes++];
	memset(nd, 0, sizeof(*nd));
	nd->parent = parent;
	nd->name = function_name(die);
	nd->decl_file = absolute(x->d, u, decl_file(u, die));
	if (!dwarf_decl_line(die, &line) && line > 0)
		nd->decl_line = (uint32_t)line;
	if (tag == DW_TAG_inlined_subroutine) {
		if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &w))
			nd->call_file = absolute(x->d, u, unit_file(u, w));
		if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &w) && w < UINT32_MAX)
			nd->call_line = (uint32_t)w;
	}
	x->depths[id] = depth;
	*out = id;
	return 0;
}

/* Tags whose children may hold functions or inlined calls. */
static bool may_hold_code(int tag)
{
	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_lexical_block:
	case DW_TAG_namespace:
	case DW_TAG_module:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
		return true;
	default:
		return false;
	}
}

struct walk_entry {
	Dwarf_Die die;
	uint32_t scope; /* node of the enclosing function, or NO_NODE */
	uint32_t depth; /* inline depth of the enclosing function */
	bool visited;
};

/*
 * The DIE after the 0 byte at term that ended last's list of siblings: the
 * next sibling of last's parent. Returns 0 (*next set), 1 when the parent's
 * list ends too (next->addr is that list's 0 byte, or NULL at the end of the
 * unit) or -1. Asking libdw for the parent's sibling instead would walk the
 * parent's subtree again: once per level, depth times the unit for a chain.
 */
static int after_terminator(const struct expander *x, Dwarf_Die *last, const uint8_t *term,
                            Dwarf_Die *next)
{
	Dwarf_Off at = dwarf_dieoffset(last);
	ptrdiff_t delta = term - (const uint8_t *)last->addr;

	next->addr = NULL;
	if (delta <= 0 || at == (Dwarf_Off)-1 || at + (Dwarf_Off)delta >= x->unit_end)
		return -1;
	at += (Dwarf_Off)delta + 1;
	if (at >= x->unit_end)
		return 1; /* the unit ends here: every open list ends with it */
	if (term[1] == 0) {
		next->addr = (void *)(term + 1);
		return 1;
	}
	return dwarf_offdie(x->d->dw, at, next) ? 0 : -1;
}

/*
 * Visits e's DIE: a function or an inlined call becomes a node. Returns 1
 * when its children are to be walked (c, if not NULL, is the first one), 0
 * when the walk goes on with its sibling, or a negative errno.
 */
static int visit(struct expander *x, struct walk_entry *e, struct walk_entry *c)
{
	int tag = dwarf_tag(&e->die), err;
	uint32_t scope = e->scope, level = e->depth, node;

	e->visited = true;
	if (++x->d->dies > EMBER_DWARF_MAX_DIES)
		return -E2BIG;
	if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
		err = add_node(x, &e->die, tag, scope, scope == NO_NODE ? 0 : level + 1, &node);
		if (err)
			return err;
		if (node == NO_NODE)
			return 0; /* no code: nothing inside matters */
		scope = node;
		level = x->depths[node];
	}
	if (!c || !may_hold_code(tag) || dwarf_haschildren(&e->die) <= 0 ||
	    dwarf_child(&e->die, &c->die) != 0)
		return 0;
	c->scope = scope;
	c->depth = level;
	c->visited = false;
	return 1;
}

static int walk_unit(struct expander *x)
{
	struct walk_entry *stack = malloc(EMBER_DWARF_MAX_DEPTH * sizeof(*stack));
	size_t depth = 0;
	Dwarf_Die sib;
	int err = 0;

	if (!stack)
		return -ENOMEM;
	if (dwarf_child(&x->u->cudie, &stack[0].die) != 0) {
		free(stack);
		return 0;
	}
	stack[0].scope = NO_NODE;
	stack[0].depth = 0;
	stack[0].visited = false;
	depth = 1;
	while (depth && !err) {
		struct walk_entry *e = &stack[depth - 1];
		int r;

		if (!e->visited) {
			r = visit(x, e, depth < EMBER_DWARF_MAX_DEPTH ? &stack[depth] : NULL);
			if (r < 0) {
				err = r;
				break;
			}
			if (r == 1) {
				depth++;
				continue;
			}
		}
		sib.addr = NULL;
		r = dwarf_siblingof(&e->die, &sib);
		/* A list ended: its 0 byte (libdw gives it) says where the parent's goes on. */
		while (r == 1 && sib.addr && x->unit_end && depth > 1) {
			const uint8_t *term = sib.addr;
			Dwarf_Die *last = &e->die;

			e = &stack[--depth - 1];
			r = after_terminator(x, last, term, &sib);
			if (r < 0) {
				sib.addr = NULL;
				r = dwarf_siblingof(&e->die, &sib); /* the slow way */
			} else if (r == 1 && !sib.addr) {
				depth = 1; /* the end of the unit */
			}
		}
		if (r == 0) {
			e->die = sib;
			e->visited = false;
			continue;
		}
		if (r < 0)
			err = -EBADMSG;
		depth--;
	}
	free(stack);
	return err;
}

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1; /* the enclosing one first */
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static int emit(struct unit *u, size_t *cap, uint64_t lo, uint64_t hi, uint32_t node)
{
	if (hi <= lo)
		return 0;
	if (u->nsegs && u->segs[u->nsegs - 1].hi == lo && u->segs[u->nsegs - 1].node == node) {
		u->segs[u->nsegs - 1].hi = hi;
		return 0;
	}
	if (EMBER_ENSURE(u->segs, *cap, u->nsegs + 1, EMBER_VEC_NO_MAX))
		return -ENOMEM;
	u->segs[u->nsegs++] = (struct seg){lo, hi, node};
	return 0;
}

/*
 * Flattens nested spans into disjoint segments, each naming the deepest span
 * over it. Spans that overlap without nesting (malformed) are clipped to
 * their enclosing span.
 */
static int flatten(struct expander *x, size_t *segs_cap)
{
	struct span *stack;
	size_t depth = 0;
	uint64_t cur = 0;
	int err = 0;

	if (!x->nspans)
		return 0;
	stack = malloc(x->nspans * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	qsort(x->spans, x->nspans, sizeof(*x->spans), cmp_span);
	for (size_t i = 0; i < x->nspans && !err; i++) {
		struct span s = x->spans[i];

		while (depth && stack[depth - 1].hi <= s.lo && !err) {
			struct span *top = &stack[--depth];

			if (cur < top->hi)
				err = emit(x->u, segs_cap, cur, top->hi, top->node);
			if (cur < top->hi)
				cur = top->hi;
		}
		if (depth && cur < s.lo)
			err = emit(x->u, segs_cap, cur, s.lo, stack[depth - 1].node);
		if (cur < s.lo)
			cur = s.lo;
		if (s.lo < cur)
			s.lo = cur; /* overlaps what was emitted: malformed */
		if (depth && s.hi > stack[depth - 1].hi)
			s.hi = stack[depth - 1].hi;
		if (s.hi > s.lo)
			stack[depth++] = s;
	}
	while (depth && !err) {
		struct span *top = &stack[--depth];

		if (cur < top->hi) {
			err = emit(x->u, segs_cap, cur, top->hi, top->node);
			cur = top->hi;
		}
	}
	free(stack);
	return err;
}

static int expand_unit(struct ember_dwarf *d, struct unit *u)
{
	struct expander x = {.d = d, .u = u};
	Dwarf_Off start = dwarf_dieoffset(&u->cudie) - dwarf_cuoffset(&u->cudie);
	Dwarf_Attribute attr;
	size_t segs_cap = 0;
	int err;

	u->expanded = true;
	/* Read here, not for every unit at open: only expanded units name files. */
	u->comp_dir = dwarf_formstring(dwarf_attr(&u->cudie, DW_AT_comp_dir, &attr));
	if (dwarf_next_unit(d->dw, start, &x.unit_end, NULL, &u->version, NULL, NULL, NULL, NULL,
	                    NULL))
		x.unit_end = 0;
	if (dwarf_getsrcfiles(&u->cudie, &u->files, &u->nfiles) != 0) {
		u->files = NULL;
		u->nfiles = 0;
	}
	err = walk_unit(&x);
	if (!err)
		err = flatten(&x, &segs_cap);
	free(x.spans);
	free(x.depths);
	if (err) {
		unit_free(u);
		u->failed = true;
		d->errors++;
		return err;
	}
	d->bytes += u->nodes_cap * sizeof(*u->nodes) + segs_cap * sizeof(*u->segs);
	return 0;
}

static struct unit *find_unit(struct ember_dwarf *d, uint64_t addr)
{
	size_t lo = EMBER_UPPER_BOUND(d->ranges, d->nranges, lo, addr);

	/* Unit ranges rarely overlap; look a few back in case they do. */
	for (size_t i = lo, tries = 0; i > 0 && tries < 8; i--, tries++)
		if (addr < d->ranges[i - 1].hi)
			return &d->units[d->ranges[i - 1].unit];
	return NULL;
}

static const struct seg *find_seg(const struct unit *u, uint64_t addr)
{
	size_t lo = EMBER_UPPER_BOUND(u->segs, u->nsegs, lo, addr);

	if (!lo || addr >= u->segs[lo - 1].hi)
		return NULL;
	return &u->segs[lo - 1];
}

/* The estimated heap expanding u takes, from its size in .debug_info. */
static size_t unit_cost(struct ember_dwarf *d, struct unit *u)
{
	Dwarf_Off start = dwarf_dieoffset(&u->cudie) - dwarf_cuoffset(&u->cudie), end;

	/* A header that does not say where the unit ends: the walk's caps hold it. */
	if (dwarf_next_unit(d->dw, start, &end, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ||
	    end <= start || end - start > SIZE_MAX / EMBER_DWARF_EXPAND_PER_DIE_BYTE / 2)
		return EMBER_DWARF_UNIT_BYTES;
	return (size_t)(end - start) * EMBER_DWARF_EXPAND_PER_DIE_BYTE + EMBER_DWARF_UNIT_BYTES;
}

size_t ember_dwarf_expand_cost(struct ember_dwarf *d, uint64_t addr)
{
	struct unit *u = find_unit(d, addr);

	return u && !u->expanded ? unit_cost(d, u) : 0;
}

int ember_dwarf_lookup(struct ember_dwarf *d, uint64_t addr, struct ember_sym_frames *out)
{
	return ember_dwarf_lookup_within(d, addr, SIZE_MAX, out);
}

int ember_dwarf_lookup_within(struct ember_dwarf *d, uint64_t addr, size_t max_bytes,
                              struct ember_sym_frames *out)
{
	struct unit *u = find_unit(d, addr);
	struct ember_sym_frame *f;
	const struct seg *seg;
	Dwarf_Line *line;
	uint32_t node;
	int lineno = 0;

	out->n = 0;
	if (!u)
		return -ENOENT;
	if (!u->expanded && max_bytes != SIZE_MAX && unit_cost(d, u) > max_bytes)
		return -ENOBUFS;
	if (!u->expanded && expand_unit(d, u) == -ENOMEM)
		return -ENOMEM;
	f = &out->f[0];
	memset(f, 0, sizeof(*f));
	line = dwarf_getsrc_die(&u->cudie, addr);
	if (line) {
		f->file = absolute(d, u, dwarf_linesrc(line, NULL, NULL));
		if (!dwarf_lineno(line, &lineno) && lineno > 0)
			f->line = (uint32_t)lineno;
	}
	out->n = 1;
	seg = u->failed ? NULL : find_seg(u, addr);
	if (!seg)
		return line ? 0 : -ENOENT;
	/* Node ids only point back to earlier nodes: the walk ends. */
	for (node = seg->node; node != NO_NODE && node < u->nnodes;) {
		const struct node *nd = &u->nodes[node];

		f->name = nd->name;
		f->decl_file = nd->decl_file;
		f->decl_line = nd->decl_line;
		if (nd->parent == NO_NODE || nd->parent >= node || out->n == EMBER_SYM_MAX_FRAMES)
			break;
		f = &out->f[out->n++];
		memset(f, 0, sizeof(*f));
		f->file = nd->call_file;
		f->line = nd->call_line;
		node = nd->parent;
	}
	return 0;
}
