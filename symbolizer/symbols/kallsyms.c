// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/kallsyms.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/err.h"
#include "shared/fdio.h"
#include "shared/sorted.h"
#include "shared/vec.h"
#include "shared/sort.h"
#include "symbolizer/symbols/file_id.h"
#include "symbolizer/memory/mem_owners.h"

#define MAX_NAME   512
#define LOAD_CHUNK (16 * 1024)

struct builder {
	struct ember_kallsyms *k;
	size_t cap;
	bool all_zero; /* every address so far was 0 (hidden) */
	int err;
	/* The module name of the previous line, reused while it repeats. */
	uint32_t last_module;
	size_t last_module_len;
};

/* "ffffffff81000000 T _stext" or "ffffffffc0a01000 t fn\t[module]" */
static int parse_line(struct builder *b, const char *s, const char *end, bool *all_zero)
{
	struct ember_kallsyms *k = b->k;
	const char *name, *name_end, *mod = NULL, *mod_end = NULL;
	uint64_t addr = 0;
	int digits = 0, err;
	struct ember_ksym sym;
	char type;

	while (s < end && *s != ' ') {
		char c = *s++;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (d < 0 || ++digits > 16)
			return -EINVAL;
		addr = (addr << 4) | (uint64_t)d;
	}
	if (!digits || end - s < 4 || s[2] != ' ')
		return -EINVAL;
	type = s[1];
	name = s + 3;
	name_end = name;
	while (name_end < end && *name_end != '\t' && *name_end != ' ')
		name_end++;
	if (name_end == name || name_end - name > MAX_NAME)
		return -EINVAL;
	if (name_end < end) {
		mod = memchr(name_end, '[', (size_t)(end - name_end));
		if (mod) {
			mod++;
			mod_end = memchr(mod, ']', (size_t)(end - mod));
			if (!mod_end || mod_end - mod > MAX_NAME)
				return -EINVAL;
		}
	}
	if (addr)
		*all_zero = false;
	/* Only code: text symbols (t/T) and weak code (w/W). */
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	err = EMBER_ENSURE(k->syms, b->cap, k->nsyms + 1, EMBER_KALLSYMS_MAX_SYMBOLS);
	if (err)
		return err;
	sym.addr = addr;
	err = ember_strtab_add(&k->names, name, (size_t)(name_end - name), &sym.name);
	if (err)
		return err;
	if (!mod) {
		sym.module = 0; /* names[0] is "" */
	} else if (b->last_module && b->last_module_len == (size_t)(mod_end - mod) &&
	           !memcmp(ember_strtab_at(&k->names, b->last_module), mod, b->last_module_len)) {
		sym.module = b->last_module;
	} else {
		err = ember_strtab_add(&k->names, mod, (size_t)(mod_end - mod), &sym.module);
		if (err)
			return err;
		b->last_module = sym.module;
		b->last_module_len = (size_t)(mod_end - mod);
	}
	k->syms[k->nsyms++] = sym;
	return 0;
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ember_ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void begin(struct builder *b, struct ember_kallsyms *out)
{
	uint32_t empty;

	memset(out, 0, sizeof(*out));
	memset(b, 0, sizeof(*b));
	b->k = out;
	b->all_zero = true;
	ember_strtab_init(&out->names, EMBER_STRTAB_MAX_BYTES);
	b->err = ember_strtab_add(&out->names, "", 0, &empty);
}

/* Parses the whole lines in text; returns how many bytes they took. */
static size_t feed(struct builder *b, const char *text, size_t len, bool last)
{
	const char *p = text, *end = text + len;

	while (!b->err && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl ? nl : end;

		if (!nl && !last)
			break; /* the rest of the line comes with the next read */
		if (line_end > p) {
			b->err = parse_line(b, p, line_end, &b->all_zero);
			if (b->err == -EINVAL) {
				b->k->bad_lines++;
				b->err = 0;
			}
		}
		p = nl ? nl + 1 : end;
	}
	return (size_t)(p - text);
}

static int finish(struct builder *b)
{
	struct ember_kallsyms *out = b->k;
	struct ember_ksym *exact;

	if (b->err) {
		ember_kallsyms_free(out);
		return b->err;
	}
	out->addresses_hidden = b->all_zero && out->nsyms > 0;
	if (out->addresses_hidden)
		out->nsyms = 0;
	if (out->nsyms > 1)
		ember_sort(out->syms, out->nsyms, sizeof(*out->syms), cmp_ksym);
	/* Kept for a minute or more: arrays of their exact size. */
	if (!out->nsyms) {
		free(out->syms);
		out->syms = NULL;
	} else if ((exact = realloc(out->syms, out->nsyms * sizeof(*out->syms)))) {
		out->syms = exact;
	}
	ember_strtab_shrink(&out->names);
	return 0;
}

int ember_kallsyms_parse(const char *text, size_t len, struct ember_kallsyms *out)
{
	EMBER_MEM_SCOPE(EMBER_MEM_KALLSYMS);
	struct builder b;

	if (len > EMBER_KALLSYMS_MAX_BYTES) {
		memset(out, 0, sizeof(*out));
		return -E2BIG;
	}
	begin(&b, out);
	feed(&b, text, len, true);
	return finish(&b);
}

int ember_kernel_build_id(const void *notes, size_t len, char *hex, size_t hex_size)
{
	const uint8_t *p = notes;
	size_t at = 0;

	while (len - at >= 12) {
		uint32_t namesz, descsz, type;
		size_t name_at = at + 12, desc_at, next;

		memcpy(&namesz, p + at, 4);
		memcpy(&descsz, p + at + 4, 4);
		memcpy(&type, p + at + 8, 4);
		/* Sizes as the file gives them: each checked against what is left. */
		if (namesz > len - name_at || ((namesz + 3u) & ~3u) > len - name_at)
			return -EINVAL;
		desc_at = name_at + ((namesz + 3u) & ~3u);
		if (descsz > len - desc_at || ((descsz + 3u) & ~3u) > len - desc_at)
			return -EINVAL;
		next = desc_at + ((descsz + 3u) & ~3u);
		if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 &&
		    !memcmp(p + name_at, "GNU", 4)) {
			if (!descsz || descsz > 64 || 2 * (size_t)descsz + 1 > hex_size)
				return -EINVAL;
			ember_hex(p + desc_at, descsz, hex);
			return 0;
		}
		at = next;
	}
	return -ENOENT;
}

int ember_kallsyms_load_fd(int fd, struct ember_kallsyms *out)
{
	EMBER_MEM_SCOPE(EMBER_MEM_KALLSYMS);
	/* Read and parsed a piece at a time: the text (12 MiB on a large kernel) is
	 * never whole in memory, only the table. */
	char buf[LOAD_CHUNK];
	size_t have = 0, total = 0;
	struct builder b;

	begin(&b, out);
	for (;;) {
		/* From offset 0 whatever the descriptor's position (pread, as fdio.h reads). */
		ssize_t n = pread(fd, buf + have, sizeof(buf) - have, (off_t)total);
		size_t used;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			b.err = b.err ? b.err : neg_errno();
			break;
		}
		total += (size_t)n;
		if (total > EMBER_KALLSYMS_MAX_BYTES) {
			b.err = -E2BIG;
			break;
		}
		have += (size_t)n;
		used = feed(&b, buf, have, n == 0);
		if (n == 0 || b.err)
			break;
		/* A line longer than the buffer is no line of kallsyms. */
		if (!used && have == sizeof(buf)) {
			b.err = -EINVAL;
			break;
		}
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	return finish(&b);
}

void ember_kallsyms_free(struct ember_kallsyms *k)
{
	EMBER_MEM_SCOPE(EMBER_MEM_KALLSYMS);
	free(k->syms);
	ember_strtab_free(&k->names);
	memset(k, 0, sizeof(*k));
}

const struct ember_ksym *ember_kallsyms_lookup(const struct ember_kallsyms *k, uint64_t addr)
{
	size_t lo = EMBER_UPPER_BOUND(k->syms, k->nsyms, addr, addr);

	/* Past the last symbol is not "inside" it: the kernel image ends there. */
	if (!lo || (lo == k->nsyms && addr - k->syms[lo - 1].addr > (1u << 20)))
		return NULL;
	return &k->syms[lo - 1];
}

bool ember_kallsyms_settled(const struct ember_kallsyms *k, const struct ember_ksym *s)
{
	return s && s + 1 < k->syms + k->nsyms && !*ember_ksym_module(k, s) &&
	       !*ember_ksym_module(k, s + 1);
}

void ember_kallsyms_report_stats(const struct ember_kallsyms *k, const struct ember_stat_sink *sink)
{
	ember_stat(sink, "kallsyms.symbols", k->nsyms);
	ember_stat(sink, "kallsyms.bad_lines", k->bad_lines);
}
