// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/jvm_structs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shared/bytes.h"

#define PAGE      4096u
#define PAGES     16u /* names are string literals in libjvm's .rodata: a few dozen pages */
#define CHUNK_MAX (16u << 10)

/* The pages names were read from, by address: one read per page, not one per name. */
struct name_pages {
	uint64_t addr[PAGES]; /* 0: empty */
	uint8_t *bytes;       /* PAGES pages */
};

static const uint8_t *page_of(struct name_pages *p, ember_jvm_read_fn read, void *ctx,
                              uint64_t page)
{
	size_t slot = (size_t)(page / PAGE) % PAGES;
	uint8_t *bytes = p->bytes + slot * PAGE;

	if (p->addr[slot] == page)
		return bytes;
	p->addr[slot] = 0;
	if (!page || read(ctx, page, bytes, PAGE))
		return NULL;
	p->addr[slot] = page;
	return bytes;
}

/* The NUL-terminated name at addr into out (EMBER_JVM_MAX_NAME bytes): 0, -EFAULT, or
 * -EBADMSG when it does not end within the cap. */
static int read_name(struct name_pages *p, ember_jvm_read_fn read, void *ctx, uint64_t addr,
                     char *out)
{
	size_t len = 0;

	while (len < EMBER_JVM_MAX_NAME) {
		uint64_t at = addr + len, page = at & ~(uint64_t)(PAGE - 1);
		const uint8_t *bytes;
		size_t n, from;
		const uint8_t *nul;

		if (at < addr)
			return -EFAULT;
		bytes = page_of(p, read, ctx, page);
		if (!bytes)
			return -EFAULT;
		from = (size_t)(at - page);
		n = PAGE - from < EMBER_JVM_MAX_NAME - len ? PAGE - from : EMBER_JVM_MAX_NAME - len;
		memcpy(out + len, bytes + from, n);
		nul = memchr(bytes + from, '\0', n);
		if (nul)
			return 0;
		len += n;
	}
	return -EBADMSG;
}

static int read_u64(ember_jvm_read_fn read, void *ctx, uint64_t addr, uint64_t *out)
{
	uint8_t b[8];

	if (!addr || read(ctx, addr, b, sizeof(b)))
		return -EFAULT;
	*out = ember_le_in(b, sizeof(b), 0, 8);
	return 0;
}

/* Whether an entry field at off, width bytes wide, lies in an entry of stride bytes (or the
 * table has no such field). */
static bool field_fits(uint64_t off, uint64_t width, uint64_t stride)
{
	return off == EMBER_JVM_NONE || (off <= stride && stride - off >= width);
}

int ember_jvm_table_locate(const struct ember_jvm_table_vars *vars, uint32_t value_width,
                           ember_jvm_read_fn read, void *ctx, struct ember_jvm_table *out)
{
	const uint64_t at[5] = {vars->stride, vars->type_name, vars->field_name, vars->value,
	                        vars->address};
	uint64_t v[5];
	int err = read_u64(read, ctx, vars->base, &out->base);

	/* A variable that is there but reads EMBER_JVM_NONE is no offset either. */
	for (size_t i = 0; i < 5 && !err; i++)
		err = at[i] ? read_u64(read, ctx, at[i], &v[i]) : (v[i] = EMBER_JVM_NONE, 0);
	if (err)
		return err;
	if ((at[2] && v[2] == EMBER_JVM_NONE) || (at[4] && v[4] == EMBER_JVM_NONE))
		return -EBADMSG;
	*out = (struct ember_jvm_table){out->base, v[0], v[1], v[2], v[3], v[4], value_width};
	if (!out->stride || !out->base)
		return -EAGAIN;
	if ((value_width != 4 && value_width != 8) || out->stride > EMBER_JVM_MAX_STRIDE ||
	    out->type_name == EMBER_JVM_NONE || out->value == EMBER_JVM_NONE ||
	    !field_fits(out->type_name, 8, out->stride) ||
	    !field_fits(out->field_name, 8, out->stride) ||
	    !field_fits(out->value, value_width, out->stride) ||
	    !field_fits(out->address, 8, out->stride))
		return -EBADMSG;
	return 0;
}

/* The value of entry e: an int constant sign-extended. */
static uint64_t value_of(const struct ember_jvm_table *t, const uint8_t *e)
{
	uint64_t v = ember_le_in(e, t->stride, t->value, t->value_width);

	return t->value_width == 4 ? (uint64_t)(int64_t)(int32_t)(uint32_t)v : v;
}

/* Matches the entry e (stride bytes) against want, filling found. */
static void match_entry(const struct ember_jvm_table *t, const uint8_t *e, struct name_pages *pages,
                        ember_jvm_read_fn read, void *ctx, const char *type,
                        const struct ember_jvm_want *want, size_t n, struct ember_jvm_found *found)
{
	char field[EMBER_JVM_MAX_NAME];
	bool have_field = false;
	uint64_t addr = 0;

	for (size_t i = 0; i < n; i++) {
		if (found[i].found || strcmp(want[i].type, type))
			continue;
		if ((want[i].field != NULL) != (t->field_name != EMBER_JVM_NONE))
			continue;
		if (want[i].field && !have_field) {
			if (read_name(pages, read, ctx, ember_le_in(e, t->stride, t->field_name, 8),
			              field))
				return;
			have_field = true;
		}
		if (want[i].field && strcmp(want[i].field, field))
			continue;
		if (t->address != EMBER_JVM_NONE)
			addr = ember_le_in(e, t->stride, t->address, 8);
		found[i].found = true;
		found[i].is_address = addr != 0;
		found[i].value = addr ? addr : value_of(t, e);
	}
}

/* Reads count entries from at into buf: in one read, or one by one when the chunk crosses
 * the end of the table's mapping. Returns how many it read. */
static size_t read_entries(const struct ember_jvm_table *t, ember_jvm_read_fn read, void *ctx,
                           uint64_t at, size_t count, uint8_t *buf)
{
	size_t i;

	if (!read(ctx, at, buf, count * t->stride))
		return count;
	for (i = 0; i < count; i++)
		if (read(ctx, at + i * t->stride, buf + i * t->stride, t->stride))
			break;
	return i;
}

int ember_jvm_table_read(const struct ember_jvm_table *t, ember_jvm_read_fn read, void *ctx,
                         const struct ember_jvm_want *want, size_t n, struct ember_jvm_found *found)
{
	struct name_pages pages = {{0}, NULL};
	size_t per_chunk, got = 0, used = 0;
	uint8_t *chunk;
	int err = -E2BIG;

	memset(found, 0, n * sizeof(*found));
	if (!t->stride || t->stride > EMBER_JVM_MAX_STRIDE ||
	    !field_fits(t->type_name, 8, t->stride) || !field_fits(t->field_name, 8, t->stride) ||
	    (t->value_width != 4 && t->value_width != 8) ||
	    !field_fits(t->value, t->value_width, t->stride) ||
	    !field_fits(t->address, 8, t->stride))
		return -EINVAL;
	per_chunk = CHUNK_MAX / t->stride;
	chunk = malloc(per_chunk * t->stride);
	pages.bytes = malloc((size_t)PAGES * PAGE);
	if (!chunk || !pages.bytes) {
		err = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < EMBER_JVM_MAX_ENTRIES; i++, used++) {
		char type[EMBER_JVM_MAX_NAME];
		const uint8_t *e;
		uint64_t name;

		if (used == got) {
			uint64_t at = t->base + i * t->stride;

			if (at < t->base) {
				err = -EFAULT;
				break;
			}
			got = read_entries(t, read, ctx, at, per_chunk, chunk);
			used = 0;
			if (!got) {
				err = -EFAULT;
				break;
			}
		}
		e = chunk + used * t->stride;
		name = ember_le_in(e, t->stride, t->type_name, 8);
		if (!name) {
			err = 0;
			break;
		}
		if (!read_name(&pages, read, ctx, name, type))
			match_entry(t, e, &pages, read, ctx, type, want, n, found);
	}
out:
	free(chunk);
	free(pages.bytes);
	return err;
}
