// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/profile/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/memory/mem_owners.h"

#define INTERP_KIND(id, number, name, kind) [EMBER_FRAME_INTERP(number)] = kind,
static const char *const frame_kind_names[EMBER_FRAME_KIND_MAX] = {[EMBER_FRAME_UNKNOWN] =
                                                                       "unknown",
                                                                   [EMBER_FRAME_KERNEL] = "kernel",
                                                                   [EMBER_FRAME_NATIVE] = "native",
                                                                   [EMBER_FRAME_GO] = "go",
                                                                   EMBER_RUNTIMES(INTERP_KIND)};
#undef INTERP_KIND

static const char *const view_names[EMBER_VIEW_MAX] = {
    [EMBER_VIEW_CPU] = "cpu",
    [EMBER_VIEW_OFF_CPU] = "off-cpu",
    [EMBER_VIEW_BOTH] = "both",
};

int ember_view_parse(const char *name, enum ember_view *out)
{
	for (int v = 0; v < EMBER_VIEW_MAX; v++)
		if (!strcmp(name, view_names[v])) {
			*out = (enum ember_view)v;
			return 0;
		}
	return -EINVAL;
}

const char *ember_view_name(enum ember_view v)
{
	return (unsigned)v < EMBER_VIEW_MAX ? view_names[v] : "cpu";
}

const char *ember_frame_kind_name(enum ember_frame_kind kind)
{
	return (unsigned)kind < EMBER_FRAME_KIND_MAX && frame_kind_names[kind]
	           ? frame_kind_names[kind]
	           : "unknown";
}

enum ember_frame_kind ember_frame_kind_parse(const char *name)
{
	for (int k = 0; k < EMBER_FRAME_KIND_MAX; k++)
		if (frame_kind_names[k] && !strcmp(name, frame_kind_names[k]))
			return (enum ember_frame_kind)k;
	return EMBER_FRAME_UNKNOWN;
}

/* Dedup keys: explicit structs without padding so that hashing the bytes is sound. */
struct mapping_key {
	uint64_t start, limit, file_offset;
	uint32_t filename, gnu_build_id, go_build_id, file_hash;
};

struct function_key {
	uint32_t name, system_name, filename, reserved;
	int64_t start_line;
};

struct location_key {
	uint64_t address;
	uint32_t mapping, kind;
};

static struct mapping_key mapping_key_of(const struct ember_mapping *m)
{
	return (struct mapping_key){m->start,        m->limit,       m->file_offset, m->filename,
	                            m->gnu_build_id, m->go_build_id, m->file_hash};
}

static struct function_key function_key_of(const struct ember_function *f)
{
	return (struct function_key){f->name, f->system_name, f->filename, 0, f->start_line};
}

static bool mapping_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	struct mapping_key k = mapping_key_of(ember_profile_mapping(ctx, value));

	return len == sizeof(k) && !memcmp(&k, key, len);
}

static bool function_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	struct function_key k = function_key_of(ember_profile_function(ctx, value));

	return len == sizeof(k) && !memcmp(&k, key, len);
}

static bool location_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct ember_location *l = ember_profile_location(ctx, value);
	struct location_key k = {l->address, l->mapping,
	                         l->kind | (l->call ? EMBER_LOCATION_CALL : 0)};

	return len == sizeof(k) && !memcmp(&k, key, len);
}

static bool stack_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct ember_profile *p = ctx;
	const struct ember_stack *s = ember_profile_stack(p, value);

	return len == s->depth * sizeof(uint32_t) &&
	       (!len || !memcmp(ember_profile_stack_locations(p, s), key, len));
}

static bool sample_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	return len == sizeof(struct ember_sample_key) &&
	       !memcmp(&ember_profile_sample(ctx, value)->key, key, len);
}

static bool process_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct ember_profile *p = ctx;

	return len == sizeof(uint32_t) &&
	       !memcmp(&EMBER_VEC_AT(p->processes, struct ember_process_attrs, value)->pid, key,
	               len);
}

static void profile_init_tables(struct ember_profile *p)
{
	ember_vec_init(&p->mappings, sizeof(struct ember_mapping));
	ember_vec_init(&p->functions, sizeof(struct ember_function));
	ember_vec_init(&p->lines, sizeof(struct ember_line));
	ember_vec_init(&p->locations, sizeof(struct ember_location));
	ember_vec_init(&p->stack_pool, sizeof(uint32_t));
	ember_vec_init(&p->stacks, sizeof(struct ember_stack));
	ember_vec_init(&p->samples, sizeof(struct ember_sample));
	ember_vec_init(&p->stats, sizeof(struct ember_stat));
	ember_vec_init(&p->processes, sizeof(struct ember_process_attrs));
	ember_index_init(&p->process_index);
	ember_index_init(&p->mapping_index);
	ember_index_init(&p->function_index);
	ember_index_init(&p->location_index);
	ember_index_init(&p->stack_index);
	ember_index_init(&p->sample_index);
	p->total_count = 0;
	p->total_off_cpu_ns = 0;
}

static void profile_free_tables(struct ember_profile *p)
{
	for (size_t i = 0; i < p->samples.len; i++)
		free(EMBER_VEC_AT(p->samples, struct ember_sample, i)->timestamps);
	ember_vec_free(&p->mappings);
	ember_vec_free(&p->functions);
	ember_vec_free(&p->lines);
	ember_vec_free(&p->locations);
	ember_vec_free(&p->stack_pool);
	ember_vec_free(&p->stacks);
	ember_vec_free(&p->samples);
	ember_vec_free(&p->stats);
	ember_vec_free(&p->processes);
	ember_index_free(&p->process_index);
	ember_index_free(&p->mapping_index);
	ember_index_free(&p->function_index);
	ember_index_free(&p->location_index);
	ember_index_free(&p->stack_index);
	ember_index_free(&p->sample_index);
}

int ember_profile_init(struct ember_profile *p)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	uint32_t empty;
	int err;

	memset(p, 0, sizeof(*p));
	err = ember_hash_key_init(&p->hash_key);
	if (!err)
		err = ember_strset_init(&p->strings, EMBER_STRTAB_MAX_BYTES);
	if (err)
		return err;
	profile_init_tables(p);
	return ember_profile_intern(p, "", 0, &empty);
}

void ember_profile_free(struct ember_profile *p)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	profile_free_tables(p);
	ember_strset_free(&p->strings);
}

int ember_profile_reset(struct ember_profile *p)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	uint32_t empty;

	profile_free_tables(p);
	ember_strset_clear(&p->strings);
	profile_init_tables(p);
	return ember_profile_intern(p, "", 0, &empty);
}

int ember_profile_intern(struct ember_profile *p, const char *s, size_t len, uint32_t *out)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);

	return ember_strset_intern(&p->strings, s, len, out);
}

int ember_profile_intern_cstr(struct ember_profile *p, const char *s, uint32_t *out)
{
	return ember_profile_intern(p, s ? s : "", s ? strlen(s) : 0, out);
}

const char *ember_profile_str(const struct ember_profile *p, uint32_t id)
{
	return ember_strset_str(&p->strings, id);
}

size_t ember_profile_nstrings(const struct ember_profile *p)
{
	return ember_strset_count(&p->strings);
}

/* Looks key up in ix; when absent appends item to vec. */
static int dedup_insert(struct ember_profile *p, struct ember_index *ix, struct ember_vec *vec,
                        const void *key, size_t key_len, ember_index_eq_fn eq, const void *item,
                        uint32_t *out)
{
	uint64_t h = ember_hash(&p->hash_key, key, key_len);
	uint32_t id = (uint32_t)vec->len;
	int r;

	if (ember_index_find(ix, h, key, key_len, eq, p, out) == 0)
		return 0;
	if (vec->len >= UINT32_MAX - 1 || !ember_vec_push(vec, item, 1))
		return -ENOMEM;
	r = ember_index_upsert(ix, h, key, key_len, eq, p, id, out);
	if (r < 0) {
		vec->len--;
		return r;
	}
	return 1;
}

int ember_profile_add_mapping(struct ember_profile *p, const struct ember_mapping *m, uint32_t *out)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	struct mapping_key k = mapping_key_of(m);
	int r = dedup_insert(p, &p->mapping_index, &p->mappings, &k, sizeof(k), mapping_eq, m, out);
	struct ember_mapping *have;

	if (r != 0)
		return r < 0 ? r : 0;
	/* Seen before, perhaps while its file could not be read: what is known now stays. */
	have = EMBER_VEC_AT(p->mappings, struct ember_mapping, *out);
	have->has_functions |= m->has_functions;
	if (m->has_file_vaddr && !have->has_file_vaddr) {
		have->has_file_vaddr = true;
		have->file_vaddr = m->file_vaddr;
	}
	return 0;
}

int ember_profile_add_function(struct ember_profile *p, const struct ember_function *f,
                               uint32_t *out)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	struct function_key k = function_key_of(f);
	int r =
	    dedup_insert(p, &p->function_index, &p->functions, &k, sizeof(k), function_eq, f, out);

	return r < 0 ? r : 0;
}

int ember_profile_find_location(const struct ember_profile *p, uint32_t mapping, uint32_t kind,
                                uint64_t address, uint32_t *out)
{
	struct location_key k = {address, mapping, kind};

	return ember_index_find(&p->location_index, ember_hash(&p->hash_key, &k, sizeof(k)), &k,
	                        sizeof(k), location_eq, p, out);
}

int ember_profile_add_location(struct ember_profile *p, uint32_t mapping, uint32_t kind,
                               uint64_t address, const struct ember_line *lines, uint32_t nlines,
                               uint32_t *out)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	struct location_key k = {address, mapping, kind};
	struct ember_location loc = {
	    .mapping = mapping,
	    .kind = (uint8_t)(kind & ~EMBER_LOCATION_CALL),
	    .call = !!(kind & EMBER_LOCATION_CALL),
	    .address = address,
	    .first_line = (uint32_t)p->lines.len,
	    .nlines = nlines,
	};
	uint64_t h = ember_hash(&p->hash_key, &k, sizeof(k));
	int r;

	if (ember_index_find(&p->location_index, h, &k, sizeof(k), location_eq, p, out) == 0)
		return 0;
	if ((mapping != EMBER_NONE && mapping >= p->mappings.len) ||
	    (kind & ~EMBER_LOCATION_CALL) >= EMBER_FRAME_KIND_MAX)
		return -EINVAL;
	for (uint32_t i = 0; i < nlines; i++)
		if (lines[i].function >= p->functions.len)
			return -EINVAL;
	if (nlines && !ember_vec_push(&p->lines, lines, nlines))
		return -ENOMEM;
	r = dedup_insert(p, &p->location_index, &p->locations, &k, sizeof(k), location_eq, &loc,
	                 out);
	if (r < 0) {
		p->lines.len -= nlines;
		return r;
	}
	if (nlines && mapping != EMBER_NONE)
		EMBER_VEC_AT(p->mappings, struct ember_mapping, mapping)->has_functions = true;
	return 0;
}

bool ember_profile_location_named(const struct ember_profile *p, uint32_t loc)
{
	return loc < p->locations.len &&
	       EMBER_VEC_AT(p->locations, struct ember_location, loc)->nlines;
}

int ember_profile_name_location(struct ember_profile *p, uint32_t loc,
                                const struct ember_line *lines, uint32_t nlines)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	struct ember_location *l;

	if (loc >= p->locations.len || !nlines)
		return -EINVAL;
	l = EMBER_VEC_AT(p->locations, struct ember_location, loc);
	if (l->nlines)
		return -EEXIST;
	for (uint32_t i = 0; i < nlines; i++)
		if (lines[i].function >= p->functions.len)
			return -EINVAL;
	l->first_line = (uint32_t)p->lines.len;
	if (!ember_vec_push(&p->lines, lines, nlines))
		return -ENOMEM;
	l->nlines = nlines;
	if (l->mapping != EMBER_NONE)
		EMBER_VEC_AT(p->mappings, struct ember_mapping, l->mapping)->has_functions = true;
	return 0;
}

int ember_profile_add_stack(struct ember_profile *p, const uint32_t *locations, uint32_t depth,
                            uint32_t *out)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	size_t len = depth * sizeof(uint32_t);
	uint64_t h = ember_hash(&p->hash_key, locations, len);
	struct ember_stack s = {(uint32_t)p->stack_pool.len, depth};
	int r;

	if (ember_index_find(&p->stack_index, h, locations, len, stack_eq, p, out) == 0)
		return 0;
	for (uint32_t i = 0; i < depth; i++)
		if (locations[i] >= p->locations.len)
			return -EINVAL;
	if (p->stack_pool.len + depth >= UINT32_MAX)
		return -ENOMEM;
	if (depth && !ember_vec_push(&p->stack_pool, locations, depth))
		return -ENOMEM;
	r = dedup_insert(p, &p->stack_index, &p->stacks, locations, len, stack_eq, &s, out);
	if (r < 0) {
		p->stack_pool.len -= depth;
		return r;
	}
	return 0;
}

int ember_profile_add_sample_hinted(struct ember_profile *p, const struct ember_sample_key *key,
                                    uint64_t count, uint64_t timestamp_ns, uint32_t *hint)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	struct ember_sample fresh = {.key = *key};
	struct ember_sample *s;
	uint32_t id;
	int r;

	if (key->stack >= p->stacks.len || key->wait)
		return -EINVAL;
	if (hint && *hint < p->samples.len && sample_eq(p, *hint, key, sizeof(*key)))
		id = *hint;
	else if ((r = dedup_insert(p, &p->sample_index, &p->samples, key, sizeof(*key), sample_eq,
	                           &fresh, &id)) < 0)
		return r;
	if (hint)
		*hint = id;
	s = EMBER_VEC_AT(p->samples, struct ember_sample, id);
	s->count += count;
	p->total_count += count;
	if (timestamp_ns) {
		size_t cap = s->cap_timestamps;

		r = EMBER_ENSURE(s->timestamps, cap, (size_t)s->ntimestamps + 1, UINT32_MAX);
		s->cap_timestamps = (uint32_t)cap;
		if (r)
			return r;
		s->timestamps[s->ntimestamps++] = timestamp_ns;
	}
	return 0;
}

int ember_profile_add_sample(struct ember_profile *p, const struct ember_sample_key *key,
                             uint64_t count, uint64_t timestamp_ns)
{
	return ember_profile_add_sample_hinted(p, key, count, timestamp_ns, NULL);
}

int ember_profile_add_off_cpu(struct ember_profile *p, const struct ember_sample_key *key,
                              uint64_t ns)
{
	struct ember_sample fresh = {.key = *key};
	uint32_t id;
	int r;

	if (key->stack >= p->stacks.len || !key->wait || key->wait >= ember_profile_nstrings(p))
		return -EINVAL;
	r = dedup_insert(p, &p->sample_index, &p->samples, key, sizeof(*key), sample_eq, &fresh,
	                 &id);
	if (r < 0)
		return r;
	EMBER_VEC_AT(p->samples, struct ember_sample, id)->off_cpu_ns += ns;
	p->total_off_cpu_ns += ns;
	p->off_cpu = true;
	return 0;
}

uint64_t ember_sample_value(const struct ember_profile *p, const struct ember_sample *s,
                            enum ember_view v)
{
	switch (v) {
	case EMBER_VIEW_OFF_CPU:
		return s->off_cpu_ns;
	case EMBER_VIEW_BOTH:
		return s->count * p->period_ns + s->off_cpu_ns;
	default:
		return s->count;
	}
}

uint64_t ember_profile_total(const struct ember_profile *p, enum ember_view v)
{
	switch (v) {
	case EMBER_VIEW_OFF_CPU:
		return p->total_off_cpu_ns;
	case EMBER_VIEW_BOTH:
		return p->total_count * p->period_ns + p->total_off_cpu_ns;
	default:
		return p->total_count;
	}
}

int ember_profile_set_process(struct ember_profile *p, const struct ember_process_attrs *a)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	uint32_t id;
	int r;

	if (a->exe_path >= ember_profile_nstrings(p) ||
	    a->container_id >= ember_profile_nstrings(p) || a->context >= ember_profile_nstrings(p))
		return -EINVAL;
	r = dedup_insert(p, &p->process_index, &p->processes, &a->pid, sizeof(a->pid), process_eq,
	                 a, &id);
	if (r < 0)
		return r;
	*EMBER_VEC_AT(p->processes, struct ember_process_attrs, id) = *a;
	return 0;
}

const struct ember_process_attrs *ember_profile_find_process(const struct ember_profile *p,
                                                             uint32_t pid)
{
	uint32_t id;

	if (ember_index_find(&p->process_index, ember_hash(&p->hash_key, &pid, sizeof(pid)), &pid,
	                     sizeof(pid), process_eq, p, &id))
		return NULL;
	return EMBER_VEC_AT(p->processes, const struct ember_process_attrs, id);
}

/* Index maps from src's tables to dst's, filled as merge_* go. */
struct merge_maps {
	uint32_t *strs, *mappings, *functions, *locations, *stacks;
};

static int merge_dictionaries(struct ember_profile *dst, const struct ember_profile *src,
                              struct merge_maps *mm)
{
	struct ember_vec buf;
	int err = 0;

	for (size_t i = 0; i < ember_profile_nstrings(src) && !err; i++)
		err = ember_profile_intern_cstr(dst, ember_profile_str(src, (uint32_t)i),
		                                &mm->strs[i]);
	for (size_t i = 0; i < src->mappings.len && !err; i++) {
		struct ember_mapping m = *ember_profile_mapping(src, (uint32_t)i);

		m.filename = mm->strs[m.filename];
		m.gnu_build_id = mm->strs[m.gnu_build_id];
		m.go_build_id = mm->strs[m.go_build_id];
		m.file_hash = mm->strs[m.file_hash];
		err = ember_profile_add_mapping(dst, &m, &mm->mappings[i]);
	}
	for (size_t i = 0; i < src->functions.len && !err; i++) {
		struct ember_function f = *ember_profile_function(src, (uint32_t)i);

		f.name = mm->strs[f.name];
		f.system_name = mm->strs[f.system_name];
		f.filename = mm->strs[f.filename];
		err = ember_profile_add_function(dst, &f, &mm->functions[i]);
	}
	ember_vec_init(&buf, sizeof(struct ember_line));
	for (size_t i = 0; i < src->locations.len && !err; i++) {
		const struct ember_location *l = ember_profile_location(src, (uint32_t)i);
		const struct ember_line *lines = ember_profile_location_lines(src, l);
		struct ember_line *out;

		buf.len = 0;
		out = l->nlines ? ember_vec_push(&buf, lines, l->nlines) : NULL;
		if (l->nlines && !out) {
			err = -ENOMEM;
			break;
		}
		for (uint32_t j = 0; j < l->nlines; j++)
			out[j].function = mm->functions[out[j].function];
		err = ember_profile_add_location(
		    dst, l->mapping == EMBER_NONE ? EMBER_NONE : mm->mappings[l->mapping],
		    l->kind | (l->call ? EMBER_LOCATION_CALL : 0), l->address, out, l->nlines,
		    &mm->locations[i]);
	}
	ember_vec_free(&buf);
	ember_vec_init(&buf, sizeof(uint32_t));
	for (size_t i = 0; i < src->stacks.len && !err; i++) {
		const struct ember_stack *st = ember_profile_stack(src, (uint32_t)i);
		const uint32_t *locs = ember_profile_stack_locations(src, st);
		uint32_t *out;

		buf.len = 0;
		out = ember_vec_push(&buf, NULL, st->depth ? st->depth : 1);
		if (!out) {
			err = -ENOMEM;
			break;
		}
		for (uint32_t j = 0; j < st->depth; j++)
			out[j] = mm->locations[locs[j]];
		err = ember_profile_add_stack(dst, out, st->depth, &mm->stacks[i]);
	}
	ember_vec_free(&buf);
	return err;
}

static int merge_samples(struct ember_profile *dst, const struct ember_profile *src,
                         const struct merge_maps *mm, const char *link_prefix)
{
	size_t prefix_len = link_prefix ? strlen(link_prefix) : 0;
	int err = 0;

	for (size_t i = 0; i < src->samples.len && !err; i++) {
		const struct ember_sample *s = ember_profile_sample(src, (uint32_t)i);
		struct ember_sample_key k = s->key;

		if (prefix_len &&
		    (!k.link || strncmp(ember_profile_str(src, k.link), link_prefix, prefix_len)))
			continue;

		k.stack = mm->stacks[k.stack];
		k.comm = mm->strs[k.comm];
		k.thread_name = mm->strs[k.thread_name];
		k.wait = mm->strs[k.wait];
		k.link = mm->strs[k.link];
		k.labels = mm->strs[k.labels];
		if (k.wait) {
			err = ember_profile_add_off_cpu(dst, &k, s->off_cpu_ns);
			continue;
		}
		for (uint32_t t = 0; t < s->ntimestamps && !err; t++)
			err = ember_profile_add_sample(dst, &k, 1, s->timestamps[t]);
		if (!err && s->count > s->ntimestamps)
			err = ember_profile_add_sample(dst, &k, s->count - s->ntimestamps, 0);
	}
	for (size_t i = 0; i < src->processes.len && !err; i++) {
		struct ember_process_attrs a =
		    *EMBER_VEC_AT(src->processes, const struct ember_process_attrs, i);

		a.exe_path = mm->strs[a.exe_path];
		a.container_id = mm->strs[a.container_id];
		a.context = mm->strs[a.context];
		err = ember_profile_set_process(dst, &a);
	}
	for (size_t i = 0; i < src->stats.len && !err; i++) {
		const struct ember_stat *st = EMBER_VEC_AT(src->stats, const struct ember_stat, i);

		err = ember_profile_stat_add(dst, ember_profile_str(src, st->name), st->value);
	}
	return err;
}

int ember_profile_keep_linked(struct ember_profile *p, const char *link_prefix)
{
	struct ember_profile only;
	int err = ember_profile_init(&only);

	if (!err)
		err = ember_profile_merge_linked(&only, p, link_prefix);
	if (err) {
		ember_profile_free(&only);
		return err;
	}
	/* The metadata, but for the totals the samples kept make. */
	only.start_ns = p->start_ns;
	only.end_ns = p->end_ns;
	only.period_ns = p->period_ns;
	only.sample_hz = p->sample_hz;
	only.scope = p->scope;
	only.off_cpu = p->off_cpu;
	only.view = p->view;
	memcpy(only.host, p->host, sizeof(only.host));
	memcpy(only.selection, p->selection, sizeof(only.selection));
	memcpy(only.title, p->title, sizeof(only.title));
	memcpy(only.service_name, p->service_name, sizeof(only.service_name));
	memcpy(only.resource_attrs, p->resource_attrs, sizeof(only.resource_attrs));
	only.otlp_symbols = p->otlp_symbols;
	ember_profile_free(p);
	*p = only;
	return 0;
}

int ember_profile_merge(struct ember_profile *dst, const struct ember_profile *src)
{
	return ember_profile_merge_linked(dst, src, NULL);
}

int ember_profile_merge_linked(struct ember_profile *dst, const struct ember_profile *src,
                               const char *link_prefix)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	struct merge_maps mm = {
	    .strs = calloc(ember_profile_nstrings(src) + 1, sizeof(uint32_t)),
	    .mappings = calloc(src->mappings.len + 1, sizeof(uint32_t)),
	    .functions = calloc(src->functions.len + 1, sizeof(uint32_t)),
	    .locations = calloc(src->locations.len + 1, sizeof(uint32_t)),
	    .stacks = calloc(src->stacks.len + 1, sizeof(uint32_t)),
	};
	int err = -ENOMEM;

	if (mm.strs && mm.mappings && mm.functions && mm.locations && mm.stacks) {
		err = merge_dictionaries(dst, src, &mm);
		if (!err)
			err = merge_samples(dst, src, &mm, link_prefix);
	}
	free(mm.strs);
	free(mm.mappings);
	free(mm.functions);
	free(mm.locations);
	free(mm.stacks);
	if (err)
		return err;
	if (src->start_ns && (!dst->start_ns || src->start_ns < dst->start_ns))
		dst->start_ns = src->start_ns;
	if (src->end_ns > dst->end_ns)
		dst->end_ns = src->end_ns;
	if (!dst->scope)
		dst->scope = src->scope;
	dst->off_cpu |= src->off_cpu;
	return 0;
}

static struct ember_stat *stat_find(const struct ember_profile *p, const char *name)
{
	for (size_t i = 0; i < p->stats.len; i++) {
		struct ember_stat *st = EMBER_VEC_AT(p->stats, struct ember_stat, i);

		if (!strcmp(ember_profile_str(p, st->name), name))
			return st;
	}
	return NULL;
}

static struct ember_stat *stat_get_or_add(struct ember_profile *p, const char *name)
{
	struct ember_stat *st = stat_find(p, name), fresh = {0};

	if (st)
		return st;
	if (ember_profile_intern_cstr(p, name, &fresh.name))
		return NULL;
	return ember_vec_push(&p->stats, &fresh, 1);
}

int ember_profile_stat_add(struct ember_profile *p, const char *name, uint64_t delta)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	struct ember_stat *st = stat_get_or_add(p, name);

	if (!st)
		return -ENOMEM;
	st->value += delta;
	return 0;
}

int ember_profile_stat_set(struct ember_profile *p, const char *name, uint64_t value)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROFILE);
	struct ember_stat *st = stat_get_or_add(p, name);

	if (!st)
		return -ENOMEM;
	st->value = value;
	return 0;
}

void ember_profile_stat_sink_set(void *profile, const char *name, uint64_t value)
{
	ember_profile_stat_set(profile, name, value);
}

uint64_t ember_profile_stat_get(const struct ember_profile *p, const char *name)
{
	const struct ember_stat *st = stat_find(p, name);

	return st ? st->value : 0;
}

void ember_profile_unsymbolized_name(const struct ember_profile *p,
                                     const struct ember_location *loc, char *buf, size_t size)
{
	const struct ember_mapping *m;
	const char *file, *slash;

	if (loc->mapping == EMBER_NONE || loc->mapping >= p->mappings.len) {
		snprintf(buf, size, "[unknown]");
		return;
	}
	m = ember_profile_mapping(p, loc->mapping);
	file = ember_profile_str(p, m->filename);
	slash = strrchr(file, '/');
	snprintf(buf, size, "%s+0x%" PRIx64, slash ? slash + 1 : (*file ? file : "[unknown]"),
	         loc->address - m->start + m->file_offset);
}

int ember_profile_walk_stack(const struct ember_profile *p, uint32_t stack, ember_frame_fn fn,
                             void *ctx)
{
	const struct ember_stack *st = ember_profile_stack(p, stack);
	const uint32_t *locs = ember_profile_stack_locations(p, st);
	char name[512];
	int err;

	for (uint32_t i = st->depth; i-- > 0;) {
		const struct ember_location *loc = ember_profile_location(p, locs[i]);
		const struct ember_line *lines = ember_profile_location_lines(p, loc);

		if (!loc->nlines) {
			ember_profile_unsymbolized_name(p, loc, name, sizeof(name));
			err = fn(ctx, name, (enum ember_frame_kind)loc->kind);
			if (err)
				return err;
			continue;
		}
		/* The containing function is the last line; inlined callees precede it. */
		for (uint32_t j = loc->nlines; j-- > 0;) {
			const struct ember_function *f =
			    ember_profile_function(p, lines[j].function);

			err = fn(ctx, ember_profile_str(p, f->name),
			         (enum ember_frame_kind)loc->kind);
			if (err)
				return err;
		}
	}
	return 0;
}
