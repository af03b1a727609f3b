// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/v8_heap.h"

#include <errno.h>
#include <string.h>

#define STRING_TYPE_MASK 0x3f /* representation, encoding and internalization bits */
#define CHUNK            256  /* units read at once */
/* An external string caches its characters' address beside its resource. */
#define EXTERNAL_DATA_AFTER_RESOURCE 8

int ember_v8_field(const struct ember_v8_heap *h, uint64_t tagged, int32_t off, uint64_t *out)
{
	if (!ember_v8_is_object(tagged) || off < 0)
		return -EINVAL;
	return h->read(h->ctx, tagged - 1 + (uint64_t)off, out, sizeof(*out)) ? -EFAULT : 0;
}

int ember_v8_type(const struct ember_v8_heap *h, uint64_t tagged, uint32_t *type)
{
	uint64_t map;
	uint16_t t;

	if (ember_v8_field(h, tagged, 0, &map))
		return ember_v8_is_object(tagged) ? -EFAULT : -EINVAL;
	if (!ember_v8_is_object(map))
		return -EINVAL;
	if (h->read(h->ctx, map - 1 + (uint64_t)h->l->map_instance_type, &t, sizeof(t)))
		return -EFAULT;
	*type = t;
	return 0;
}

int ember_v8_length(const struct ember_v8_heap *h, uint64_t tagged, uint32_t max, uint32_t *len)
{
	uint64_t length;

	if (ember_v8_field(h, tagged, h->l->fixed_array_length, &length))
		return -EFAULT;
	if (!ember_v8_is_smi(length) || ember_v8_smi(length) < 0 ||
	    (uint32_t)ember_v8_smi(length) > max)
		return -EINVAL;
	*len = (uint32_t)ember_v8_smi(length);
	return 0;
}

int ember_v8_array_length(const struct ember_v8_heap *h, uint64_t tagged, uint32_t type1,
                          uint32_t type2, uint32_t max, uint32_t *len)
{
	uint32_t type;
	int err = ember_v8_type(h, tagged, &type);

	if (err)
		return err;
	if (type != type1 && type != type2)
		return -EINVAL;
	return ember_v8_length(h, tagged, max, len);
}

bool ember_v8_is_string_type(const struct ember_v8_layout *l, uint32_t type)
{
	return type < (uint32_t)l->first_nonstring_type;
}

/* The string's length: 0 or a negative errno. */
static int string_length(const struct ember_v8_heap *h, uint64_t tagged, uint32_t *len)
{
	int32_t n;

	if (h->read(h->ctx, tagged - 1 + (uint64_t)h->l->string_length, &n, sizeof(n)))
		return -EFAULT;
	if (n < 0 || n > (1 << 29))
		return -EINVAL;
	*len = (uint32_t)n;
	return 0;
}

/* Copies count units from first of the flat characters at chars (one byte or two each). */
static int flat_units(const struct ember_v8_heap *h, uint64_t chars, bool one_byte, uint32_t first,
                      uint32_t count, uint16_t *out)
{
	uint8_t buf[CHUNK * 2];

	for (uint32_t done = 0; done < count;) {
		uint32_t n = count - done < CHUNK ? count - done : CHUNK;
		uint64_t at = chars + (uint64_t)(first + done) * (one_byte ? 1 : 2);

		if (h->read(h->ctx, at, buf, n * (one_byte ? 1u : 2u)))
			return -EFAULT;
		for (uint32_t i = 0; i < n; i++)
			out[done + i] =
			    one_byte ? buf[i]
				     : (uint16_t)(buf[2 * i] | (uint16_t)buf[2 * i + 1] << 8);
		done += n;
	}
	return 0;
}

/* Units [first, first + count) of the string at tagged (length len) into out, following
 * its representation at most depth levels down. */
static int units(const struct ember_v8_heap *h, uint64_t tagged, uint32_t first, uint32_t count,
                 uint16_t *out, int depth)
{
	const struct ember_v8_layout *l = h->l;
	uint32_t type, rep, len, first_len;
	uint64_t a, b;
	int err;

	if (depth > EMBER_V8_STRING_DEPTH)
		return -ELOOP;
	err = ember_v8_type(h, tagged, &type);
	if (err)
		return err;
	if (!ember_v8_is_string_type(l, type))
		return -EINVAL;
	err = string_length(h, tagged, &len);
	if (err)
		return err;
	if (first > len || count > len - first)
		return -EINVAL;
	if (!count)
		return 0;
	rep = type & (uint32_t)l->string_representation_mask;
	if (rep == (uint32_t)l->seq_string_tag)
		return flat_units(h, tagged - 1 + (uint64_t)l->seq_chars,
		                  (type & (uint32_t)l->string_encoding_mask) ==
		                      (uint32_t)l->one_byte_string_tag,
		                  first, count, out);
	if (rep == (uint32_t)l->thin_string_tag) {
		if (ember_v8_field(h, tagged, l->thin_actual, &a))
			return -EFAULT;
		return units(h, a, first, count, out, depth + 1);
	}
	if (rep == (uint32_t)l->sliced_string_tag) {
		if (ember_v8_field(h, tagged, l->sliced_parent, &a) ||
		    ember_v8_field(h, tagged, l->sliced_offset, &b))
			return -EFAULT;
		if (!ember_v8_is_smi(b) || ember_v8_smi(b) < 0)
			return -EINVAL;
		if ((uint64_t)first + (uint32_t)ember_v8_smi(b) > UINT32_MAX)
			return -EINVAL;
		return units(h, a, first + (uint32_t)ember_v8_smi(b), count, out, depth + 1);
	}
	if (rep == (uint32_t)l->cons_string_tag) {
		if (ember_v8_field(h, tagged, l->cons_first, &a) ||
		    ember_v8_field(h, tagged, l->cons_second, &b))
			return -EFAULT;
		err = ember_v8_type(h, a, &type);
		if (!err)
			err = ember_v8_is_string_type(l, type) ? string_length(h, a, &first_len)
			                                       : -EINVAL;
		if (err)
			return err;
		if (first_len > len)
			return -EINVAL;
		if (first < first_len) {
			uint32_t n = count < first_len - first ? count : first_len - first;

			err = units(h, a, first, n, out, depth + 1);
			if (err || n == count)
				return err;
			return units(h, b, 0, count - n, out + n, depth + 1);
		}
		return units(h, b, first - first_len, count, out, depth + 1);
	}
	/* External: the cached address of its characters, beside the resource. */
	if (h->read(h->ctx, tagged - 1 + 16 + EXTERNAL_DATA_AFTER_RESOURCE, &a, sizeof(a)))
		return -EFAULT;
	if (!a || a >= EMBER_V8_USER_LIMIT)
		return -EINVAL;
	return flat_units(
	    h, a, (type & (uint32_t)l->string_encoding_mask) == (uint32_t)l->one_byte_string_tag,
	    first, count, out);
}

int ember_v8_string_units(const struct ember_v8_heap *h, uint64_t tagged, uint32_t first,
                          uint32_t max, uint16_t *out)
{
	uint32_t type, len;
	int err = ember_v8_type(h, tagged, &type);

	if (err)
		return err;
	if (!ember_v8_is_string_type(h->l, type))
		return -EINVAL;
	err = string_length(h, tagged, &len);
	if (err)
		return err;
	if (first >= len)
		return 0;
	if (max > len - first)
		max = len - first;
	err = units(h, tagged, first, max, out, 0);
	return err ? err : (int)max;
}

/* Appends code point c as UTF-8 if it fits in out (size bytes, *at used): false if not. */
static bool put_utf8(char *out, size_t size, size_t *at, uint32_t c)
{
	uint8_t b[4];
	size_t n;

	if (c < 0x80) {
		b[0] = (uint8_t)c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = (uint8_t)(0xc0 | c >> 6);
		b[1] = (uint8_t)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		b[0] = (uint8_t)(0xe0 | c >> 12);
		b[1] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
		b[2] = (uint8_t)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		b[0] = (uint8_t)(0xf0 | c >> 18);
		b[1] = (uint8_t)(0x80 | (c >> 12 & 0x3f));
		b[2] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
		b[3] = (uint8_t)(0x80 | (c & 0x3f));
		n = 4;
	}
	if (*at + n >= size)
		return false;
	memcpy(out + *at, b, n);
	*at += n;
	return true;
}

int ember_v8_string(const struct ember_v8_heap *h, uint64_t tagged, char *out, size_t size)
{
	uint16_t u[EMBER_V8_MAX_STRING];
	size_t at = 0;
	int n;

	if (!size)
		return -EINVAL;
	out[0] = '\0';
	n = ember_v8_string_units(
	    h, tagged, 0, size < EMBER_V8_MAX_STRING ? (uint32_t)size : EMBER_V8_MAX_STRING, u);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		uint32_t c = u[i];

		if (c >= 0xd800 && c < 0xdc00 && i + 1 < n && u[i + 1] >= 0xdc00 &&
		    u[i + 1] < 0xe000)
			c = 0x10000 + ((c - 0xd800) << 10) + (u[++i] - 0xdc00);
		else if (c >= 0xd800 && c < 0xe000)
			c = 0xfffd; /* a lone surrogate */
		if (!c)
			c = 0xfffd; /* the names are C strings */
		if (!put_utf8(out, size, &at, c))
			break;
	}
	out[at] = '\0';
	return 0;
}
