// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/process/maps_parser.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/err.h"
#include "shared/fdio.h"
#include "shared/vec.h"
#include "shared/sort.h"

/* Parses a hex number of at most 16 digits ending at a delimiter. */
static bool parse_hex(const char **p, const char *end, char delim, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	while (s < end && *s != delim) {
		char c = *s++;
		int d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return false;
		if (++digits > 16)
			return false;
		v = (v << 4) | (uint64_t)d;
	}
	if (!digits || s >= end)
		return false;
	*p = s + 1;
	*out = v;
	return true;
}

static bool parse_dec(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	while (s < end && *s >= '0' && *s <= '9') {
		if (++digits > 19)
			return false;
		v = v * 10 + (uint64_t)(*s++ - '0');
	}
	if (!digits)
		return false;
	*p = s;
	*out = v;
	return true;
}

/* "start-end perms offset major:minor inode   path" */
static int parse_line(struct ember_maps *m, const char *s, const char *end,
                      struct ember_map_entry *e)
{
	static const char deleted[] = " (deleted)";
	uint64_t major, minor;
	const char *path;
	size_t path_len;

	memset(e, 0, sizeof(*e));
	if (!parse_hex(&s, end, '-', &e->start) || !parse_hex(&s, end, ' ', &e->end) ||
	    e->end <= e->start)
		return -EINVAL;
	if (end - s < 5 || s[4] != ' ')
		return -EINVAL;
	e->perms = (s[0] == 'r' ? EMBER_MAP_R : 0) | (s[1] == 'w' ? EMBER_MAP_W : 0) |
	           (s[2] == 'x' ? EMBER_MAP_X : 0) | (s[3] == 'p' ? EMBER_MAP_P : 0);
	s += 5;
	if (!parse_hex(&s, end, ' ', &e->offset) || !parse_hex(&s, end, ':', &major) ||
	    !parse_hex(&s, end, ' ', &minor) || !parse_dec(&s, end, &e->inode))
		return -EINVAL;
	if (major > UINT32_MAX || minor > UINT32_MAX)
		return -EINVAL;
	e->dev_major = (uint32_t)major;
	e->dev_minor = (uint32_t)minor;
	while (s < end && *s == ' ')
		s++;
	path = s;
	path_len = (size_t)(end - s);
	if (path_len >= sizeof(deleted) - 1 &&
	    !memcmp(path + path_len - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1)) {
		e->deleted = 1;
		path_len -= sizeof(deleted) - 1;
	}
	if (!path_len)
		e->kind = EMBER_MAP_ANON;
	else if (path[0] == '/')
		e->kind = EMBER_MAP_FILE;
	else if (path_len == 6 && !memcmp(path, "[vdso]", 6))
		e->kind = EMBER_MAP_VDSO;
	else if (path_len == 10 && !memcmp(path, "[vsyscall]", 10))
		e->kind = EMBER_MAP_VSYSCALL;
	else
		e->kind = EMBER_MAP_OTHER;
	if (memchr(path, '\0', path_len))
		return -EINVAL;
	return ember_strtab_add(&m->paths, path, path_len, &e->path_off);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct ember_map_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The names OTEP 4719 gives the mapping: a memfd (deleted or not) or named anonymous memory. */
static bool is_context(const struct ember_maps *m, const struct ember_map_entry *e)
{
	static const char *const names[] = {"/memfd:OTEL_CTX", "[anon_shmem:OTEL_CTX]",
	                                    "[anon:OTEL_CTX]"};
	const char *path = ember_maps_path(m, e);

	if (!(e->perms & EMBER_MAP_R) || e->offset || e->end - e->start < 32)
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(path, names[i]))
			return true;
	return false;
}

int ember_maps_parse(const char *text, size_t len, struct ember_maps *out)
{
	size_t cap = 0, kept = 0;
	const char *p = text, *end = text + len;
	int err = 0;

	memset(out, 0, sizeof(*out));
	ember_strtab_init(&out->paths, EMBER_STRTAB_MAX_BYTES);
	if (len > EMBER_MAPS_MAX_BYTES)
		return -E2BIG;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl ? nl : end;
		struct ember_map_entry e;

		if (line_end > p) {
			if (out->count == EMBER_MAPS_MAX_ENTRIES) {
				err = -E2BIG;
				break;
			}
			err = parse_line(out, p, line_end, &e);
			if (err == -ENOMEM || err == -E2BIG)
				break;
			if (err) {
				out->bad_lines++;
				err = 0;
			} else {
				err = EMBER_ENSURE(out->entries, cap, out->count + 1,
				                   EMBER_MAPS_MAX_ENTRIES);
				if (err)
					break;
				out->entries[out->count++] = e;
			}
		}
		p = line_end + 1;
	}
	if (err) {
		ember_maps_free(out);
		return err;
	}
	/* The kernel lists mappings in order; sort anyway and drop overlaps, which
	 * only a corrupted or forged text would contain. */
	if (out->count > 1)
		ember_sort(out->entries, out->count, sizeof(*out->entries), cmp_entry);
	for (size_t i = 0; i < out->count; i++) {
		if (kept && out->entries[i].start < out->entries[kept - 1].end) {
			out->bad_lines++;
			continue;
		}
		out->entries[kept++] = out->entries[i];
	}
	out->count = kept;
	for (size_t i = 0; i < out->count && !out->context_addr; i++)
		if (is_context(out, &out->entries[i]))
			out->context_addr = out->entries[i].start;
	return 0;
}

void ember_maps_free(struct ember_maps *m)
{
	free(m->entries);
	ember_strtab_free(&m->paths);
	memset(m, 0, sizeof(*m));
}

int ember_maps_keep_executable(struct ember_maps *m)
{
	struct ember_maps kept = {.bad_lines = m->bad_lines, .context_addr = m->context_addr};
	size_t n = 0;

	for (size_t i = 0; i < m->count; i++)
		n += (m->entries[i].perms & EMBER_MAP_X) != 0;
	ember_strtab_init(&kept.paths, EMBER_STRTAB_MAX_BYTES);
	kept.entries = n ? malloc(n * sizeof(*kept.entries)) : NULL;
	if (n && !kept.entries)
		return -ENOMEM;
	for (size_t i = 0; i < m->count; i++) {
		const struct ember_map_entry *e = &m->entries[i];
		const char *path = ember_maps_path(m, e);

		if (!(e->perms & EMBER_MAP_X))
			continue;
		kept.entries[kept.count] = *e;
		if (ember_strtab_add(&kept.paths, path, strlen(path),
		                     &kept.entries[kept.count].path_off)) {
			ember_maps_free(&kept);
			return -ENOMEM;
		}
		kept.count++;
	}
	/* Exact sizes: these are kept for as long as the process lives. */
	ember_strtab_shrink(&kept.paths);
	ember_maps_free(m);
	*m = kept;
	return 0;
}

size_t ember_maps_bytes(const struct ember_maps *m)
{
	return m->count * sizeof(*m->entries) + m->paths.len;
}

const struct ember_map_entry *ember_maps_find(const struct ember_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ember_map_entry *e = &m->entries[mid];

		if (addr < e->start)
			hi = mid;
		else if (addr >= e->end)
			lo = mid + 1;
		else
			return e;
	}
	return NULL;
}

const char *ember_maps_path(const struct ember_maps *m, const struct ember_map_entry *e)
{
	return m->paths.data ? ember_strtab_at(&m->paths, e->path_off) : "";
}

long ember_maps_read_fd(int fd, char **out)
{
	return ember_read_whole_fd(fd, EMBER_MAPS_MAX_BYTES, out);
}
