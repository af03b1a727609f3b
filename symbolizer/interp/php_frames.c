// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/php_frames.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/bytes.h"

#define IS_STRING      6   /* zend_types.h: a zend_string's gc type */
#define GC_TYPE_MASK   0xf /* of gc.u.type_info */
#define INTERNAL_CLASS 1   /* zend_class_entry.type */
#define USER_CLASS     2

int ember_php_read_string(const struct ember_php_layout *l, ember_php_read_fn read, void *ctx,
                          uint64_t addr, size_t max, char **out)
{
	uint8_t head[64];
	size_t hsize = (size_t)l->string_val, len;
	char *s;

	*out = NULL;
	if (max > EMBER_PHP_MAX_STRING || hsize > sizeof(head) || hsize < 8)
		return -EINVAL;
	if (!addr || read(ctx, addr, head, hsize))
		return -EFAULT;
	len = ember_le_in(head, hsize, l->string_len, 8);
	if ((ember_le_in(head, hsize, l->string_info, 4) & GC_TYPE_MASK) != IS_STRING || len > max)
		return -EBADMSG;
	s = malloc(len + 1);
	if (!s)
		return -ENOMEM;
	if (len && read(ctx, addr + hsize, s, len)) {
		free(s);
		return -EFAULT;
	}
	for (size_t i = 0; i < len; i++)
		if (!s[i])
			s[i] = '?';
	s[len] = '\0';
	*out = s;
	return 0;
}

/* The name of the class at ce: 0, or why not. */
static int class_name(const struct ember_php_layout *l, ember_php_read_fn read, void *ctx,
                      uint64_t ce, char **out)
{
	uint8_t win[64];
	size_t size = l->class_read;
	uint8_t type;

	if (size > sizeof(win) || l->class_type >= size)
		return -EINVAL;
	if (read(ctx, ce, win, size))
		return -EFAULT;
	type = win[l->class_type];
	if (type != INTERNAL_CLASS && type != USER_CLASS)
		return -EBADMSG;
	return ember_php_read_string(l, read, ctx, ember_le_in(win, size, l->class_name, 8),
	                             EMBER_PHP_MAX_STRING, out);
}

/* "Class::name", "name", or for file-scope code its file. */
static int full_name(const struct ember_php_layout *l, ember_php_read_fn read, void *ctx,
                     uint64_t name, uint64_t scope, struct ember_php_func *f)
{
	char *fn = NULL, *cls = NULL;
	int err;

	if (!name) {
		f->name = f->file ? strdup(f->file) : NULL;
		return f->name ? 0 : f->file ? -ENOMEM : -EBADMSG;
	}
	err = ember_php_read_string(l, read, ctx, name, EMBER_PHP_MAX_STRING, &fn);
	if (!err && scope)
		err = class_name(l, read, ctx, scope, &cls);
	if (!err && cls && asprintf(&f->name, "%s::%s", cls, fn) < 0) {
		f->name = NULL;
		err = -ENOMEM;
	} else if (!err && !cls) {
		f->name = fn;
		fn = NULL;
	}
	free(fn);
	free(cls);
	return err;
}

int ember_php_read_func(const struct ember_php_layout *l, ember_php_read_fn read, void *ctx,
                        uint64_t addr, struct ember_php_func *out)
{
	uint8_t win[EMBER_PHP_WINDOW];
	size_t size = l->fn_read;
	uint64_t lines;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (size > sizeof(win) || size < 8 || l->fn_type >= size)
		return -EINVAL;
	if (!addr || read(ctx, addr, win, size))
		return -EFAULT;
	out->type = win[l->fn_type];
	if (out->type == EMBER_PHP_FUNC_INTERNAL) {
		out->checksum = ember_interp_checksum(ember_le_in(win, size, l->fn_name, 8),
		                                      ember_le_in(win, size, l->fn_scope, 8),
		                                      ember_le_in(win, size, l->fn_handler, 8));
	} else if (out->type == EMBER_PHP_FUNC_USER || out->type == EMBER_PHP_FUNC_EVAL) {
		uint64_t file = ember_le_in(win, size, l->fn_filename, 8), h = 0;

		/* As the walker mixes it: the name's address and its text's hash (0 unread). */
		if (file && read(ctx, file + l->string_hash, &h, sizeof(h)))
			h = 0;
		lines = ember_le_in(win, size, l->fn_lines, 8);
		out->checksum = ember_interp_checksum(ember_le_in(win, size, l->fn_opcodes, 8),
		                                      file ^ h, lines);
		out->line_start = (int32_t)(uint32_t)lines;
		err = ember_php_read_string(l, read, ctx, file, EMBER_PHP_MAX_STRING, &out->file);
	} else {
		return -EBADMSG;
	}
	if (!err)
		err = full_name(l, read, ctx, ember_le_in(win, size, l->fn_name, 8),
		                ember_le_in(win, size, l->fn_scope, 8), out);
	if (err)
		ember_php_func_free(out);
	return err;
}

void ember_php_func_free(struct ember_php_func *f)
{
	free(f->name);
	free(f->file);
	f->name = f->file = NULL;
}
