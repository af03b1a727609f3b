// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/in_pprof.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.pb-c.h"
#include "symbolizer/formats/gzip.h"
#include "shared/parse.h"
#include "shared/str.h"
#include "shared/sorted.h"
#include "shared/vec.h"

/* Kernel text lives in the upper half of the address space on x86-64 and arm64. */
#define KERNEL_ADDRESS_MIN 0xffff800000000000ull
/* Addresses no real location has: given to pprof locations that would otherwise merge. */
#define SYNTHETIC_ADDRESS (1ull << 63)

/* ---- decoding with a memory budget ------------------------------------------------ */

struct budget {
	size_t used, limit;
	bool exhausted;
};

static void *budget_alloc(void *data, size_t size)
{
	struct budget *b = data;

	if (size > b->limit - b->used) {
		b->exhausted = true;
		return NULL;
	}
	b->used += size;
	return malloc(size);
}

static void budget_free(void *data, void *ptr)
{
	(void)data;
	free(ptr);
}

/* ---- id lookup ---------------------------------------------------------------------- */

struct id_entry {
	uint64_t id;
	uint32_t index;
};

static int cmp_id(const void *a, const void *b)
{
	const struct id_entry *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

struct id_map {
	struct id_entry *v;
	size_t n;
};

static int id_map_build(struct id_map *m, size_t n, uint64_t (*id_of)(const void *, size_t),
                        const void *items)
{
	m->n = n;
	m->v = malloc((n ? n : 1) * sizeof(*m->v));
	if (!m->v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		m->v[i] = (struct id_entry){id_of(items, i), (uint32_t)i};
	qsort(m->v, n, sizeof(*m->v), cmp_id);
	return 0;
}

/* The index of the first item with this id, or -1. Id 0 means "none" in pprof. */
static int64_t id_map_find(const struct id_map *m, uint64_t id)
{
	size_t lo;

	if (!id)
		return -1;
	lo = EMBER_LOWER_BOUND(m->v, m->n, id, id);
	return lo < m->n && m->v[lo].id == id ? (int64_t)m->v[lo].index : -1;
}

static uint64_t mapping_id(const void *items, size_t i)
{
	return ((Ember__Pprof__Mapping *const *)items)[i]->id;
}

static uint64_t function_id(const void *items, size_t i)
{
	return ((Ember__Pprof__Function *const *)items)[i]->id;
}

static uint64_t location_id(const void *items, size_t i)
{
	return ((Ember__Pprof__Location *const *)items)[i]->id;
}

/* ---- conversion ------------------------------------------------------------------------ */

struct reader {
	struct ember_profile *p;
	const Ember__Pprof__Profile *in;
	struct id_map mappings, functions, locations;
	uint32_t *mapping_of;      /* pprof mapping index -> profile mapping */
	uint32_t *function_of;     /* pprof function index -> profile function */
	uint32_t *location_of;     /* pprof location index -> profile location */
	uint32_t unknown_location; /* EMBER_NONE until needed */
	uint32_t default_comm;
	uint64_t bad_refs, truncated;
	int64_t value_index;
	uint64_t value_divisor; /* 1, or the period when the value is time */
	int64_t off_cpu_index;  /* of the off_cpu/nanoseconds value, or -1 */
	uint32_t unknown_wait;  /* the reason of an off-CPU sample without a "wait" label */
};

/* The string at index i, or NULL (and a counted error) when i is out of range. */
static const char *str_at(struct reader *r, int64_t i)
{
	if (i < 0 || (uint64_t)i >= r->in->n_string_table || !r->in->string_table[i]) {
		r->bad_refs++;
		return NULL;
	}
	return r->in->string_table[i];
}

static int intern_ref(struct reader *r, int64_t i, uint32_t *out)
{
	const char *s = i ? str_at(r, i) : "";

	return ember_profile_intern_cstr(r->p, s ? s : "", out);
}

static bool str_is(struct reader *r, int64_t i, const char *want)
{
	const char *s = str_at(r, i);

	return s && !strcmp(s, want);
}

static int read_mappings(struct reader *r)
{
	const Ember__Pprof__Profile *in = r->in;
	int err = id_map_build(&r->mappings, in->n_mapping, mapping_id, in->mapping);

	r->mapping_of = malloc((in->n_mapping + 1) * sizeof(*r->mapping_of));
	if (!err && !r->mapping_of)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < in->n_mapping; i++) {
		const Ember__Pprof__Mapping *pm = in->mapping[i];
		struct ember_mapping m = {
		    .start = pm->memory_start,
		    .limit = pm->memory_limit,
		    .file_offset = pm->file_offset,
		    .has_functions = pm->has_functions,
		};
		const char *build_id = pm->build_id ? str_at(r, pm->build_id) : NULL;

		err = intern_ref(r, pm->filename, &m.filename);
		if (!err && build_id && *build_id)
			err = ember_profile_intern_cstr(
			    r->p, build_id,
			    ember_is_lower_hex(build_id, strlen(build_id)) ? &m.gnu_build_id
									   : &m.go_build_id);
		if (!err)
			err = ember_profile_add_mapping(r->p, &m, &r->mapping_of[i]);
	}
	return err;
}

static int read_functions(struct reader *r)
{
	const Ember__Pprof__Profile *in = r->in;
	int err = id_map_build(&r->functions, in->n_function, function_id, in->function);

	r->function_of = malloc((in->n_function + 1) * sizeof(*r->function_of));
	if (!err && !r->function_of)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < in->n_function; i++) {
		const Ember__Pprof__Function *pf = in->function[i];
		struct ember_function f = {.start_line = pf->start_line > 0 ? pf->start_line : 0};

		err = intern_ref(r, pf->name, &f.name);
		if (!err)
			err = intern_ref(r, pf->system_name, &f.system_name);
		if (!err)
			err = intern_ref(r, pf->filename, &f.filename);
		if (!err && !*ember_profile_str(r->p, f.name))
			err = ember_profile_intern_cstr(r->p, "[unknown]", &f.name);
		if (!err)
			err = ember_profile_add_function(r->p, &f, &r->function_of[i]);
	}
	return err;
}

static enum ember_frame_kind location_kind(struct reader *r, int64_t mapping, uint64_t address)
{
	if (mapping >= 0) {
		const char *file = ember_profile_str(
		    r->p, ember_profile_mapping(r->p, r->mapping_of[mapping])->filename);

		if (!strncmp(file, "[kernel", 7))
			return EMBER_FRAME_KERNEL;
	}
	return address >= KERNEL_ADDRESS_MIN ? EMBER_FRAME_KERNEL : EMBER_FRAME_NATIVE;
}

static int read_locations(struct reader *r)
{
	const Ember__Pprof__Profile *in = r->in;
	struct ember_line *lines = NULL;
	size_t lines_cap = 0;
	int err = id_map_build(&r->locations, in->n_location, location_id, in->location);

	r->location_of = malloc((in->n_location + 1) * sizeof(*r->location_of));
	if (!err && !r->location_of)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < in->n_location; i++) {
		const Ember__Pprof__Location *pl = in->location[i];
		int64_t mi = pl->mapping_id ? id_map_find(&r->mappings, pl->mapping_id) : -1;
		uint32_t mapping = mi >= 0 ? r->mapping_of[mi] : EMBER_NONE, nlines = 0;
		enum ember_frame_kind kind = location_kind(r, mi, pl->address);
		size_t before = r->p->locations.len;

		if (pl->mapping_id && mi < 0)
			r->bad_refs++;
		err = EMBER_ENSURE(lines, lines_cap, pl->n_line, EMBER_VEC_NO_MAX);
		if (err)
			break;
		for (size_t j = 0; j < pl->n_line; j++) {
			int64_t fi = id_map_find(&r->functions, pl->line[j]->function_id);

			if (fi < 0) {
				r->bad_refs++;
				continue;
			}
			lines[nlines++] = (struct ember_line){
			    .function = r->function_of[fi],
			    .line = pl->line[j]->line > 0 ? pl->line[j]->line : 0,
			};
		}
		err = ember_profile_add_location(r->p, mapping, kind, pl->address, lines, nlines,
		                                 &r->location_of[i]);
		/* Another pprof location had the same address (e.g. all 0): keep both apart. */
		if (!err && r->p->locations.len == before)
			err = ember_profile_add_location(r->p, mapping, kind, SYNTHETIC_ADDRESS | i,
			                                 lines, nlines, &r->location_of[i]);
	}
	free(lines);
	return err;
}

static int unknown_location(struct reader *r, uint32_t *out)
{
	int err = 0;

	if (r->unknown_location == EMBER_NONE)
		err = ember_profile_add_location(r->p, EMBER_NONE, EMBER_FRAME_UNKNOWN, 0, NULL, 0,
		                                 &r->unknown_location);
	*out = r->unknown_location;
	return err;
}

/*
 * Which value of a sample is the sample count, and how to get it from that
 * value; and which is off-CPU time (off_cpu/nanoseconds, as ember writes it).
 */
static void choose_value(struct reader *r)
{
	const Ember__Pprof__Profile *in = r->in;

	r->value_index = r->off_cpu_index = -1;
	r->value_divisor = 1;
	for (size_t i = 0; i < in->n_sample_type; i++)
		if (str_is(r, in->sample_type[i]->type, "off_cpu") &&
		    str_is(r, in->sample_type[i]->unit, "nanoseconds")) {
			r->off_cpu_index = (int64_t)i;
			r->p->off_cpu = true;
		}
	for (size_t i = 0; i < in->n_sample_type; i++)
		if (str_is(r, in->sample_type[i]->type, "samples")) {
			r->value_index = (int64_t)i;
			return;
		}
	for (size_t i = 0; i < in->n_sample_type; i++)
		if (str_is(r, in->sample_type[i]->unit, "nanoseconds") && in->period > 0 &&
		    (int64_t)i != r->off_cpu_index) {
			r->value_index = (int64_t)i;
			r->value_divisor = (uint64_t)in->period;
			return;
		}
	if (in->n_sample_type && r->off_cpu_index != 0)
		r->value_index = 0;
}

static void default_comm(struct reader *r)
{
	const char *file = "", *slash;
	uint32_t id = 0;

	if (r->in->n_mapping) {
		file = ember_profile_str(r->p,
		                         ember_profile_mapping(r->p, r->mapping_of[0])->filename);
		slash = strrchr(file, '/');
		file = slash ? slash + 1 : file;
	}
	if (ember_profile_intern_cstr(r->p, file, &id))
		id = 0;
	r->default_comm = id;
}

/* The link of a sample's trace_id and span_id labels (hex, as out_pprof writes them). */
static void read_link(struct reader *r, const char *trace, const char *span,
                      struct ember_sample_key *key)
{
	char hex[EMBER_LINK_HEX + 1];

	if (!trace || !span || strlen(trace) != 32 || strlen(span) != 16 ||
	    strspn(trace, "0123456789abcdef") != 32 || strspn(span, "0123456789abcdef") != 16)
		return;
	memcpy(hex, trace, 32);
	memcpy(hex + 32, span, 17);
	if (ember_profile_intern_cstr(r->p, hex, &key->link))
		r->bad_refs++;
}

/* The sample's labels into key, and its "wait" label (off-CPU reason) into *wait. */
static void read_labels(struct reader *r, const Ember__Pprof__Sample *ps,
                        struct ember_sample_key *key, uint32_t *wait)
{
	const char *trace = NULL, *span = NULL;

	for (size_t j = 0; j < ps->n_label; j++) {
		const Ember__Pprof__Label *l = ps->label[j];
		const char *k = str_at(r, l->key), *s;
		bool num_ok = l->num >= 0 && l->num < (int64_t)UINT32_MAX;

		if (!k)
			continue;
		if (!strcmp(k, "pid") && num_ok)
			key->pid = (uint32_t)l->num;
		else if (!strcmp(k, "tid") && num_ok)
			key->tid = (uint32_t)l->num;
		else if (!strcmp(k, "cpu") && num_ok)
			key->cpu = (uint32_t)l->num;
		else if (!strcmp(k, "comm") || !strcmp(k, "thread") || !strcmp(k, "wait")) {
			s = str_at(r, l->str);
			if (s && *s &&
			    ember_profile_intern_cstr(r->p, s,
			                              !strcmp(k, "comm")     ? &key->comm
			                              : !strcmp(k, "thread") ? &key->thread_name
			                                                     : wait))
				r->bad_refs++;
		} else if (!strcmp(k, "trace_id"))
			trace = str_at(r, l->str);
		else if (!strcmp(k, "span_id"))
			span = str_at(r, l->str);
	}
	read_link(r, trace, span, key);
}

/* A sample's value at index, or 0 (counted when it is missing or negative). */
static uint64_t value_at(struct reader *r, const Ember__Pprof__Sample *ps, int64_t index)
{
	if (index < 0 || (size_t)index >= ps->n_value || ps->value[index] < 0) {
		r->bad_refs++;
		return 0;
	}
	return (uint64_t)ps->value[index];
}

static int read_samples(struct reader *r)
{
	const Ember__Pprof__Profile *in = r->in;
	uint32_t *locs = malloc(EMBER_PPROF_MAX_DEPTH * sizeof(*locs));
	int err = locs ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < in->n_sample; i++) {
		const Ember__Pprof__Sample *ps = in->sample[i];
		struct ember_sample_key key = {.cpu = EMBER_NONE, .comm = r->default_comm};
		size_t depth = ps->n_location_id;
		uint64_t count = 0, off_ns = 0, raw;
		uint32_t wait = 0;

		/* Missing values are bad references only when no value is left to read. */
		if (r->value_index >= 0 && (raw = value_at(r, ps, r->value_index))) {
			count = (raw + r->value_divisor / 2) / r->value_divisor;
			count = count ? count : 1;
		}
		if (r->off_cpu_index >= 0)
			off_ns = value_at(r, ps, r->off_cpu_index);
		if (count > (1ull << 48) || r->p->total_count > UINT64_MAX / 4 - count ||
		    off_ns > (1ull << 62) || r->p->total_off_cpu_ns > UINT64_MAX / 4 - off_ns) {
			r->bad_refs++;
			continue;
		}
		if (!count && !off_ns)
			continue;
		if (depth > EMBER_PPROF_MAX_DEPTH) {
			depth = EMBER_PPROF_MAX_DEPTH;
			r->truncated++;
		}
		for (size_t j = 0; !err && j < depth; j++) {
			int64_t li = id_map_find(&r->locations, ps->location_id[j]);

			if (li >= 0) {
				locs[j] = r->location_of[li];
				continue;
			}
			r->bad_refs++;
			err = unknown_location(r, &locs[j]);
		}
		read_labels(r, ps, &key, &wait);
		if (!err)
			err = ember_profile_add_stack(r->p, locs, (uint32_t)depth, &key.stack);
		if (!err && count)
			err = ember_profile_add_sample(r->p, &key, count, 0);
		if (!err && off_ns && !wait && !r->unknown_wait)
			err = ember_profile_intern_cstr(r->p, "unknown", &r->unknown_wait);
		key.wait = wait ? wait : r->unknown_wait;
		if (!err && off_ns)
			err = ember_profile_add_off_cpu(r->p, &key, off_ns);
	}
	free(locs);
	return err;
}

/* Comments "#name=value" ("name=value" before): statistics as ember writes them, and the host. */
static int read_comments(struct reader *r)
{
	for (size_t i = 0; i < r->in->n_comment; i++) {
		const char *c = str_at(r, r->in->comment[i]), *eq;
		char name[128];
		uint64_t v;

		if (c && c[0] == '#')
			c++;
		if (!c || !(eq = strchr(c, '=')) || eq == c || (size_t)(eq - c) >= sizeof(name))
			continue;
		memcpy(name, c, (size_t)(eq - c));
		name[eq - c] = '\0';
		if (!strcmp(name, "host")) {
			ember_strlcpy(r->p->host, eq + 1, sizeof(r->p->host));
			continue;
		}
		if (!strcmp(name, "selection")) {
			ember_strlcpy(r->p->selection, eq + 1, sizeof(r->p->selection));
			continue;
		}
		if (ember_parse_u64(eq + 1, 0, UINT64_MAX, &v))
			continue;
		if (ember_profile_stat_set(r->p, name, v))
			return -ENOMEM;
	}
	return 0;
}

static void read_metadata(struct reader *r)
{
	const Ember__Pprof__Profile *in = r->in;
	const Ember__Pprof__ValueType *pt = in->period_type;

	if (in->time_nanos > 0) {
		r->p->start_ns = (uint64_t)in->time_nanos;
		if (in->duration_nanos > 0 &&
		    (uint64_t)in->duration_nanos < UINT64_MAX - r->p->start_ns)
			r->p->end_ns = r->p->start_ns + (uint64_t)in->duration_nanos;
		else
			r->p->end_ns = r->p->start_ns;
	}
	if (pt && in->period > 0 && str_is(r, pt->unit, "nanoseconds")) {
		r->p->period_ns = (uint64_t)in->period;
		if (in->period <= 1000000000)
			r->p->sample_hz =
			    (uint32_t)((1000000000ull + r->p->period_ns / 2) / r->p->period_ns);
	}
}

int ember_read_pprof(struct ember_profile *p, const uint8_t *buf, size_t len)
{
	struct budget budget = {0, EMBER_PPROF_MAX_DECODED, false};
	ProtobufCAllocator alloc = {budget_alloc, budget_free, &budget};
	struct reader r = {.p = p, .unknown_location = EMBER_NONE};
	Ember__Pprof__Profile *in;
	uint8_t *plain = NULL;
	size_t plain_len = len;
	int err = 0;

	if (ember_is_gzip(buf, len)) {
		err = ember_gunzip(buf, len, EMBER_PPROF_MAX_BYTES, &plain, &plain_len);
		if (err)
			return err;
		buf = plain;
	} else if (len > EMBER_PPROF_MAX_BYTES) {
		return -EFBIG;
	}
	in = ember__pprof__profile__unpack(&alloc, plain_len, buf);
	free(plain);
	if (!in)
		return budget.exhausted ? -EFBIG : -EINVAL;
	r.in = in;
	if ((err = read_mappings(&r)) || (err = read_functions(&r)) || (err = read_locations(&r)))
		goto done;
	choose_value(&r);
	default_comm(&r);
	read_metadata(&r);
	if ((err = read_samples(&r)) || (err = read_comments(&r)))
		goto done;
	if (r.bad_refs)
		err = ember_profile_stat_add(p, "report.bad_references", r.bad_refs);
	if (!err && r.truncated)
		err = ember_profile_stat_add(p, "report.truncated_stacks", r.truncated);
done:
	free(r.mappings.v);
	free(r.functions.v);
	free(r.locations.v);
	free(r.mapping_of);
	free(r.function_of);
	free(r.location_of);
	ember__pprof__profile__free_unpacked(in, &alloc);
	return err;
}
