// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/profile/flame_tree.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ember_flame_kind_name(uint8_t kind)
{
	if (kind == EMBER_FLAME_KIND_PROCESS)
		return "process";
	if (kind == EMBER_FLAME_KIND_ALL)
		return "all";
	return ember_frame_kind_name((enum ember_frame_kind)kind);
}

/* ---- strings ---------------------------------------------------------------- */

static int intern_cstr(struct ember_flame *t, const char *s, uint32_t *out)
{
	return ember_strset_intern(&t->strings, s, strlen(s), out);
}

const char *ember_flame_str(const struct ember_flame *t, uint32_t id)
{
	return ember_strset_str(&t->strings, id);
}

size_t ember_flame_nstrings(const struct ember_flame *t)
{
	return ember_strset_count(&t->strings);
}

/* ---- functions and nodes ------------------------------------------------------ */

struct func_key {
	uint32_t name, file, kind;
};

static bool func_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct ember_flame_func *f = ember_flame_func(ctx, value);
	struct func_key k = {f->name, f->file, f->kind};

	return len == sizeof(k) && !memcmp(&k, key, len);
}

/* Functions are told apart by name, kind and file; the line only labels them. */
static int func_get(struct ember_flame *t, uint32_t name, uint32_t file, uint8_t kind,
                    uint32_t line, uint32_t *out)
{
	struct func_key k = {name, file, kind};
	struct ember_flame_func f = {.name = name, .file = file, .line = line, .kind = kind};
	uint64_t h = ember_hash(&t->hash_key, &k, sizeof(k));
	int r;

	if (!ember_index_find(&t->func_index, h, &k, sizeof(k), func_eq, t, out)) {
		struct ember_flame_func *have =
		    EMBER_VEC_AT(t->funcs, struct ember_flame_func, *out);

		if (!have->line)
			have->line = line;
		return 0;
	}
	if (t->funcs.len >= UINT32_MAX - 1 || !ember_vec_push(&t->funcs, &f, 1))
		return -ENOMEM;
	r = ember_index_upsert(&t->func_index, h, &k, sizeof(k), func_eq, t,
	                       (uint32_t)(t->funcs.len - 1), out);
	if (r < 0)
		t->funcs.len--;
	return r < 0 ? r : 0;
}

struct node_key {
	uint32_t parent, func;
};

static bool node_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct ember_flame_node *n = ember_flame_node(ctx, value);
	struct node_key k = {n->parent, n->func};

	return len == sizeof(k) && !memcmp(&k, key, len);
}

static int child_get(struct ember_flame *t, uint32_t parent, uint32_t func, uint32_t *out)
{
	struct node_key k = {parent, func};
	uint64_t h = ember_hash(&t->hash_key, &k, sizeof(k));
	struct ember_flame_node *p, fresh = {
					.func = func,
					.parent = parent,
					.first_child = EMBER_NONE,
					.next_sibling = EMBER_NONE,
				    };
	uint32_t id = (uint32_t)t->nodes.len;
	int r;

	if (!ember_index_find(&t->node_index, h, &k, sizeof(k), node_eq, t, out))
		return 0;
	if (id >= UINT32_MAX - 1)
		return -ENOMEM;
	p = EMBER_VEC_AT(t->nodes, struct ember_flame_node, parent);
	fresh.depth = p->depth + 1;
	fresh.next_sibling = p->first_child;
	if (!ember_vec_push(&t->nodes, &fresh, 1))
		return -ENOMEM;
	r = ember_index_upsert(&t->node_index, h, &k, sizeof(k), node_eq, t, id, out);
	if (r < 0) {
		t->nodes.len--;
		return r;
	}
	/* The push may have moved the array. */
	EMBER_VEC_AT(t->nodes, struct ember_flame_node, parent)->first_child = id;
	if (fresh.depth > t->max_depth)
		t->max_depth = fresh.depth;
	return 0;
}

int ember_flame_init(struct ember_flame *t, bool by_pid)
{
	struct ember_flame_node root = {
	    .parent = EMBER_NONE,
	    .first_child = EMBER_NONE,
	    .next_sibling = EMBER_NONE,
	};
	uint32_t empty, all;
	int err;

	memset(t, 0, sizeof(*t));
	t->by_pid = by_pid;
	ember_vec_init(&t->funcs, sizeof(struct ember_flame_func));
	ember_vec_init(&t->nodes, sizeof(struct ember_flame_node));
	ember_index_init(&t->func_index);
	ember_index_init(&t->node_index);
	err = ember_hash_key_init(&t->hash_key);
	if (!err)
		err = ember_strset_init(&t->strings, EMBER_STRTAB_MAX_BYTES);
	if (!err)
		err = intern_cstr(t, "", &empty);
	if (!err)
		err = intern_cstr(t, "all", &all);
	if (!err)
		err = func_get(t, all, 0, EMBER_FLAME_KIND_ALL, 0, &root.func);
	if (!err && !ember_vec_push(&t->nodes, &root, 1))
		err = -ENOMEM;
	if (err)
		ember_flame_free(t);
	return err;
}

void ember_flame_free(struct ember_flame *t)
{
	ember_strset_free(&t->strings);
	ember_vec_free(&t->funcs);
	ember_vec_free(&t->nodes);
	ember_index_free(&t->func_index);
	ember_index_free(&t->node_index);
}

/* ---- adding a profile ---------------------------------------------------------- */

/*
 * Per-profile caches from the profile's indices to tree functions, so that
 * each distinct function is interned once rather than once per frame.
 */
struct add_ctx {
	struct ember_flame *t;
	const struct ember_profile *p;
	uint32_t *fn_cache;  /* [function * EMBER_FRAME_KIND_MAX + kind] -> func + 1 */
	uint32_t *loc_cache; /* [location] -> func + 1, for locations without lines */
};

static int func_of_line(struct add_ctx *c, const struct ember_line *line, uint8_t kind,
                        uint32_t *out)
{
	const struct ember_profile *p = c->p;
	const struct ember_function *f;
	size_t slot;
	uint32_t name, file;
	int64_t l;
	int err;

	if (line->function >= p->functions.len || kind >= EMBER_FRAME_KIND_MAX)
		return -EINVAL;
	slot = (size_t)line->function * EMBER_FRAME_KIND_MAX + kind;
	if (c->fn_cache[slot]) {
		*out = c->fn_cache[slot] - 1;
		return 0;
	}
	f = ember_profile_function(p, line->function);
	err = intern_cstr(c->t, ember_profile_str(p, f->name), &name);
	if (!err)
		err = intern_cstr(c->t, ember_profile_str(p, f->filename), &file);
	l = f->start_line > 0 ? f->start_line : line->line;
	if (!err)
		err = func_get(c->t, name, file, kind, l > 0 && l < UINT32_MAX ? (uint32_t)l : 0,
		               out);
	if (!err)
		c->fn_cache[slot] = *out + 1;
	return err;
}

static int func_of_bare_location(struct add_ctx *c, uint32_t loc_id, uint32_t *out)
{
	const struct ember_location *loc = ember_profile_location(c->p, loc_id);
	char buf[512];
	uint32_t name;
	int err;

	if (c->loc_cache[loc_id]) {
		*out = c->loc_cache[loc_id] - 1;
		return 0;
	}
	ember_profile_unsymbolized_name(c->p, loc, buf, sizeof(buf));
	err = intern_cstr(c->t, buf, &name);
	if (!err)
		err = func_get(c->t, name, 0,
		               loc->kind < EMBER_FRAME_KIND_MAX ? loc->kind : EMBER_FRAME_UNKNOWN,
		               0, out);
	if (!err)
		c->loc_cache[loc_id] = *out + 1;
	return err;
}

static int process_node(struct add_ctx *c, const struct ember_sample_key *key, uint32_t *out)
{
	const char *comm = ember_profile_str(c->p, key->comm);
	char buf[300];
	uint32_t name, func;
	int err;

	if (!*comm)
		comm = "[unknown]";
	if (c->t->by_pid && key->pid)
		snprintf(buf, sizeof(buf), "%s [%" PRIu32 "]", comm, key->pid);
	else
		snprintf(buf, sizeof(buf), "%s", comm);
	err = intern_cstr(c->t, buf, &name);
	if (!err)
		err = func_get(c->t, name, 0, EMBER_FLAME_KIND_PROCESS, 0, &func);
	if (!err)
		err = child_get(c->t, 0, func, out);
	return err;
}

static void node_add(struct ember_flame *t, uint32_t node, int slot, uint64_t count)
{
	struct ember_flame_node *n = EMBER_VEC_AT(t->nodes, struct ember_flame_node, node);

	n->total[slot] += count;
}

static int add_sample(struct add_ctx *c, const struct ember_sample *s, int slot, uint64_t value)
{
	const struct ember_profile *p = c->p;
	const struct ember_stack *st;
	const uint32_t *locs;
	uint32_t node, func;
	int err;

	if (s->key.stack >= p->stacks.len)
		return -EINVAL;
	st = ember_profile_stack(p, s->key.stack);
	locs = ember_profile_stack_locations(p, st);
	node_add(c->t, 0, slot, value);
	err = process_node(c, &s->key, &node);
	if (err)
		return err;
	node_add(c->t, node, slot, value);
	for (uint32_t i = st->depth; i-- > 0;) {
		const struct ember_location *loc;
		const struct ember_line *lines;

		if (locs[i] >= p->locations.len)
			return -EINVAL;
		loc = ember_profile_location(p, locs[i]);
		lines = ember_profile_location_lines(p, loc);
		if (!loc->nlines) {
			err = func_of_bare_location(c, locs[i], &func);
			if (!err)
				err = child_get(c->t, node, func, &node);
			if (err)
				return err;
			node_add(c->t, node, slot, value);
			continue;
		}
		/* The containing function is the last line; inlined callees precede it. */
		for (uint32_t j = loc->nlines; j-- > 0;) {
			err = func_of_line(c, &lines[j], loc->kind, &func);
			if (!err)
				err = child_get(c->t, node, func, &node);
			if (err)
				return err;
			node_add(c->t, node, slot, value);
		}
	}
	return 0;
}

int ember_flame_add_profile(struct ember_flame *t, const struct ember_profile *p, int slot)
{
	return ember_flame_add_profile_view(t, p, slot, p->view);
}

int ember_flame_add_profile_view(struct ember_flame *t, const struct ember_profile *p, int slot,
                                 enum ember_view view)
{
	struct add_ctx c = {.t = t, .p = p};
	int err = 0;

	if (slot < 0 || slot >= EMBER_FLAME_SLOTS)
		return -EINVAL;
	c.fn_cache = calloc(p->functions.len * EMBER_FRAME_KIND_MAX + 1, sizeof(uint32_t));
	c.loc_cache = calloc(p->locations.len + 1, sizeof(uint32_t));
	if (!c.fn_cache || !c.loc_cache)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < p->samples.len; i++) {
		const struct ember_sample *s = ember_profile_sample(p, (uint32_t)i);
		uint64_t value = ember_sample_value(p, s, view);

		if (!value)
			continue;
		err = add_sample(&c, s, slot, value);
		if (!err)
			t->slot_total[slot] += value;
	}
	free(c.fn_cache);
	free(c.loc_cache);
	return err;
}

/* ---- finishing ------------------------------------------------------------------ */

static int cmp_child(const void *a, const void *b, void *ctx)
{
	const struct ember_flame *t = ctx;
	const struct ember_flame_node *x = ember_flame_node(t, *(const uint32_t *)a);
	const struct ember_flame_node *y = ember_flame_node(t, *(const uint32_t *)b);
	const struct ember_flame_func *fx = ember_flame_func(t, x->func);
	const struct ember_flame_func *fy = ember_flame_func(t, y->func);
	int c = strcmp(ember_flame_str(t, fx->name), ember_flame_str(t, fy->name));

	if (c)
		return c;
	if (fx->kind != fy->kind)
		return fx->kind < fy->kind ? -1 : 1;
	c = strcmp(ember_flame_str(t, fx->file), ember_flame_str(t, fy->file));
	if (c)
		return c;
	return x->func < y->func ? -1 : x->func > y->func;
}

int ember_flame_finish(struct ember_flame *t)
{
	struct ember_flame_node *nodes = t->nodes.items;
	size_t n = t->nodes.len;
	uint32_t *kids = malloc((n ? n : 1) * sizeof(*kids));

	if (!kids)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct ember_flame_node *node = &nodes[i];
		size_t nk = 0;

		for (int s = 0; s < EMBER_FLAME_SLOTS; s++)
			node->self[s] = node->total[s];
		for (uint32_t k = node->first_child; k != EMBER_NONE; k = nodes[k].next_sibling) {
			kids[nk++] = k;
			for (int s = 0; s < EMBER_FLAME_SLOTS; s++)
				node->self[s] -= nodes[k].total[s];
		}
		if (nk < 2)
			continue;
		qsort_r(kids, nk, sizeof(*kids), cmp_child, t);
		node->first_child = kids[0];
		for (size_t k = 0; k + 1 < nk; k++)
			nodes[kids[k]].next_sibling = kids[k + 1];
		nodes[kids[nk - 1]].next_sibling = EMBER_NONE;
	}
	free(kids);
	return 0;
}
