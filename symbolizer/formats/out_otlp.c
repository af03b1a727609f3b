// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/out_otlp.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "otlp/profiles_service.pb-c.h"
#include "symbolizer/formats/utf8.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
    OtlpRequest;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary OtlpDictionary;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles OtlpResourceProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles OtlpScopeProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile OtlpProfile;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType OtlpValueType;
typedef Opentelemetry__Proto__Profiles__V1development__Sample OtlpSample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping OtlpMapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location OtlpLocation;
typedef Opentelemetry__Proto__Profiles__V1development__Line OtlpLine;
typedef Opentelemetry__Proto__Profiles__V1development__Function OtlpFunction;
typedef Opentelemetry__Proto__Profiles__V1development__Stack OtlpStack;
typedef Opentelemetry__Proto__Profiles__V1development__Link OtlpLink;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit OtlpAttribute;
typedef Opentelemetry__Proto__Common__V1__AnyValue OtlpAnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue OtlpKeyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope OtlpScope;
typedef Opentelemetry__Proto__Resource__V1__Resource OtlpResource;

#define SCOPE_NAME         "ember"
#define MAX_RESOURCE_ATTRS 40
/* thread.name, thread.id, cpu.logical_number, off_cpu.wait, and a goroutine's labels */
#define MAX_SAMPLE_ATTRS   (4 + EMBER_LABEL_TEXT / 4)
#define UNKNOWN_SERVICE    "unknown_service"

/*
 * Every message of a request lives in one arena that is freed as a whole
 * once the request is packed.
 */
struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	_Alignas(max_align_t) unsigned char data[];
};

struct arena {
	struct arena_chunk *head;
};

static void *arena_alloc(struct arena *a, size_t n, size_t size)
{
	const size_t align = _Alignof(max_align_t);
	struct arena_chunk *c = a->head;
	size_t bytes;

	if (size && n > SIZE_MAX / 2 / size)
		return NULL;
	bytes = (n * size + align - 1) & ~(align - 1);
	if (!bytes)
		bytes = align;
	if (!c || c->size - c->used < bytes) {
		size_t chunk = bytes > 65536 ? bytes : 65536;

		c = malloc(sizeof(*c) + chunk);
		if (!c)
			return NULL;
		c->next = a->head;
		c->used = 0;
		c->size = chunk;
		a->head = c;
	}
	c->used += bytes;
	return memset(c->data + c->used - bytes, 0, bytes);
}

static void arena_free(struct arena *a)
{
	while (a->head) {
		struct arena_chunk *next = a->head->next;

		free(a->head);
		a->head = next;
	}
}

static char *arena_strdup(struct arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = arena_alloc(a, n, 1);

	return d ? memcpy(d, s, n) : NULL;
}

/*
 * s as proto3 wants its strings, UTF-8 (a backend refuses a whole request for one that is
 * not): s itself, or an arena copy with U+FFFD for each byte that starts no sequence
 * (utf8.h). NULL when out of memory.
 */
static const char *arena_utf8(struct arena *a, const char *s)
{
	char *clean, *d;

	if (ember_utf8_valid(s, strlen(s)))
		return s;
	clean = ember_utf8_sanitize(s, strlen(s));
	d = clean ? arena_strdup(a, clean) : NULL;
	free(clean);
	return d;
}

/* A table of the dictionary: pointers to its entries, deduplicated by key bytes. */
struct table {
	struct ember_vec items; /* void * */
	struct ember_vec keys;  /* fixed-size keys, parallel to items (unused for strings) */
	struct ember_index index;
};

struct attr_key {
	int32_t key;    /* string index */
	int32_t is_str; /* 1: value is the string index in num */
	int64_t num;
};

struct function_key {
	int32_t name, system_name, filename, reserved;
	int64_t start_line;
};

/*
 * A table whose entries are told apart by their packed bytes: mappings, locations and
 * stacks. In ELF addresses, two processes' mappings of one file are one mapping, and the
 * frames and stacks in it one location and one stack.
 */
struct packed_table {
	struct ember_vec items; /* void * */
	struct ember_vec spans; /* struct packed_span, parallel to items */
	struct ember_vec bytes; /* the entries' packed forms, one after the other */
	struct ember_index index;
};

struct packed_span {
	size_t at, len;
};

struct build {
	const struct ember_profile *p;
	struct arena arena;
	struct table strings, attrs, functions;
	struct packed_table mappings, locations, stacks, links;
	int32_t *string_of, *mapping_of, *location_of, *stack_of; /* profile id -> index, 0: none */
	int32_t key_thread_name, key_thread_id, key_cpu, key_frame_type, key_wait;
	int32_t key_build_gnu, key_build_go, key_htlhash;
	int32_t frame_type_attr[EMBER_FRAME_KIND_MAX];
	bool timestamped; /* every sample has one timestamp per count */
};

static void table_init(struct table *t, size_t key_size)
{
	ember_vec_init(&t->items, sizeof(void *));
	ember_vec_init(&t->keys, key_size ? key_size : 1);
	ember_index_init(&t->index);
}

static void table_free(struct table *t)
{
	ember_vec_free(&t->items);
	ember_vec_free(&t->keys);
	ember_index_free(&t->index);
}

#define ITEM(vec, i) (((void **)(vec).items)[i])

static void packed_init(struct packed_table *t)
{
	ember_vec_init(&t->items, sizeof(void *));
	ember_vec_init(&t->spans, sizeof(struct packed_span));
	ember_vec_init(&t->bytes, 1);
	ember_index_init(&t->index);
}

static void packed_free(struct packed_table *t)
{
	ember_vec_free(&t->items);
	ember_vec_free(&t->spans);
	ember_vec_free(&t->bytes);
	ember_index_free(&t->index);
}

static int push_item(struct ember_vec *v, void *item, int32_t *out)
{
	if (v->len >= INT32_MAX)
		return -E2BIG;
	if (!ember_vec_push(v, &item, 1))
		return -ENOMEM;
	*out = (int32_t)(v->len - 1);
	return 0;
}

static bool string_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct table *t = ctx;
	const char *s = ITEM(t->items, value);

	return strlen(s) == len && !memcmp(s, key, len);
}

static bool packed_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct packed_table *t = ctx;
	const struct packed_span *sp = (const struct packed_span *)t->spans.items + value;

	return sp->len == len && !memcmp((const char *)t->bytes.items + sp->at, key, len);
}

/* The index of msg in t: an equal entry's, or msg's, appended. */
static int packed_dedup(struct build *b, struct packed_table *t, const ProtobufCMessage *msg,
                        int32_t *out)
{
	size_t len = protobuf_c_message_get_packed_size(msg), at = t->bytes.len;
	struct packed_span span = {at, len};
	uint32_t found;
	uint8_t *key;
	uint64_t h;
	int err;

	/* At least a byte: the zero entries pack to none, and key must point somewhere. */
	if (ember_vec_reserve(&t->bytes, len ? len : 1))
		return -ENOMEM;
	key = (uint8_t *)t->bytes.items + at;
	protobuf_c_message_pack(msg, key);
	h = ember_hash(&b->p->hash_key, key, len);
	if (!ember_index_find(&t->index, h, key, len, packed_eq, t, &found)) {
		*out = (int32_t)found;
		return 0;
	}
	if (!ember_vec_push(&t->spans, &span, 1))
		return -ENOMEM;
	t->bytes.len += len;
	if ((err = push_item(&t->items, (void *)msg, out)))
		return err;
	err = ember_index_upsert(&t->index, h, key, len, packed_eq, t, (uint32_t)*out, &found);
	return err < 0 ? err : 0;
}

static bool key_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct table *t = ctx;

	return len == t->keys.item_size &&
	       !memcmp((const char *)t->keys.items + (size_t)value * len, key, len);
}

/* The index of s in the string table; s must outlive the build (profile or arena memory). */
static int str_index(struct build *b, const char *s, int32_t *out)
{
	size_t len;
	uint64_t h;
	uint32_t found;
	int err;

	s = arena_utf8(&b->arena, s);
	if (!s)
		return -ENOMEM;
	len = strlen(s);
	h = ember_hash(&b->p->hash_key, s, len);

	if (!ember_index_find(&b->strings.index, h, s, len, string_eq, &b->strings, &found)) {
		*out = (int32_t)found;
		return 0;
	}
	err = push_item(&b->strings.items, (void *)s, out);
	if (err)
		return err;
	err = ember_index_upsert(&b->strings.index, h, s, len, string_eq, &b->strings,
	                         (uint32_t)*out, &found);
	return err < 0 ? err : 0;
}

static int profile_str(struct build *b, uint32_t id, int32_t *out)
{
	int err;

	if (id >= ember_profile_nstrings(b->p))
		return -EINVAL;
	if (b->string_of[id]) {
		*out = b->string_of[id];
		return 0;
	}
	err = str_index(b, ember_profile_str(b->p, id), out);
	if (!err)
		b->string_of[id] = *out;
	return err;
}

/* Looks key up in t; when absent, make() builds the entry. */
static int table_dedup(struct build *b, struct table *t, const void *key,
                       void *(*make)(struct build *b, const void *key), int32_t *out)
{
	size_t len = t->keys.item_size;
	uint64_t h = ember_hash(&b->p->hash_key, key, len);
	uint32_t found;
	void *item;
	int err;

	if (!ember_index_find(&t->index, h, key, len, key_eq, t, &found)) {
		*out = (int32_t)found;
		return 0;
	}
	item = make(b, key);
	if (!item)
		return -ENOMEM;
	if (!ember_vec_push(&t->keys, key, 1))
		return -ENOMEM;
	err = push_item(&t->items, item, out);
	if (err)
		return err;
	err = ember_index_upsert(&t->index, h, key, len, key_eq, t, (uint32_t)*out, &found);
	return err < 0 ? err : 0;
}

static void *make_attr(struct build *b, const void *key)
{
	const struct attr_key *k = key;
	OtlpAttribute *a = arena_alloc(&b->arena, 1, sizeof(*a));
	OtlpAnyValue *v = arena_alloc(&b->arena, 1, sizeof(*v));

	if (!a || !v)
		return NULL;
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(a);
	opentelemetry__proto__common__v1__any_value__init(v);
	a->key_strindex = k->key;
	if (k->is_str) {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		v->string_value = ITEM(b->strings.items, k->num);
	} else {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
		v->int_value = k->num;
	}
	a->value = v;
	return a;
}

static int attr_str(struct build *b, int32_t key, int32_t value_str, int32_t *out)
{
	struct attr_key k = {.key = key, .is_str = 1, .num = value_str};

	return table_dedup(b, &b->attrs, &k, make_attr, out);
}

static int attr_int(struct build *b, int32_t key, int64_t value, int32_t *out)
{
	struct attr_key k = {.key = key, .is_str = 0, .num = value};

	return table_dedup(b, &b->attrs, &k, make_attr, out);
}

static void *make_function(struct build *b, const void *key)
{
	const struct function_key *k = key;
	OtlpFunction *f = arena_alloc(&b->arena, 1, sizeof(*f));

	if (!f)
		return NULL;
	opentelemetry__proto__profiles__v1development__function__init(f);
	f->name_strindex = k->name;
	f->system_name_strindex = k->system_name;
	f->filename_strindex = k->filename;
	f->start_line = k->start_line;
	return f;
}

static int function_index(struct build *b, uint32_t id, int32_t *out)
{
	const struct ember_function *f;
	struct function_key k = {0};
	int err;

	if (id >= b->p->functions.len)
		return -EINVAL;
	f = ember_profile_function(b->p, id);
	if ((err = profile_str(b, f->name, &k.name)) ||
	    (err = profile_str(b, f->system_name, &k.system_name)) ||
	    (err = profile_str(b, f->filename, &k.filename)))
		return err;
	k.start_line = f->start_line;
	return table_dedup(b, &b->functions, &k, make_function, out);
}

/* Attribute indices: an arena copy of n indices. */
static int32_t *indices(struct build *b, const int32_t *v, size_t n)
{
	int32_t *out = arena_alloc(&b->arena, n, sizeof(*out));

	return out ? memcpy(out, v, n * sizeof(*out)) : NULL;
}

static int mapping_index(struct build *b, uint32_t id, int32_t *out)
{
	const struct ember_mapping *m;
	OtlpMapping *om;
	int32_t attrs[3], s;
	size_t n = 0;
	int err;

	if (id >= b->p->mappings.len)
		return -EINVAL;
	if (b->mapping_of[id]) {
		*out = b->mapping_of[id];
		return 0;
	}
	m = ember_profile_mapping(b->p, id);
	om = arena_alloc(&b->arena, 1, sizeof(*om));
	if (!om)
		return -ENOMEM;
	opentelemetry__proto__profiles__v1development__mapping__init(om);
	/* In the file's ELF addresses when known, as backends resolve them (a build id names
	 * the file; where a process happened to load it does not matter to them). */
	om->memory_start = m->has_file_vaddr ? m->file_vaddr : m->start;
	om->memory_limit = om->memory_start + (m->limit - m->start);
	om->file_offset = m->file_offset;
	if ((err = profile_str(b, m->filename, &om->filename_strindex)))
		return err;
	if (m->gnu_build_id && ((err = profile_str(b, m->gnu_build_id, &s)) ||
	                        (err = attr_str(b, b->key_build_gnu, s, &attrs[n++]))))
		return err;
	if (m->go_build_id && ((err = profile_str(b, m->go_build_id, &s)) ||
	                       (err = attr_str(b, b->key_build_go, s, &attrs[n++]))))
		return err;
	if (m->file_hash && ((err = profile_str(b, m->file_hash, &s)) ||
	                     (err = attr_str(b, b->key_htlhash, s, &attrs[n++]))))
		return err;
	if (n && !(om->attribute_indices = indices(b, attrs, n)))
		return -ENOMEM;
	om->n_attribute_indices = n;
	err = packed_dedup(b, &b->mappings, &om->base, out);
	if (!err)
		b->mapping_of[id] = *out;
	return err;
}

/*
 * Whether a location goes with its lines. One ember could not name goes as a bare address in
 * its mapping: a made-up name would tell Pyroscope the mapping is named and keep it from
 * naming it by its build id. With backend symbols, so do all of a file with a GNU build id.
 */
static bool with_lines(const struct build *b, const struct ember_location *loc,
                       const struct ember_mapping *m)
{
	return loc->nlines && !(b->p->otlp_symbols == EMBER_OTLP_SYMBOLS_BACKEND && m &&
	                        m->has_file_vaddr && m->gnu_build_id);
}

static int location_index(struct build *b, uint32_t id, int32_t *out)
{
	const struct ember_mapping *m = NULL;
	const struct ember_location *loc;
	const struct ember_line *lines;
	OtlpLocation *ol;
	uint32_t nlines;
	int err;

	if (id >= b->p->locations.len)
		return -EINVAL;
	if (b->location_of[id]) {
		*out = b->location_of[id];
		return 0;
	}
	loc = ember_profile_location(b->p, id);
	lines = ember_profile_location_lines(b->p, loc);
	if (loc->mapping != EMBER_NONE) {
		if (loc->mapping >= b->p->mappings.len)
			return -EINVAL;
		m = ember_profile_mapping(b->p, loc->mapping);
	}
	nlines = with_lines(b, loc, m) ? loc->nlines : 0;
	ol = arena_alloc(&b->arena, 1, sizeof(*ol));
	if (!ol)
		return -ENOMEM;
	opentelemetry__proto__profiles__v1development__location__init(ol);
	ol->lines = arena_alloc(&b->arena, nlines, sizeof(*ol->lines));
	if (!ol->lines)
		return -ENOMEM;
	/* In its mapping's ELF addresses, as the mapping is (mapping_index). */
	ol->address =
	    m && m->has_file_vaddr ? loc->address - m->start + m->file_vaddr : loc->address;
	if (m && (err = mapping_index(b, loc->mapping, &ol->mapping_index)))
		return err;
	for (uint32_t i = 0; i < nlines; i++) {
		OtlpLine *l = arena_alloc(&b->arena, 1, sizeof(*l));

		if (!l)
			return -ENOMEM;
		opentelemetry__proto__profiles__v1development__line__init(l);
		l->line = lines[i].line;
		if ((err = function_index(b, lines[i].function, &l->function_index)))
			return err;
		ol->lines[i] = l;
	}
	ol->n_lines = nlines;
	if (loc->kind != EMBER_FRAME_UNKNOWN && loc->kind < EMBER_FRAME_KIND_MAX) {
		int32_t *attr = &b->frame_type_attr[loc->kind];

		if (!*attr) {
			int32_t value;

			err = str_index(b, ember_frame_kind_name(loc->kind), &value);
			if (!err)
				err = attr_str(b, b->key_frame_type, value, attr);
			if (err)
				return err;
		}
		ol->attribute_indices = attr;
		ol->n_attribute_indices = 1;
	}
	err = packed_dedup(b, &b->locations, &ol->base, out);
	if (!err)
		b->location_of[id] = *out;
	return err;
}

static int stack_index(struct build *b, uint32_t id, int32_t *out)
{
	const struct ember_stack *st;
	const uint32_t *locs;
	OtlpStack *os;
	int err;

	if (id >= b->p->stacks.len)
		return -EINVAL;
	if (b->stack_of[id]) {
		*out = b->stack_of[id];
		return 0;
	}
	st = ember_profile_stack(b->p, id);
	locs = ember_profile_stack_locations(b->p, st);
	os = arena_alloc(&b->arena, 1, sizeof(*os));
	if (!os)
		return -ENOMEM;
	opentelemetry__proto__profiles__v1development__stack__init(os);
	os->location_indices = arena_alloc(&b->arena, st->depth, sizeof(int32_t));
	if (!os->location_indices)
		return -ENOMEM;
	for (uint32_t i = 0; i < st->depth; i++) {
		err = location_index(b, locs[i], &os->location_indices[i]);
		if (err)
			return err;
	}
	os->n_location_indices = st->depth;
	err = packed_dedup(b, &b->stacks, &os->base, out);
	if (!err)
		b->stack_of[id] = *out;
	return err;
}

/*
 * A goroutine's labels (the profile's string id of "key=value\n" lines) as sample
 * attributes, appended to attrs (n of them so far): each label's key as it is, as
 * Pyroscope's pprof labels and the OpenTelemetry profiler's custom labels carry them; a
 * key that is one of ember's own sample attributes is left out.
 */
static int label_attrs(struct build *b, uint32_t id, int32_t *attrs, size_t *n)
{
	static const char *const ours[] = {"thread.name", "thread.id", "cpu.logical_number",
	                                   "off_cpu.wait"};
	const char *line = ember_profile_str(b->p, id);

	for (const char *end; line && (end = strchr(line, '\n')) && *n < MAX_SAMPLE_ATTRS;
	     line = end + 1) {
		const char *eq = memchr(line, '=', (size_t)(end - line));
		char *key, *value;
		int32_t k, v;
		bool own = false;
		int err;

		if (!eq || eq == line)
			continue;
		key = arena_alloc(&b->arena, (size_t)(end - line) + 2, 1);
		if (!key)
			return -ENOMEM;
		memcpy(key, line, (size_t)(eq - line));
		key[eq - line] = '\0';
		value = key + (eq - line) + 1;
		memcpy(value, eq + 1, (size_t)(end - eq - 1));
		value[end - eq - 1] = '\0';
		for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
			own |= !strcmp(key, ours[i]);
		if (own)
			continue;
		if ((err = str_index(b, key, &k)) || (err = str_index(b, value, &v)) ||
		    (err = attr_str(b, k, v, &attrs[(*n)++])))
			return err;
	}
	return 0;
}

/* The link table's entry of the span the profile's string id names (EMBER_LINK_HEX). */
static int link_index(struct build *b, uint32_t id, int32_t *out)
{
	const char *hex = id < ember_profile_nstrings(b->p) ? ember_profile_str(b->p, id) : NULL;
	OtlpLink *link = arena_alloc(&b->arena, 1, sizeof(*link));
	uint8_t *ids = arena_alloc(&b->arena, EMBER_LINK_HEX / 2, 1);
	size_t n = 0;

	if (!link || !ids)
		return -ENOMEM;
	if (!hex || sodium_hex2bin(ids, EMBER_LINK_HEX / 2, hex, strlen(hex), NULL, &n, NULL) ||
	    n != EMBER_LINK_HEX / 2)
		return -EINVAL;
	opentelemetry__proto__profiles__v1development__link__init(link);
	link->trace_id = (ProtobufCBinaryData){16, ids};
	link->span_id = (ProtobufCBinaryData){8, ids + 16};
	return packed_dedup(b, &b->links, &link->base, out);
}

static int build_sample(struct build *b, const struct ember_sample *s, OtlpSample **out)
{
	OtlpSample *os = arena_alloc(&b->arena, 1, sizeof(*os));
	int32_t attrs[MAX_SAMPLE_ATTRS];
	size_t n = 0, nvalues;
	int err;

	if (!os)
		return -ENOMEM;
	opentelemetry__proto__profiles__v1development__sample__init(os);
	if ((err = stack_index(b, s->key.stack, &os->stack_index)))
		return err;
	if (s->key.thread_name) {
		int32_t name;

		if ((err = profile_str(b, s->key.thread_name, &name)) ||
		    (err = attr_str(b, b->key_thread_name, name, &attrs[n++])))
			return err;
	}
	if ((err = attr_int(b, b->key_thread_id, s->key.tid, &attrs[n++])))
		return err;
	if (s->key.cpu != EMBER_NONE && (err = attr_int(b, b->key_cpu, s->key.cpu, &attrs[n++])))
		return err;
	if (s->key.wait) {
		int32_t reason;

		if ((err = profile_str(b, s->key.wait, &reason)) ||
		    (err = attr_str(b, b->key_wait, reason, &attrs[n++])))
			return err;
	}
	if (s->key.labels && (err = label_attrs(b, s->key.labels, attrs, &n)))
		return err;
	if (!(os->attribute_indices = indices(b, attrs, n)))
		return -ENOMEM;
	os->n_attribute_indices = n;
	if (s->key.link && (err = link_index(b, s->key.link, &os->link_index)))
		return err;
	/* Timestamps alone, each counting one (Pyroscope refuses a whole request where a CPU
	 * sample has more than one value), or one total when times are unknown; off-CPU
	 * samples one value, the nanoseconds waited at that stack. */
	nvalues = b->timestamped && !s->key.wait ? 0 : 1;
	if (!(os->values = arena_alloc(&b->arena, nvalues, sizeof(int64_t))))
		return -ENOMEM;
	for (size_t i = 0; i < nvalues; i++)
		os->values[i] = s->key.wait      ? (int64_t)s->off_cpu_ns
		                : b->timestamped ? 1
		                                 : (int64_t)s->count;
	os->n_values = nvalues;
	if (b->timestamped && !s->key.wait) {
		os->timestamps_unix_nano = s->timestamps;
		os->n_timestamps_unix_nano = s->ntimestamps;
	}
	*out = os;
	return 0;
}

static int kv(struct build *b, OtlpKeyValue **slot, const char *key, const char *str, int64_t num)
{
	OtlpKeyValue *k = arena_alloc(&b->arena, 1, sizeof(*k));
	OtlpAnyValue *v = arena_alloc(&b->arena, 1, sizeof(*v));

	if (!k || !v || !(key = arena_utf8(&b->arena, key)) ||
	    (str && !(str = arena_utf8(&b->arena, str))))
		return -ENOMEM;
	opentelemetry__proto__common__v1__key_value__init(k);
	opentelemetry__proto__common__v1__any_value__init(v);
	k->key = (char *)key;
	if (str) {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		v->string_value = (char *)str;
	} else {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
		v->int_value = num;
	}
	k->value = v;
	*slot = k;
	return 0;
}

static bool has_key(OtlpKeyValue **kvs, size_t n, const char *key, size_t key_len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(kvs[i]->key) == key_len && !memcmp(kvs[i]->key, key, key_len))
			return true;
	return false;
}

/* The resource of process pid: what the profile knows of it, plus configuration. */
/* Adds "key=value" lines as attributes whose keys are not among kvs' n yet. */
static int add_lines(struct build *b, const char *lines, OtlpKeyValue **kvs, size_t *n)
{
	for (const char *line = lines; *line && *n < MAX_RESOURCE_ATTRS;) {
		const char *eol = strchr(line, '\n'), *eq = strchr(line, '=');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char *key;
		int err;

		if (eq && eq < line + len && eq > line &&
		    !has_key(kvs, *n, line, (size_t)(eq - line))) {
			key = arena_alloc(&b->arena, len + 1, 1);
			if (!key)
				return -ENOMEM;
			memcpy(key, line, len);
			key[eq - line] = '\0';
			if ((err = kv(b, &kvs[(*n)++], key, key + (eq - line) + 1, 0)))
				return err;
		}
		line += len + (eol ? 1 : 0);
	}
	return 0;
}

/* The service.name line among a process's published lines, if any, as *service. */
static int context_service(struct build *b, const char *lines, const char **service)
{
	static const char key[] = "service.name=";

	for (const char *line = lines; *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);

		if (len > sizeof(key) - 1 && !strncmp(line, key, sizeof(key) - 1)) {
			char *value = arena_alloc(&b->arena, len - (sizeof(key) - 1) + 1, 1);

			if (!value)
				return -ENOMEM;
			memcpy(value, line + sizeof(key) - 1, len - (sizeof(key) - 1));
			*service = value;
			return 0;
		}
		line += len + (eol ? 1 : 0);
	}
	return 0;
}

static int build_resource(struct build *b, uint32_t pid, const char *comm, OtlpResource **out)
{
	const struct ember_profile *p = b->p;
	const struct ember_process_attrs *pa = ember_profile_find_process(p, pid);
	const char *path = pa && pa->exe_path ? ember_profile_str(p, pa->exe_path) : NULL;
	const char *name = path && strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	OtlpResource *r = arena_alloc(&b->arena, 1, sizeof(*r));
	OtlpKeyValue **kvs = arena_alloc(&b->arena, MAX_RESOURCE_ATTRS, sizeof(*kvs));
	const char *context = pa && pa->context ? ember_profile_str(p, pa->context) : "";
	const char *service = p->service_name;
	size_t n = 0;
	int err = 0;

	if (!r || !kvs)
		return -ENOMEM;
	opentelemetry__proto__resource__v1__resource__init(r);
	if (!name || !*name)
		name = comm;
	/* The name a process gives itself comes first, then --service-name, then the guess. */
	if ((err = context_service(b, context, &service)))
		return err;
	if (!*service) {
		char *s = arena_alloc(&b->arena, strlen(UNKNOWN_SERVICE) + strlen(name) + 2, 1);

		if (!s)
			return -ENOMEM;
		strcpy(s, UNKNOWN_SERVICE);
		if (*name) {
			strcat(s, ":");
			strcat(s, name);
		}
		service = s;
	}
	if ((err = kv(b, &kvs[n++], "service.name", service, 0)) ||
	    (*p->host && (err = kv(b, &kvs[n++], "host.name", p->host, 0))) ||
	    (err = kv(b, &kvs[n++], "process.pid", NULL, pid)) ||
	    (*name && (err = kv(b, &kvs[n++], "process.executable.name", name, 0))) ||
	    (path && (err = kv(b, &kvs[n++], "process.executable.path", path, 0))) ||
	    (pa && pa->container_id &&
	     (err = kv(b, &kvs[n++], "container.id", ember_profile_str(p, pa->container_id), 0))))
		return err;
	/* What the process published, then the configured attributes: neither overrides a key
	 * above (ember's facts about a process are not the process's to choose). */
	if ((err = add_lines(b, context, kvs, &n)) || (err = add_lines(b, p->resource_attrs, kvs, &n)))
		return err;
	r->attributes = kvs;
	r->n_attributes = n;
	*out = r;
	return 0;
}

static int cmp_by_pid(const void *a, const void *b, void *ctx)
{
	const struct ember_profile *p = ctx;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	uint32_t pa = ember_profile_sample(p, ia)->key.pid,
		 pb = ember_profile_sample(p, ib)->key.pid;

	if (pa != pb)
		return pa < pb ? -1 : 1;
	return ia < ib ? -1 : ia > ib;
}

struct time_range {
	uint64_t start, end;
};

static struct time_range profile_time_range(const struct ember_profile *p)
{
	struct time_range t = {p->start_ns, p->end_ns > p->start_ns ? p->end_ns : p->start_ns};

	/* Timestamps must fall in [start, start + duration): widen the range to cover
	 * samples that were read after the interval was cut. */
	for (size_t i = 0; i < p->samples.len; i++) {
		const struct ember_sample *s = ember_profile_sample(p, (uint32_t)i);

		for (uint32_t j = 0; j < s->ntimestamps; j++) {
			if (!t.start || s->timestamps[j] < t.start)
				t.start = s->timestamps[j];
			if (s->timestamps[j] >= t.end)
				t.end = s->timestamps[j] + 1;
		}
	}
	return t;
}

/* The parts every Profile of the request shares. */
struct profile_common {
	OtlpValueType *sample_type, *period_type, *off_cpu_type, *no_period;
	OtlpScope *scope;
	struct time_range time;
};

static int build_common(struct build *b, struct profile_common *c)
{
	int err;

	c->sample_type = arena_alloc(&b->arena, 1, sizeof(OtlpValueType));
	c->period_type = arena_alloc(&b->arena, 1, sizeof(OtlpValueType));
	c->off_cpu_type = arena_alloc(&b->arena, 1, sizeof(OtlpValueType));
	c->no_period = arena_alloc(&b->arena, 1, sizeof(OtlpValueType));
	c->scope = arena_alloc(&b->arena, 1, sizeof(OtlpScope));
	if (!c->sample_type || !c->period_type || !c->off_cpu_type || !c->no_period || !c->scope)
		return -ENOMEM;
	opentelemetry__proto__profiles__v1development__value_type__init(c->no_period);
	opentelemetry__proto__profiles__v1development__value_type__init(c->sample_type);
	opentelemetry__proto__profiles__v1development__value_type__init(c->period_type);
	opentelemetry__proto__profiles__v1development__value_type__init(c->off_cpu_type);
	opentelemetry__proto__common__v1__instrumentation_scope__init(c->scope);
	if ((err = str_index(b, "samples", &c->sample_type->type_strindex)) ||
	    (err = str_index(b, "count", &c->sample_type->unit_strindex)) ||
	    (err = str_index(b, "cpu", &c->period_type->type_strindex)) ||
	    (err = str_index(b, "nanoseconds", &c->period_type->unit_strindex)) ||
	    (err = str_index(b, "off_cpu", &c->off_cpu_type->type_strindex)) ||
	    (err = str_index(b, "nanoseconds", &c->off_cpu_type->unit_strindex)))
		return err;
	c->scope->name = SCOPE_NAME;
	c->scope->version = EMBER_VERSION;
	c->time = profile_time_range(b->p);
	return 0;
}

/*
 * One Profile of the samples order[0..n) whose kind (CPU or off-CPU) is off_cpu: CPU samples
 * as samples/count with period cpu/nanoseconds, off-CPU samples as off_cpu/nanoseconds.
 */
static int build_profile(struct build *b, const struct profile_common *c, const uint32_t *order,
                         size_t n, bool off_cpu, OtlpProfile **out)
{
	OtlpProfile *prof = arena_alloc(&b->arena, 1, sizeof(*prof));
	OtlpSample **samples = arena_alloc(&b->arena, n, sizeof(*samples));
	uint8_t *id = arena_alloc(&b->arena, 16, 1);
	size_t ns = 0;
	int err;

	if (!prof || !samples || !id)
		return -ENOMEM;
	opentelemetry__proto__profiles__v1development__profile__init(prof);
	for (size_t i = 0; i < n; i++) {
		const struct ember_sample *s = ember_profile_sample(b->p, order[i]);

		if ((s->key.wait != 0) != off_cpu)
			continue;
		err = build_sample(b, s, &samples[ns++]);
		if (err)
			return err;
	}
	prof->sample_type = off_cpu ? c->off_cpu_type : c->sample_type;
	/* Off-CPU samples have no period, but Parca refuses a whole request holding a Profile
	 * without a period_type: an empty one is sent, with period 0 (which Pyroscope reads as
	 * off-CPU, whatever the period's type). */
	prof->period_type = off_cpu ? c->no_period : c->period_type;
	prof->period = off_cpu ? 0 : (int64_t)b->p->period_ns;
	prof->time_unix_nano = c->time.start;
	prof->duration_nano = c->time.end - c->time.start;
	randombytes_buf(id, 16);
	prof->profile_id.data = id;
	prof->profile_id.len = 16;
	prof->samples = samples;
	prof->n_samples = ns;
	*out = prof;
	return 0;
}

/*
 * One ResourceProfiles for the samples order[0..n) (all of one process): a
 * CPU profile, and an off-CPU profile when the process has off-CPU samples.
 */
static int build_resource_profiles(struct build *b, const struct profile_common *c,
                                   const uint32_t *order, size_t n, OtlpResourceProfiles **out)
{
	const struct ember_sample *first = ember_profile_sample(b->p, order[0]);
	OtlpResourceProfiles *rp = arena_alloc(&b->arena, 1, sizeof(*rp));
	OtlpScopeProfiles *sp = arena_alloc(&b->arena, 1, sizeof(*sp));
	OtlpScopeProfiles **sps = arena_alloc(&b->arena, 1, sizeof(*sps));
	OtlpProfile **profs = arena_alloc(&b->arena, 2, sizeof(*profs));
	size_t nprofs = 0, ncpu = 0;
	int err;

	if (!rp || !sp || !sps || !profs)
		return -ENOMEM;
	opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
	opentelemetry__proto__profiles__v1development__scope_profiles__init(sp);
	err = build_resource(b, first->key.pid, ember_profile_str(b->p, first->key.comm),
	                     &rp->resource);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		ncpu += !ember_profile_sample(b->p, order[i])->key.wait;
	if (ncpu && (err = build_profile(b, c, order, n, false, &profs[nprofs++])))
		return err;
	if (ncpu < n && (err = build_profile(b, c, order, n, true, &profs[nprofs++])))
		return err;
	sp->scope = c->scope;
	sp->profiles = profs;
	sp->n_profiles = nprofs;
	sps[0] = sp;
	rp->scope_profiles = sps;
	rp->n_scope_profiles = 1;
	*out = rp;
	return 0;
}

static bool all_timestamped(const struct ember_profile *p)
{
	for (size_t i = 0; i < p->samples.len; i++) {
		const struct ember_sample *s = ember_profile_sample(p, (uint32_t)i);

		if (!s->key.wait && (!s->count || s->ntimestamps != s->count))
			return false;
	}
	return true;
}

/* Index 0 of every table is its zero value. */
static int add_zero_entries(struct build *b)
{
	OtlpMapping *m = arena_alloc(&b->arena, 1, sizeof(*m));
	OtlpLocation *l = arena_alloc(&b->arena, 1, sizeof(*l));
	OtlpFunction *f = arena_alloc(&b->arena, 1, sizeof(*f));
	OtlpStack *s = arena_alloc(&b->arena, 1, sizeof(*s));
	OtlpLink *link = arena_alloc(&b->arena, 1, sizeof(*link));
	OtlpAttribute *a = arena_alloc(&b->arena, 1, sizeof(*a));
	struct function_key fk = {0};
	struct attr_key ak = {0};
	int32_t idx;
	int err;

	if (!m || !l || !f || !s || !link || !a)
		return -ENOMEM;
	opentelemetry__proto__profiles__v1development__mapping__init(m);
	opentelemetry__proto__profiles__v1development__location__init(l);
	opentelemetry__proto__profiles__v1development__function__init(f);
	opentelemetry__proto__profiles__v1development__stack__init(s);
	opentelemetry__proto__profiles__v1development__link__init(link);
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(a);
	if ((err = str_index(b, "", &idx)) ||
	    (err = packed_dedup(b, &b->mappings, &m->base, &idx)) ||
	    (err = packed_dedup(b, &b->locations, &l->base, &idx)) ||
	    (err = packed_dedup(b, &b->stacks, &s->base, &idx)) ||
	    /* Empty bytes, as pdata writes the zero ids (Parca refuses 16 and 8 zero bytes). */
	    (err = packed_dedup(b, &b->links, &link->base, &idx)))
		return err;
	/* Registered under their all-zero keys, so that no real entry can duplicate them. */
	if (!ember_vec_push(&b->functions.keys, &fk, 1) || !ember_vec_push(&b->attrs.keys, &ak, 1))
		return -ENOMEM;
	if ((err = push_item(&b->functions.items, f, &idx)) ||
	    (err = push_item(&b->attrs.items, a, &idx)))
		return err;
	{
		uint32_t stored;

		if ((err = ember_index_upsert(&b->functions.index,
		                              ember_hash(&b->p->hash_key, &fk, sizeof(fk)), &fk,
		                              sizeof(fk), key_eq, &b->functions, 0, &stored)) < 0 ||
		    (err = ember_index_upsert(&b->attrs.index,
		                              ember_hash(&b->p->hash_key, &ak, sizeof(ak)), &ak,
		                              sizeof(ak), key_eq, &b->attrs, 0, &stored)) < 0)
			return err;
	}
	return 0;
}

static int build_keys(struct build *b)
{
	int err;

	if ((err = str_index(b, "thread.name", &b->key_thread_name)) ||
	    (err = str_index(b, "thread.id", &b->key_thread_id)) ||
	    (err = str_index(b, "cpu.logical_number", &b->key_cpu)) ||
	    (err = str_index(b, "profile.frame.type", &b->key_frame_type)) ||
	    (err = str_index(b, "off_cpu.wait", &b->key_wait)) ||
	    (err = str_index(b, "process.executable.build_id.gnu", &b->key_build_gnu)) ||
	    (err = str_index(b, "process.executable.build_id.go", &b->key_build_go)) ||
	    (err = str_index(b, "process.executable.build_id.htlhash", &b->key_htlhash)))
		return err;
	return 0;
}

static void build_free(struct build *b)
{
	table_free(&b->strings);
	table_free(&b->attrs);
	table_free(&b->functions);
	packed_free(&b->mappings);
	packed_free(&b->locations);
	packed_free(&b->stacks);
	packed_free(&b->links);
	free(b->string_of);
	free(b->mapping_of);
	free(b->location_of);
	free(b->stack_of);
	arena_free(&b->arena);
}

static void fill_dictionary(struct build *b, OtlpDictionary *d)
{
	d->mapping_table = b->mappings.items.items;
	d->n_mapping_table = b->mappings.items.len;
	d->location_table = b->locations.items.items;
	d->n_location_table = b->locations.items.len;
	d->function_table = b->functions.items.items;
	d->n_function_table = b->functions.items.len;
	d->link_table = b->links.items.items;
	d->n_link_table = b->links.items.len;
	d->string_table = b->strings.items.items;
	d->n_string_table = b->strings.items.len;
	d->attribute_table = b->attrs.items.items;
	d->n_attribute_table = b->attrs.items.len;
	d->stack_table = b->stacks.items.items;
	d->n_stack_table = b->stacks.items.len;
}

/* The request of the samples order[0..ns), sorted by process. */
static int build_request(struct build *b, const uint32_t *order, size_t ns, OtlpRequest *req,
                         OtlpDictionary *dict)
{
	const struct ember_profile *p = b->p;
	size_t nres = 0;
	struct profile_common common;
	OtlpResourceProfiles **rps;
	int err;

	if ((err = add_zero_entries(b)) || (err = build_keys(b)) ||
	    (err = build_common(b, &common)))
		return err;
	b->timestamped = all_timestamped(p);
	rps = arena_alloc(&b->arena, ns, sizeof(*rps));
	if (!rps)
		return -ENOMEM;
	for (size_t i = 0; i < ns;) {
		uint32_t pid = ember_profile_sample(p, order[i])->key.pid;
		size_t j = i;

		while (j < ns && ember_profile_sample(p, order[j])->key.pid == pid)
			j++;
		err = build_resource_profiles(b, &common, &order[i], j - i, &rps[nres++]);
		if (err)
			return err;
		i = j;
	}
	fill_dictionary(b, dict);
	req->resource_profiles = rps;
	req->n_resource_profiles = nres;
	req->dictionary = dict;
	return 0;
}

/* Encodes the samples order[0..n) (sorted by process) as one request. */
static int encode_samples(const struct ember_profile *p, const uint32_t *order, size_t n,
                          uint8_t **out, size_t *out_len, size_t *nprofiles)
{
	OtlpRequest req;
	OtlpDictionary dict;
	struct build b = {.p = p};
	size_t nstr = ember_profile_nstrings(p);
	int err = -ENOMEM;

	*out = NULL;
	*out_len = 0;
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
	    &req);
	opentelemetry__proto__profiles__v1development__profiles_dictionary__init(&dict);
	table_init(&b.strings, 0);
	table_init(&b.attrs, sizeof(struct attr_key));
	table_init(&b.functions, sizeof(struct function_key));
	packed_init(&b.mappings);
	packed_init(&b.locations);
	packed_init(&b.stacks);
	packed_init(&b.links);
	b.string_of = calloc(nstr + 1, sizeof(int32_t));
	b.mapping_of = calloc(p->mappings.len + 1, sizeof(int32_t));
	b.location_of = calloc(p->locations.len + 1, sizeof(int32_t));
	b.stack_of = calloc(p->stacks.len + 1, sizeof(int32_t));
	if (b.string_of && b.mapping_of && b.location_of && b.stack_of)
		err = build_request(&b, order, n, &req, &dict);
	if (!err) {
		*out_len =
		    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(
			&req);
		*out = malloc(*out_len ? *out_len : 1);
		if (!*out)
			err = -ENOMEM;
		else
			opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(
			    &req, *out);
		if (nprofiles)
			*nprofiles = req.n_resource_profiles;
	}
	build_free(&b);
	return err;
}

/* Every sample's index, sorted by process (malloc'd; NULL when out of memory). */
static uint32_t *by_process(const struct ember_profile *p)
{
	uint32_t *order = malloc((p->samples.len ? p->samples.len : 1) * sizeof(*order));

	if (!order)
		return NULL;
	for (size_t i = 0; i < p->samples.len; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, p->samples.len, sizeof(*order), cmp_by_pid, (void *)p);
	return order;
}

int ember_otlp_encode(const struct ember_profile *p, uint8_t **out, size_t *out_len,
                      size_t *nprofiles)
{
	uint32_t *order = by_process(p);
	int err = order ? encode_samples(p, order, p->samples.len, out, out_len, nprofiles)
	                : -ENOMEM;

	free(order);
	return err;
}

/*
 * Where to cut order[0..n) in two: at the change of process nearest the middle, so that a
 * process stays in one request where it can; in the middle when all are one process's.
 */
static size_t split_point(const struct ember_profile *p, const uint32_t *order, size_t n)
{
	size_t best = n / 2, best_dist = SIZE_MAX;

	for (size_t i = 1; i < n; i++) {
		size_t dist = i > n / 2 ? i - n / 2 : n / 2 - i;

		if (ember_profile_sample(p, order[i])->key.pid !=
		        ember_profile_sample(p, order[i - 1])->key.pid &&
		    dist < best_dist) {
			best = i;
			best_dist = dist;
		}
	}
	return best;
}

static int encode_within(const struct ember_profile *p, const uint32_t *order, size_t n,
                         size_t max_bytes, ember_otlp_sink sink, void *ctx)
{
	uint64_t count = 0;
	uint8_t *buf;
	size_t len, cut;
	int err = encode_samples(p, order, n, &buf, &len, NULL);

	if (err)
		return err;
	/* One sample is as small as a request gets: it goes as it is. */
	if (len <= max_bytes || n <= 1) {
		for (size_t i = 0; i < n; i++)
			count += ember_profile_sample(p, order[i])->count;
		return sink(ctx, buf, len, count);
	}
	free(buf);
	cut = split_point(p, order, n);
	err = encode_within(p, order, cut, max_bytes, sink, ctx);
	return err ? err : encode_within(p, order + cut, n - cut, max_bytes, sink, ctx);
}

int ember_otlp_encode_split(const struct ember_profile *p, size_t max_bytes, ember_otlp_sink sink,
                            void *ctx)
{
	uint32_t *order = by_process(p);
	int err = order ? encode_within(p, order, p->samples.len, max_bytes, sink, ctx) : -ENOMEM;

	free(order);
	return err;
}

int ember_write_otlp(const struct ember_profile *p, FILE *out)
{
	uint8_t *buf;
	size_t len;
	int err = ember_otlp_encode(p, &buf, &len, NULL);

	if (err)
		return err;
	if (len && fwrite(buf, 1, len, out) != len)
		err = -EIO;
	free(buf);
	return err;
}
