// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/perfmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shared/sorted.h"
#include "shared/vec.h"
#include "symbolizer/memory/mem_owners.h"

void ember_perfmap_init(struct ember_perfmap *m)
{
	memset(m, 0, sizeof(*m));
	ember_strtab_init(&m->names, EMBER_PERFMAP_MAX_NAMES);
}

void ember_perfmap_free(struct ember_perfmap *m)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);

	free(m->e);
	ember_strtab_free(&m->names);
	ember_perfmap_init(m);
}

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* A hex number (an 0x before it allowed, as strtoull reads it) at *s, before end, then at least
 * one blank: true, *s past the blanks. */
static bool hex_then_blank(const char **s, const char *end, uint64_t *out)
{
	const char *p = *s;
	int digits = 0;

	*out = 0;
	if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	for (; p < end && !blank(*p); p++) {
		char c = *p;
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : -1;

		if (d < 0 || ++digits > 16)
			return false;
		*out = *out << 4 | (uint64_t)d;
	}
	if (!digits || p == end)
		return false;
	while (p < end && blank(*p))
		p++;
	*s = p;
	return true;
}

/* One line, its newline taken off: -EINVAL when it is not "START SIZE NAME"; -E2BIG when the
 * map is full. */
static int parse_line(struct ember_perfmap *m, const char *s, const char *end)
{
	struct ember_perfmap_entry e;
	uint64_t size;
	int err;

	while (end > s && (blank(end[-1]) || end[-1] == '\r'))
		end--;
	if (!hex_then_blank(&s, end, &e.start) || !hex_then_blank(&s, end, &size) || s == end ||
	    memchr(s, '\0', (size_t)(end - s)))
		return -EINVAL;
	if (!size || size > EMBER_PERFMAP_MAX_SIZE || size > UINT64_MAX - e.start)
		return -EINVAL; /* names nothing, everything, or wraps */
	e.end = e.start + size;
	e.seq = (uint32_t)m->entries;
	err = EMBER_ENSURE(m->e, m->cap, m->n + 1, EMBER_PERFMAP_MAX_ENTRIES);
	if (!err)
		err = ember_strtab_add(&m->names, s, (size_t)(end - s), &e.name);
	if (err)
		return err == -ENOMEM ? err : -E2BIG;
	m->e[m->n++] = e;
	m->entries++;
	return 0;
}

size_t ember_perfmap_feed(struct ember_perfmap *m, const char *buf, size_t len)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		int err;

		if (m->skipping) { /* the rest of a line too long */
			p = nl ? nl + 1 : end;
			m->skipping = !nl;
			continue;
		}
		if (!nl && (size_t)(end - p) <= EMBER_PERFMAP_MAX_LINE)
			break; /* its end is not written yet */
		if (!nl || (size_t)(nl - p) > EMBER_PERFMAP_MAX_LINE) {
			m->lines_long++;
			m->skipping = true;
			continue;
		}
		err = nl > p ? parse_line(m, p, nl) : 0;
		m->lines_bad += err == -EINVAL;
		m->lines_dropped += err == -E2BIG || err == -ENOMEM;
		p = nl + 1;
	}
	m->bytes += (uint64_t)(p - buf);
	return (size_t)(p - buf);
}

static int by_start(const void *a, const void *b)
{
	const struct ember_perfmap_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const char *ember_perfmap_lookup(struct ember_perfmap *m, uint64_t addr)
{
	const struct ember_perfmap_entry *best = NULL;
	size_t i;

	if (m->nsorted < m->n) {
		qsort(m->e, m->n, sizeof(*m->e), by_start);
		m->nsorted = m->n;
	}
	i = EMBER_UPPER_BOUND(m->e, m->n, start, addr);
	for (size_t k = 0; k < EMBER_PERFMAP_SCAN && i > 0; k++) {
		const struct ember_perfmap_entry *e = &m->e[--i];

		if (addr < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	return best ? ember_strtab_at(&m->names, best->name) : NULL;
}
