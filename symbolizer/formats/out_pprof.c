// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/out_pprof.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.pb-c.h"
#include "shared/strtab.h"
#include "symbolizer/formats/gzip.h"
#include "symbolizer/formats/utf8.h"

/*
 * The pprof string table starts with the profile's own strings (same
 * indices) and continues with the ones only this writer needs (labels,
 * comments, names of unsymbolized frames), each once.
 */
struct strtab {
	size_t base; /* the profile's strings */
	struct ember_strset extra;
	char **v;     /* the whole table, made last */
	char **clean; /* by index, the UTF-8 copy of a string that is not UTF-8, or NULL */
};

static int64_t strtab_add(struct strtab *t, const char *s)
{
	uint32_t id;

	if (ember_strset_intern(&t->extra, s, strlen(s), &id))
		return -ENOMEM;
	return (int64_t)(t->base + id);
}

static void strtab_free(struct strtab *t)
{
	for (size_t i = 0; t->clean && t->v && i < t->base + ember_strset_count(&t->extra); i++)
		free(t->clean[i]);
	ember_strset_free(&t->extra);
	free(t->v);
	free(t->clean);
}

struct pprof_build {
	const struct ember_profile *p;
	struct strtab strs;
	Ember__Pprof__Profile prof;
	Ember__Pprof__ValueType types[3], period_type;
	Ember__Pprof__ValueType *type_ptrs[3];
	int off_cpu_index; /* of the off_cpu value, or -1 */
	Ember__Pprof__Mapping *mappings, **mapping_ptrs;
	uint64_t *mapping_ids; /* pprof id of each of the profile's mappings */
	Ember__Pprof__Function *functions, **function_ptrs;
	size_t nfunctions;
	Ember__Pprof__Location *locations, **location_ptrs;
	Ember__Pprof__Line *lines, **line_ptrs;
	Ember__Pprof__Sample *samples, **sample_ptrs;
	Ember__Pprof__Label *labels, **label_ptrs;
	uint64_t *location_ids;
	int64_t *values;
	int64_t *comments;
	int64_t key_pid, key_tid, key_cpu, key_comm, key_thread, key_wait;
	int64_t key_trace_id, key_span_id;
};

static void build_free(struct pprof_build *b)
{
	strtab_free(&b->strs);
	free(b->mappings);
	free(b->mapping_ptrs);
	free(b->mapping_ids);
	free(b->functions);
	free(b->function_ptrs);
	free(b->locations);
	free(b->location_ptrs);
	free(b->lines);
	free(b->line_ptrs);
	free(b->samples);
	free(b->sample_ptrs);
	free(b->labels);
	free(b->label_ptrs);
	free(b->location_ids);
	free(b->values);
	free(b->comments);
}

#define ALLOC(ptr, n) ((ptr) = calloc((n) > 0 ? (size_t)(n) : 1u, sizeof(*(ptr))))

static int build_strings(struct pprof_build *b)
{
	b->strs.base = ember_profile_nstrings(b->p);
	if (ember_strset_init(&b->strs.extra, EMBER_STRTAB_MAX_BYTES))
		return -EIO;
	if ((b->key_pid = strtab_add(&b->strs, "pid")) < 0 ||
	    (b->key_tid = strtab_add(&b->strs, "tid")) < 0 ||
	    (b->key_cpu = strtab_add(&b->strs, "cpu")) < 0 ||
	    (b->key_comm = strtab_add(&b->strs, "comm")) < 0 ||
	    (b->key_thread = strtab_add(&b->strs, "thread")) < 0 ||
	    (b->key_wait = strtab_add(&b->strs, "wait")) < 0 ||
	    (b->key_trace_id = strtab_add(&b->strs, "trace_id")) < 0 ||
	    (b->key_span_id = strtab_add(&b->strs, "span_id")) < 0)
		return -ENOMEM;
	return 0;
}

/* The string table as pprof holds it, once every string is in. */
static int finish_strings(struct pprof_build *b)
{
	struct strtab *t = &b->strs;
	size_t n = t->base + ember_strset_count(&t->extra);

	if (!ALLOC(t->v, n) || !ALLOC(t->clean, n))
		return -ENOMEM;
	for (size_t i = 0; i < t->base; i++)
		t->v[i] = (char *)ember_profile_str(b->p, (uint32_t)i);
	for (size_t i = t->base; i < n; i++)
		t->v[i] = (char *)ember_strset_str(&t->extra, (uint32_t)(i - t->base));
	/* proto3 strings are UTF-8: names a process chose need not be (utf8.h). */
	for (size_t i = 0; i < n; i++)
		if (!ember_utf8_valid(t->v[i], strlen(t->v[i]))) {
			t->clean[i] = ember_utf8_sanitize(t->v[i], strlen(t->v[i]));
			if (!t->clean[i])
				return -ENOMEM;
			t->v[i] = t->clean[i];
		}
	b->prof.n_string_table = n;
	b->prof.string_table = t->v;
	return 0;
}

/*
 * Sample types: samples/count, cpu/nanoseconds and, for a profile with
 * off-CPU time, off_cpu/nanoseconds (CPU samples carry 0 there, off-CPU
 * samples 0 in the CPU columns). CPU stays the default view.
 */
static int build_types(struct pprof_build *b)
{
	int64_t samples = strtab_add(&b->strs, "samples"), count = strtab_add(&b->strs, "count");
	int64_t cpu = strtab_add(&b->strs, "cpu"), ns = strtab_add(&b->strs, "nanoseconds");
	int64_t off_cpu = strtab_add(&b->strs, "off_cpu");
	size_t n = 0;

	if (samples < 0 || count < 0 || cpu < 0 || ns < 0 || off_cpu < 0)
		return -ENOMEM;
	for (int i = 0; i < 3; i++) {
		ember__pprof__value_type__init(&b->types[i]);
		b->type_ptrs[i] = &b->types[i];
	}
	b->types[n].type = samples;
	b->types[n++].unit = count;
	/* Without a period (e.g. a profile read from folded stacks) CPU time is unknown. */
	if (b->p->period_ns) {
		b->types[n].type = cpu;
		b->types[n++].unit = ns;
	}
	b->off_cpu_index = b->p->off_cpu ? (int)n : -1;
	if (b->p->off_cpu) {
		b->types[n].type = off_cpu;
		b->types[n++].unit = ns;
		b->prof.default_sample_type = samples;
	}
	ember__pprof__value_type__init(&b->period_type);
	b->period_type.type = cpu;
	b->period_type.unit = ns;
	b->prof.n_sample_type = n;
	b->prof.sample_type = b->type_ptrs;
	b->prof.period_type = &b->period_type;
	b->prof.period = (int64_t)b->p->period_ns;
	return 0;
}

/* A shared library by pprof's own test (libRx: ".so" at the end, or ".so." / ".so_" and a digit).
 */
static bool is_library(const char *file)
{
	for (const char *so = strstr(file, ".so"); so; so = strstr(so + 1, ".so"))
		if (!so[3] || ((so[3] == '.' || so[3] == '_') && so[4] >= '0' && so[4] <= '9'))
			return true;
	return false;
}

/* The program of a -p profile: the first mapped file that is not a library, or SIZE_MAX. */
static size_t program_mapping(const struct ember_profile *p)
{
	for (size_t i = 0; i < p->mappings.len; i++) {
		const char *f =
		    ember_profile_str(p, ember_profile_mapping(p, (uint32_t)i)->filename);

		if (f[0] == '/' && !is_library(f))
			return i;
	}
	return SIZE_MAX;
}

/*
 * The mapping's file name for pprof: a memfd named as the kernel shows it
 * ("/memfd:jit", in profiles of older ember or other tools) in brackets, as
 * the symbolizer names it now, so that pprof does not try to open it.
 */
static int64_t mapping_filename(struct pprof_build *b, const struct ember_mapping *m)
{
	const char *f = ember_profile_str(b->p, m->filename);
	char name[300];

	if (strncmp(f, "/memfd:", 7))
		return m->filename;
	snprintf(name, sizeof(name), "[%s]", f + 1);
	for (char *c = name + 1; *c; c++)
		if (*c == '/')
			*c = '_';
	return strtab_add(&b->strs, name);
}

static int add_mapping(struct pprof_build *b, size_t i, size_t at)
{
	const struct ember_mapping *m = ember_profile_mapping(b->p, (uint32_t)i);
	Ember__Pprof__Mapping *pm = &b->mappings[at];
	int64_t filename = mapping_filename(b, m);

	if (filename < 0)
		return -ENOMEM;
	ember__pprof__mapping__init(pm);
	pm->id = at + 1;
	pm->memory_start = m->start;
	pm->memory_limit = m->limit;
	pm->file_offset = m->file_offset;
	pm->filename = filename;
	pm->build_id = m->gnu_build_id ? m->gnu_build_id : m->go_build_id;
	pm->has_functions = m->has_functions;
	b->mapping_ptrs[at] = pm;
	b->mapping_ids[i] = pm->id;
	return 0;
}

/*
 * pprof headlines a profile with its first mapping ("File: ..."). A
 * whole-system profile starts with a mapping of nothing named "[system]"; a
 * profile of chosen processes with its program; a profile read from a file
 * keeps its order (an ember profile already has one of these first).
 */
static int build_mappings(struct pprof_build *b)
{
	const struct ember_profile *p = b->p;
	size_t n = p->mappings.len, at = 0, first = SIZE_MAX;
	int err = 0;

	if (!ALLOC(b->mappings, n + 1) || !ALLOC(b->mapping_ptrs, n + 1) ||
	    !ALLOC(b->mapping_ids, n))
		return -ENOMEM;
	if (p->scope == EMBER_SCOPE_SYSTEM || p->scope == EMBER_SCOPE_TITLED) {
		Ember__Pprof__Mapping *pm = &b->mappings[at];
		int64_t name = strtab_add(&b->strs, p->scope == EMBER_SCOPE_TITLED
		                                        ? p->title
		                                        : EMBER_PPROF_SYSTEM_MAPPING);

		if (name < 0)
			return -ENOMEM;
		ember__pprof__mapping__init(pm);
		pm->id = ++at;
		pm->filename = name;
		pm->has_functions = true; /* nothing to symbolize */
		b->mapping_ptrs[0] = pm;
	} else if (p->scope == EMBER_SCOPE_PROCESSES) {
		first = program_mapping(p);
		if (first != SIZE_MAX)
			err = add_mapping(b, first, at++);
	}
	for (size_t i = 0; i < n && !err; i++)
		if (i != first)
			err = add_mapping(b, i, at++);
	b->prof.n_mapping = at;
	b->prof.mapping = b->mapping_ptrs;
	return err;
}

/* Functions of the profile, plus one per location without lines ("libc.so.6+0x1f00"),
 * so that pprof shows such frames by that name instead of a bare address. */
static int build_functions_and_locations(struct pprof_build *b)
{
	const struct ember_profile *p = b->p;
	size_t nf = p->functions.len, nl = p->locations.len, nlines = 0, li = 0;
	char name[512];

	for (size_t i = 0; i < nl; i++) {
		const struct ember_location *loc = ember_profile_location(p, (uint32_t)i);

		nlines += loc->nlines ? loc->nlines : 1;
	}
	if (!ALLOC(b->functions, nf + nl) || !ALLOC(b->function_ptrs, nf + nl) ||
	    !ALLOC(b->locations, nl) || !ALLOC(b->location_ptrs, nl) || !ALLOC(b->lines, nlines) ||
	    !ALLOC(b->line_ptrs, nlines))
		return -ENOMEM;
	for (size_t i = 0; i < nf; i++) {
		const struct ember_function *f = ember_profile_function(p, (uint32_t)i);
		Ember__Pprof__Function *pf = &b->functions[i];

		ember__pprof__function__init(pf);
		pf->id = i + 1;
		pf->name = f->name;
		pf->system_name = f->system_name;
		pf->filename = f->filename;
		pf->start_line = f->start_line;
		b->function_ptrs[i] = pf;
	}
	b->nfunctions = nf;
	for (size_t i = 0; i < nl; i++) {
		const struct ember_location *loc = ember_profile_location(p, (uint32_t)i);
		const struct ember_line *lines = ember_profile_location_lines(p, loc);
		Ember__Pprof__Location *pl = &b->locations[i];

		ember__pprof__location__init(pl);
		pl->id = i + 1;
		pl->mapping_id = loc->mapping < p->mappings.len ? b->mapping_ids[loc->mapping] : 0;
		pl->address = loc->address;
		pl->line = &b->line_ptrs[li];
		if (!loc->nlines) {
			Ember__Pprof__Function *pf = &b->functions[b->nfunctions];
			int64_t s;

			ember_profile_unsymbolized_name(p, loc, name, sizeof(name));
			s = strtab_add(&b->strs, name);
			if (s < 0)
				return -ENOMEM;
			ember__pprof__function__init(pf);
			pf->id = b->nfunctions + 1;
			pf->name = pf->system_name = s;
			b->function_ptrs[b->nfunctions++] = pf;
			ember__pprof__line__init(&b->lines[li]);
			b->lines[li].function_id = pf->id;
			b->line_ptrs[li] = &b->lines[li];
			li++;
			pl->n_line = 1;
		} else {
			for (uint32_t j = 0; j < loc->nlines; j++, li++) {
				ember__pprof__line__init(&b->lines[li]);
				b->lines[li].function_id = lines[j].function + 1;
				b->lines[li].line = lines[j].line;
				b->line_ptrs[li] = &b->lines[li];
			}
			pl->n_line = loc->nlines;
		}
		b->location_ptrs[i] = pl;
	}
	b->prof.n_function = b->nfunctions;
	b->prof.function = b->function_ptrs;
	b->prof.n_location = nl;
	b->prof.location = b->location_ptrs;
	return 0;
}

static void num_label(Ember__Pprof__Label *l, int64_t key, int64_t num)
{
	ember__pprof__label__init(l);
	l->key = key;
	l->num = num;
}

static void str_label(Ember__Pprof__Label *l, int64_t key, int64_t str)
{
	ember__pprof__label__init(l);
	l->key = key;
	l->str = str;
}

/*
 * The labels trace_id and span_id (hex) of the span the profile's string link names
 * (EMBER_LINK_HEX), as Pyroscope names a link's: into l[0] and l[1].
 */
static int link_labels(struct pprof_build *b, uint32_t link, Ember__Pprof__Label *l)
{
	const char *hex = ember_profile_str(b->p, link);
	char trace[33], span[17];
	int64_t t, s;

	if (!hex || strlen(hex) != EMBER_LINK_HEX)
		return -EINVAL;
	memcpy(trace, hex, 32);
	trace[32] = '\0';
	memcpy(span, hex + 32, 17);
	if ((t = strtab_add(&b->strs, trace)) < 0 || (s = strtab_add(&b->strs, span)) < 0)
		return -ENOMEM;
	str_label(&l[0], b->key_trace_id, t);
	str_label(&l[1], b->key_span_id, s);
	return 0;
}

/* Labels of every sample: pid, tid, cpu, comm, thread, wait; a link's two. */
#define LABELS_PER_SAMPLE 8
#define MAX_VALUES        3

/* How many "key=value\n" lines the profile's string id holds (0: none). */
static size_t label_lines(const struct ember_profile *p, uint32_t id)
{
	size_t n = 0;

	for (const char *c = id ? ember_profile_str(p, id) : ""; *c; c++)
		n += *c == '\n';
	return n;
}

/* A goroutine's labels (the profile's string id of "key=value\n" lines) into l: how many. */
static int goroutine_labels(struct pprof_build *b, uint32_t id, Ember__Pprof__Label *l, size_t *n)
{
	const char *line = ember_profile_str(b->p, id);
	char key[EMBER_LABEL_TEXT], value[EMBER_LABEL_TEXT];

	for (const char *end; line && (end = strchr(line, '\n')); line = end + 1) {
		const char *eq = memchr(line, '=', (size_t)(end - line));
		int64_t k, v;

		if (!eq || (size_t)(eq - line) >= sizeof(key) || (size_t)(end - eq) > sizeof(value))
			continue;
		memcpy(key, line, (size_t)(eq - line));
		key[eq - line] = '\0';
		memcpy(value, eq + 1, (size_t)(end - eq - 1));
		value[end - eq - 1] = '\0';
		if ((k = strtab_add(&b->strs, key)) < 0 || (v = strtab_add(&b->strs, value)) < 0)
			return -ENOMEM;
		str_label(&l[(*n)++], k, v);
	}
	return 0;
}

static int build_samples(struct pprof_build *b)
{
	const struct ember_profile *p = b->p;
	size_t n = p->samples.len, nids = 0, idi = 0, nlabels = 0, li = 0;

	for (size_t i = 0; i < n; i++) {
		const struct ember_sample *s = ember_profile_sample(p, (uint32_t)i);

		nids += ember_profile_stack(p, s->key.stack)->depth;
		nlabels += LABELS_PER_SAMPLE + label_lines(p, s->key.labels);
	}
	if (!ALLOC(b->samples, n) || !ALLOC(b->sample_ptrs, n) || !ALLOC(b->location_ids, nids) ||
	    !ALLOC(b->values, MAX_VALUES * n) || !ALLOC(b->labels, nlabels) ||
	    !ALLOC(b->label_ptrs, nlabels))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct ember_sample *s = ember_profile_sample(p, (uint32_t)i);
		const struct ember_stack *st = ember_profile_stack(p, s->key.stack);
		const uint32_t *locs = ember_profile_stack_locations(p, st);
		Ember__Pprof__Sample *ps = &b->samples[i];
		Ember__Pprof__Label *l = &b->labels[li];
		size_t nl = 0;

		ember__pprof__sample__init(ps);
		ps->location_id = &b->location_ids[idi];
		for (uint32_t j = 0; j < st->depth; j++)
			b->location_ids[idi++] = locs[j] + 1;
		ps->n_location_id = st->depth;
		ps->value = &b->values[MAX_VALUES * i];
		ps->value[0] = (int64_t)s->count;
		ps->value[1] = (int64_t)(s->count * p->period_ns);
		if (b->off_cpu_index >= 0)
			ps->value[b->off_cpu_index] = (int64_t)s->off_cpu_ns;
		ps->n_value = b->prof.n_sample_type;
		num_label(&l[nl++], b->key_pid, s->key.pid);
		num_label(&l[nl++], b->key_tid, s->key.tid);
		if (s->key.cpu != EMBER_NONE)
			num_label(&l[nl++], b->key_cpu, s->key.cpu);
		if (s->key.comm)
			str_label(&l[nl++], b->key_comm, s->key.comm);
		if (s->key.thread_name)
			str_label(&l[nl++], b->key_thread, s->key.thread_name);
		if (s->key.wait)
			str_label(&l[nl++], b->key_wait, s->key.wait);
		if (s->key.link) {
			int err = link_labels(b, s->key.link, &l[nl]);

			if (err)
				return err;
			nl += 2;
		}
		if (s->key.labels) {
			int err = goroutine_labels(b, s->key.labels, l, &nl);

			if (err)
				return err;
		}
		ps->label = &b->label_ptrs[li];
		li += nl;
		for (size_t j = 0; j < nl; j++)
			ps->label[j] = &l[j];
		ps->n_label = nl;
		b->sample_ptrs[i] = ps;
	}
	b->prof.n_sample = n;
	b->prof.sample = b->sample_ptrs;
	return 0;
}

static int add_comment(struct pprof_build *b, const char *text)
{
	int64_t s = strtab_add(&b->strs, text);

	if (s < 0)
		return -ENOMEM;
	b->comments[b->prof.n_comment++] = s;
	return 0;
}

/*
 * What a reader of the profile needs first, in one line pprof shows above
 * its tables (no '=': readers of the statistics skip it).
 */
static void summary_line(const struct ember_profile *p, char *text, size_t size)
{
	uint64_t lost = ember_profile_stat_get(p, "lost.samples");
	uint64_t stacks = ember_profile_stat_get(p, "unwind.samples");
	uint64_t complete = ember_profile_stat_get(p, "unwind.samples_complete");
	size_t n;

	n = (size_t)snprintf(text, size, "%s%s%" PRIu64 " samples, %" PRIu64 " lost", p->host,
	                     p->host[0] ? ": " : "", p->total_count, lost);
	if (p->off_cpu && n < size)
		n += (size_t)snprintf(text + n, size - n, ", %.2f s off CPU",
		                      (double)p->total_off_cpu_ns / 1e9);
	if (stacks && n < size)
		n += (size_t)snprintf(text + n, size - n, ", %.1f%% of stacks complete",
		                      100.0 * (double)(complete < stacks ? complete : stacks) /
		                          (double)stacks);
	if (n < size)
		snprintf(text + n, size - n, "; every counter: ember report --stats FILE");
}

/*
 * The statistics travel as comments "#name=value": pprof shows comments
 * starting with '#' only on request (-comments), so its header stays short;
 * `ember report --stats` prints them. The host too: pprof has no field for it.
 */
static int build_comments(struct pprof_build *b)
{
	const struct ember_profile *p = b->p;
	char text[512];
	int err = 0;

	if (!ALLOC(b->comments, p->stats.len + 3))
		return -ENOMEM;
	b->prof.comment = b->comments;
	if (p->stats.len) {
		summary_line(p, text, sizeof(text));
		err = add_comment(b, text);
	}
	if (!err && p->host[0]) {
		snprintf(text, sizeof(text), "#host=%s", p->host);
		err = add_comment(b, text);
	}
	if (!err && p->selection[0]) {
		snprintf(text, sizeof(text), "#selection=%s", p->selection);
		err = add_comment(b, text);
	}
	for (size_t i = 0; i < p->stats.len && !err; i++) {
		const struct ember_stat *st = EMBER_VEC_AT(p->stats, const struct ember_stat, i);

		snprintf(text, sizeof(text), "#%s=%" PRIu64, ember_profile_str(p, st->name),
		         st->value);
		err = add_comment(b, text);
	}
	return err;
}

int ember_pprof_encode(const struct ember_profile *p, uint8_t **out, size_t *out_len)
{
	struct pprof_build b = {.p = p};
	int err;

	ember__pprof__profile__init(&b.prof);
	if ((err = build_strings(&b)) || (err = build_types(&b)) || (err = build_mappings(&b)) ||
	    (err = build_functions_and_locations(&b)) || (err = build_samples(&b)) ||
	    (err = build_comments(&b)) || (err = finish_strings(&b)))
		goto done;
	b.prof.time_nanos = (int64_t)p->start_ns;
	b.prof.duration_nanos = p->end_ns > p->start_ns ? (int64_t)(p->end_ns - p->start_ns) : 0;
	*out_len = ember__pprof__profile__get_packed_size(&b.prof);
	*out = malloc(*out_len ? *out_len : 1);
	if (!*out) {
		err = -ENOMEM;
		goto done;
	}
	ember__pprof__profile__pack(&b.prof, *out);
done:
	build_free(&b);
	return err;
}

int ember_write_pprof(const struct ember_profile *p, FILE *out)
{
	uint8_t *buf;
	size_t len;
	int err = ember_pprof_encode(p, &buf, &len);

	if (err)
		return err;
	if (len > UINT32_MAX) {
		free(buf);
		return -E2BIG;
	}
	err = ember_gzip_write(buf, len, out);
	free(buf);
	return err;
}
