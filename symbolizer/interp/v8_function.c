// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/v8_function.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/interp/v8_positions.h"

#define SCOPE_SLOTS  8         /* slots after the locals looked at */
#define SOURCE_CHUNK 4096      /* units of a source read at once */
#define MAX_POSITION (1 << 30) /* a script offset V8 can encode */

/* A tagged slot of a ScopeInfo, by index from its first field (after the map). */
static int scope_slot(const struct ember_v8_heap *h, uint64_t si, uint32_t i, uint64_t *out)
{
	return ember_v8_field(h, si, (int32_t)(8 + 8 * i), out);
}

static bool is_string(const struct ember_v8_heap *h, uint64_t v)
{
	uint32_t type;

	return !ember_v8_type(h, v, &type) && ember_v8_is_string_type(h->l, type);
}

/* A string's value, or "" when it is empty or not a string. */
static void string_or_empty(const struct ember_v8_heap *h, uint64_t v, char *out, size_t size)
{
	out[0] = '\0';
	if (is_string(h, v) && ember_v8_string(h, v, out, size))
		out[0] = '\0';
}

/* Whether a and b are a function's start and end positions. */
static bool position_pair(uint64_t a, uint64_t b)
{
	return ember_v8_is_smi(a) && ember_v8_is_smi(b) && ember_v8_smi(a) >= 0 &&
	       ember_v8_smi(a) <= ember_v8_smi(b) && ember_v8_smi(b) < MAX_POSITION;
}

/*
 * V8 13: the positions in slots 3 and 4, always there; after the locals (s), the function
 * variable (a name and a Smi) and the inferred name (a String or undefined), as flags say:
 * the first String there is the name, the next the inferred one.
 */
static int fixed_positions(const struct ember_v8_heap *h, uint64_t si, const uint64_t *s,
                           struct ember_v8_function *f, char *name, char *inferred)
{
	uint64_t start, end;
	uint32_t k = 0;

	if (scope_slot(h, si, 3, &start) || scope_slot(h, si, 4, &end))
		return -EFAULT;
	if (!position_pair(start, end))
		return -EINVAL;
	f->start = ember_v8_smi(start);
	f->end = ember_v8_smi(end);
	if (is_string(h, s[0]) && ember_v8_is_smi(s[1])) {
		string_or_empty(h, s[0], name, EMBER_V8_MAX_NAME);
		k = 2;
	}
	if (is_string(h, s[k]))
		string_or_empty(h, s[k], inferred, EMBER_V8_MAX_NAME);
	return 0;
}

/*
 * The name and positions in the ScopeInfo at si. After its flags, parameter count and
 * context local count come the locals (names, inline below EMBER_V8_INLINED_NAMES or one
 * hash table, then one Smi each), then as flags say: the function variable (a name and a
 * Smi), the inferred name (a String or undefined), the positions (two Smis). The four ways
 * the two optional parts can be there are tried, fullest first; the first whose positions
 * hold is taken.
 */
static int from_scope_info(const struct ember_v8_heap *h, uint64_t si, struct ember_v8_function *f,
                           char *name, char *inferred)
{
	const struct ember_v8_layout *l = h->l;
	uint64_t count, s[SCOPE_SLOTS], first;
	uint32_t n, at;

	if (scope_slot(h, si, (uint32_t)l->scope_info_ncontext_locals, &count) ||
	    !ember_v8_is_smi(count) || ember_v8_smi(count) < 0 ||
	    ember_v8_smi(count) > EMBER_V8_MAX_LOCALS)
		return -EINVAL;
	n = (uint32_t)ember_v8_smi(count);
	at = (uint32_t)l->scope_info_first_vars;
	if (n && scope_slot(h, si, at, &first))
		return -EFAULT;
	/* Many locals: their names in one hash table instead. */
	at += n >= EMBER_V8_INLINED_NAMES && !is_string(h, first) ? 1 + n : 2 * n;
	for (uint32_t i = 0; i < SCOPE_SLOTS; i++)
		if (scope_slot(h, si, at + i, &s[i]))
			return -EFAULT;
	if (l->fixed_positions)
		return fixed_positions(h, si, s, f, name, inferred);
	for (int variable = 1; variable >= 0; variable--) {
		for (int has_inferred = 1; has_inferred >= 0; has_inferred--) {
			uint32_t k = 0;

			if (variable && !(is_string(h, s[0]) && ember_v8_is_smi(s[1])))
				continue;
			k += variable ? 2 : 0;
			if (has_inferred && !is_string(h, s[k]) && ember_v8_is_smi(s[k]))
				continue;
			k += has_inferred ? 1 : 0;
			if (!position_pair(s[k], s[k + 1]))
				continue;
			if (variable)
				string_or_empty(h, s[0], name, EMBER_V8_MAX_NAME);
			if (has_inferred)
				string_or_empty(h, s[k - 1], inferred, EMBER_V8_MAX_NAME);
			f->start = ember_v8_smi(s[k]);
			f->end = ember_v8_smi(s[k + 1]);
			return 0;
		}
	}
	return -EINVAL;
}

int ember_v8_function_read(const struct ember_v8_heap *h, uint64_t sfi,
                           struct ember_v8_function *out)
{
	const struct ember_v8_layout *l = h->l;
	char name[EMBER_V8_MAX_NAME] = "", inferred[EMBER_V8_MAX_NAME] = "";
	uint64_t tagged = sfi + 1, nsi, script;
	uint32_t type;
	int err;

	memset(out, 0, sizeof(*out));
	out->start = out->end = -1;
	err = ember_v8_type(h, tagged, &type);
	if (err)
		return err;
	if (type != (uint32_t)l->type_sfi)
		return -EINVAL;
	if (ember_v8_field(h, tagged, l->sfi_name_or_scope_info, &nsi) ||
	    ember_v8_field(h, tagged, l->sfi_script, &script))
		return -EFAULT;
	err = ember_v8_type(h, nsi, &type);
	if (err == -EFAULT)
		return err;
	if (!err && type == (uint32_t)l->type_scope_info) {
		err = from_scope_info(h, nsi, out, name, inferred);
		if (err == -EFAULT)
			return err;
	} else if (!err && ember_v8_is_string_type(l, type)) {
		string_or_empty(h, nsi, name, sizeof(name));
	}
	if (!name[0])
		memcpy(name, inferred, sizeof(name));
	out->name = strdup(name[0] ? name : "(anonymous)");
	if (!out->name)
		return -ENOMEM;
	if (!ember_v8_type(h, script, &type) && type == (uint32_t)l->type_script)
		out->script = script;
	return 0;
}

void ember_v8_function_free(struct ember_v8_function *f)
{
	free(f->name);
	f->name = NULL;
}

/* V8's own line ends: a FixedArray of ascending Smis. 0, or -EINVAL when it has none. */
static int line_ends_of_v8(const struct ember_v8_heap *h, uint64_t ends_at,
                           struct ember_v8_script *out)
{
	const struct ember_v8_layout *l = h->l;
	uint32_t n;
	int err = ember_v8_array_length(h, ends_at, (uint32_t)l->type_fixed_array,
	                                (uint32_t)l->type_fixed_array, EMBER_V8_MAX_LINES, &n);
	uint64_t buf[256];

	if (err)
		return err;
	out->ends = malloc(sizeof(*out->ends) * (n ? n : 1));
	if (!out->ends)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i += 256) {
		uint32_t k = n - i < 256 ? n - i : 256;

		if (h->read(h->ctx, ends_at - 1 + (uint64_t)l->fixed_array_data + 8ull * i, buf,
		            8 * k))
			return -EFAULT;
		for (uint32_t j = 0; j < k; j++) {
			int32_t v = ember_v8_smi(buf[j]);

			if (!ember_v8_is_smi(buf[j]) || v < 0 ||
			    (i + j && v <= out->ends[i + j - 1]))
				return -EINVAL;
			out->ends[i + j] = v;
		}
	}
	out->nends = n;
	return 0;
}

/* Line ends counted from the source, as V8 counts them. */
static int line_ends_of_source(const struct ember_v8_heap *h, uint64_t source,
                               struct ember_v8_script *out)
{
	uint16_t units[SOURCE_CHUNK];
	size_t n = 0, cap = 1024;
	int cr = 0;

	out->ends = malloc(sizeof(*out->ends) * cap);
	if (!out->ends)
		return -ENOMEM;
	for (uint32_t at = 0; at < EMBER_V8_MAX_SOURCE;) {
		int got = ember_v8_string_units(h, source, at, SOURCE_CHUNK, units);

		if (got < 0)
			return got;
		if (!got)
			break;
		/* Room for every unit of the chunk to end a line. */
		if (n + (size_t)got > cap) {
			size_t want = cap * 2 > n + (size_t)got ? cap * 2 : n + (size_t)got;
			int32_t *grown;

			if (want > EMBER_V8_MAX_LINES)
				want = EMBER_V8_MAX_LINES;
			grown = realloc(out->ends, sizeof(*grown) * want);
			if (!grown)
				return -ENOMEM;
			out->ends = grown;
			cap = want;
		}
		if (ember_v8_line_ends_add(units, (size_t)got, (int32_t)at, out->ends, &n, cap,
		                           &cr))
			break; /* more lines than kept: the later ones are not known */
		at += (uint32_t)got;
	}
	out->nends = (uint32_t)n;
	return 0;
}

int ember_v8_script_read(const struct ember_v8_heap *h, uint64_t tagged,
                         struct ember_v8_script *out)
{
	const struct ember_v8_layout *l = h->l;
	char name[EMBER_V8_MAX_PATH];
	uint64_t name_at, ends_at, source;
	uint32_t type;
	int err;

	memset(out, 0, sizeof(*out));
	err = ember_v8_type(h, tagged, &type);
	if (err)
		return err;
	if (type != (uint32_t)l->type_script)
		return -EINVAL;
	if (ember_v8_field(h, tagged, l->script_name, &name_at) ||
	    ember_v8_field(h, tagged, l->script_line_ends, &ends_at) ||
	    ember_v8_field(h, tagged, l->script_source, &source))
		return -EFAULT;
	string_or_empty(h, name_at, name, sizeof(name));
	out->name = strdup(name);
	if (!out->name)
		return -ENOMEM;
	err = line_ends_of_v8(h, ends_at, out);
	if (err == -EINVAL) {
		free(out->ends);
		out->ends = NULL;
		out->nends = 0;
		err = line_ends_of_source(h, source, out);
	}
	if (err) {
		ember_v8_script_free(out);
		return err;
	}
	return 0;
}

void ember_v8_script_free(struct ember_v8_script *s)
{
	free(s->name);
	free(s->ends);
	s->name = NULL;
	s->ends = NULL;
	s->nends = 0;
}

int32_t ember_v8_script_line(const struct ember_v8_script *s, int32_t offset)
{
	if (offset < 0)
		return 0;
	return ember_v8_line_of(s->ends, s->nends, offset);
}
