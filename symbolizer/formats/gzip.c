// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/gzip.h"

#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

#include "shared/vec.h"

/* The default level; 15 + 16: a 32 KiB window with a gzip header and trailer. */
#define GZIP_LEVEL   6
#define GZIP_WINDOW  (15 + 16)
#define GUNZIP_ANY   (15 + 32) /* a gzip or a zlib header, detected */
#define INFLATE_FROM 4096

bool ember_is_gzip(const uint8_t *buf, size_t len)
{
	return len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
}

int ember_gzip(const uint8_t *data, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream z = {0};
	uLong bound;
	int zerr;

	*out = NULL;
	*out_len = 0;
	if (len > UINT32_MAX)
		return -E2BIG;
	if (deflateInit2(&z, GZIP_LEVEL, Z_DEFLATED, GZIP_WINDOW, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	/* Room for the worst case: one deflate call finishes the stream. */
	bound = deflateBound(&z, (uLong)len);
	*out = malloc(bound);
	if (!*out) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	z.next_out = *out;
	z.avail_out = (uInt)bound;
	zerr = deflate(&z, Z_FINISH);
	*out_len = z.total_out;
	deflateEnd(&z);
	if (zerr != Z_STREAM_END) {
		free(*out);
		*out = NULL;
		*out_len = 0;
		return -EIO;
	}
	return 0;
}

int ember_gzip_write(const uint8_t *data, size_t len, FILE *out)
{
	uint8_t *z;
	size_t zlen;
	int err = ember_gzip(data, len, &z, &zlen);

	if (err)
		return err;
	if (fwrite(z, 1, zlen, out) != zlen)
		err = -EIO;
	free(z);
	return err;
}

int ember_gunzip(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *out_len)
{
	z_stream z = {0};
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;
	int zerr, err = 0;

	*out = NULL;
	*out_len = 0;
	if (len > UINT32_MAX || !max)
		return -EFBIG;
	if (max > UINT32_MAX)
		max = UINT32_MAX;
	if (inflateInit2(&z, GUNZIP_ANY) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	for (;;) {
		/* The first guess is four times the input; then it doubles. One byte
		 * beyond max tells output of max bytes from more. */
		if (n == cap) {
			size_t guess = len * 4 + INFLATE_FROM < max ? len * 4 + INFLATE_FROM : max;

			err = ember_ensure_mem((void **)&buf, &cap, 1, cap ? cap + 1 : guess + 1,
			                       max + 1);
			if (err)
				break;
		}
		z.next_out = buf + n;
		z.avail_out = (uInt)(cap - n);
		zerr = inflate(&z, Z_NO_FLUSH);
		n = (size_t)(z.next_out - buf);
		if (n > max) {
			err = -EFBIG;
			break;
		}
		if (zerr == Z_STREAM_END)
			break;
		if (zerr != Z_OK) {
			err = zerr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
			break;
		}
		if (!z.avail_in && z.avail_out) {
			err = -EINVAL; /* truncated */
			break;
		}
	}
	inflateEnd(&z);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*out_len = n;
	return 0;
}
