// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/python_code.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shared/bytes.h"

#define HEADER_MAX 256 /* bytes of a str or bytes object's header */

/* The object at addr starts with hdr_len bytes into hdr and has the given type. */
static int read_object(const struct ember_py_layout *l, uint64_t type, ember_py_read_fn read,
                       void *ctx, uint64_t addr, uint8_t *hdr, size_t hdr_len)
{
	if (!addr || addr >= EMBER_PY_USER_LIMIT || (addr & 7) || hdr_len < l->ob_type + 8u)
		return -EBADMSG;
	if (read(ctx, addr, hdr, hdr_len))
		return -EFAULT;
	if (type && ember_u64_at(hdr, l->ob_type) != type)
		return -EBADMSG;
	return 0;
}

/* Appends code point cp as UTF-8; U+FFFD for what UTF-8 cannot carry (lone surrogates, NUL). */
static size_t put_utf8(char *out, uint32_t cp)
{
	if (!cp || (cp >= 0xd800 && cp < 0xe000) || cp > 0x10ffff)
		cp = 0xfffd;
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 63));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 63));
		out[2] = (char)(0x80 | (cp & 63));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 63));
	out[2] = (char)(0x80 | ((cp >> 6) & 63));
	out[3] = (char)(0x80 | (cp & 63));
	return 4;
}

int ember_py_read_str(const struct ember_py_layout *l, const struct ember_py_types *types,
                      ember_py_read_fn read, void *ctx, uint64_t addr, size_t max_chars, char **out)
{
	uint8_t hdr[HEADER_MAX], *data;
	size_t hdr_len = l->str_compact_data, n, width, at = 0;
	uint32_t state;
	int64_t length;
	char *s;
	int err;

	*out = NULL;
	if (hdr_len > sizeof(hdr) || hdr_len < l->str_state + 4u || hdr_len < l->str_length + 8u)
		return -EINVAL;
	err = read_object(l, types->str, read, ctx, addr, hdr, hdr_len);
	if (err)
		return err;
	/* state: interned:2, kind:3, compact:1, ascii:1 (then flags that vary by version). */
	state = ember_u32_at(hdr, l->str_state);
	width = (state >> 2) & 7;
	length = (int64_t)ember_u64_at(hdr, l->str_length);
	if (!((state >> 5) & 1))
		return -ENOTSUP;
	if ((width != 1 && width != 2 && width != 4) || ((state >> 6) & 1 && width != 1) ||
	    length < 0 || (uint64_t)length > max_chars)
		return -EBADMSG;
	n = (size_t)length;
	data = malloc(n * width + 1);
	s = malloc(4 * n + 1);
	if (!data || !s) {
		free(data);
		free(s);
		return -ENOMEM;
	}
	if (n && read(ctx, addr + ((state >> 6) & 1 ? l->str_ascii_data : l->str_compact_data),
	              data, n * width)) {
		free(data);
		free(s);
		return -EFAULT;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t cp = width == 1   ? data[i]
		              : width == 2 ? (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8
		                           : ember_u32_at(data, 4 * i);

		if ((state >> 6) & 1 && cp >= 0x80) { /* "ascii" that is not */
			free(data);
			free(s);
			return -EBADMSG;
		}
		at += put_utf8(s + at, cp);
	}
	s[at] = '\0';
	free(data);
	*out = s;
	return 0;
}

static int read_bytes(const struct ember_py_layout *l, const struct ember_py_types *types,
                      ember_py_read_fn read, void *ctx, uint64_t addr, size_t max, uint8_t **out,
                      size_t *len)
{
	uint8_t hdr[HEADER_MAX];
	size_t hdr_len = l->bytes_data;
	int64_t size;
	int err;

	if (hdr_len > sizeof(hdr) || hdr_len < l->bytes_size + 8u)
		return -EINVAL;
	err = read_object(l, types->bytes, read, ctx, addr, hdr, hdr_len);
	if (err)
		return err;
	size = (int64_t)ember_u64_at(hdr, l->bytes_size);
	if (size < 0)
		return -EBADMSG;
	if ((uint64_t)size > max)
		return -E2BIG;
	*out = malloc((size_t)size + 1);
	if (!*out)
		return -ENOMEM;
	if (size && read(ctx, addr + hdr_len, *out, (size_t)size)) {
		free(*out);
		*out = NULL;
		return -EFAULT;
	}
	*len = (size_t)size;
	return 0;
}

int ember_py_read_code(const struct ember_py_layout *l, const struct ember_py_types *types,
                       ember_py_read_fn read, void *ctx, uint64_t addr, struct ember_py_code *out)
{
	uint8_t code[EMBER_PY_MAX_CODE];
	uint64_t name_at;
	int err;

	memset(out, 0, sizeof(*out));
	if (l->code_size > sizeof(code) || l->code_size < l->code_read ||
	    l->code_size < l->code_linetable + 8u || l->code_size < l->code_qualname + 8u ||
	    l->code_size < l->code_nunits + 8u)
		return -EINVAL;
	err = read_object(l, types->code, read, ctx, addr, code, l->code_size);
	if (err)
		return err;
	out->firstlineno = (int32_t)ember_u32_at(code, l->code_firstlineno);
	out->checksum = ember_py_checksum(
	    ember_u32_at(code, l->code_argcount), (uint32_t)out->firstlineno,
	    ember_u64_at(code, l->code_name), ember_u64_at(code, l->code_filename));
	if (l->code_nunits) {
		out->nunits = ember_u64_at(code, l->code_nunits);
		if (out->nunits > EMBER_PY_MAX_UNITS)
			return -EBADMSG;
	}
	name_at = l->code_qualname ? ember_u64_at(code, l->code_qualname)
	                           : ember_u64_at(code, l->code_name);
	err = ember_py_read_str(l, types, read, ctx, name_at, EMBER_PY_MAX_NAME, &out->name);
	if (!err)
		err = ember_py_read_str(l, types, read, ctx, ember_u64_at(code, l->code_filename),
		                        EMBER_PY_MAX_FILE, &out->file);
	if (err) {
		ember_py_code_free(out);
		return err == -EFAULT || err == -ENOMEM ? err : -EBADMSG;
	}
	/* Without its line table a frame keeps its name: lines stay unknown. */
	out->linetable_error =
	    read_bytes(l, types, read, ctx, ember_u64_at(code, l->code_linetable),
	               EMBER_PY_MAX_LINETABLE, &out->linetable, &out->linetable_len);
	return 0;
}

void ember_py_code_free(struct ember_py_code *c)
{
	free(c->name);
	free(c->file);
	free(c->linetable);
	memset(c, 0, sizeof(*c));
}
