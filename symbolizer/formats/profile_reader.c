// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/profile_reader.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolizer/formats/in_folded.h"
#include "symbolizer/formats/gzip.h"
#include "symbolizer/formats/in_pprof.h"
#include "shared/err.h"

int ember_read_all(int fd, size_t max, uint8_t **out, size_t *len)
{
	struct stat st;
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf;

	*out = NULL;
	*len = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		if ((uint64_t)st.st_size > max)
			return -EFBIG;
		cap = (size_t)st.st_size + 1;
	}
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	while (1) {
		ssize_t r;

		if (n == cap) {
			size_t grown_cap = cap * 2;
			uint8_t *grown;

			if (n > max) {
				free(buf);
				return -EFBIG;
			}
			if (grown_cap > max + 1)
				grown_cap = max + 1;
			grown = realloc(buf, grown_cap);
			if (!grown) {
				free(buf);
				return -ENOMEM;
			}
			buf = grown;
			cap = grown_cap;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = neg_errno();

			free(buf);
			return err;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		free(buf);
		return -EFBIG;
	}
	*out = buf;
	*len = n;
	return 0;
}

enum ember_input_format ember_input_detect(const uint8_t *buf, size_t len)
{
	if (ember_is_gzip(buf, len))
		return EMBER_INPUT_PPROF;
	/* Binary protobuf has field tags and lengths below the printable range. */
	for (size_t i = 0; i < len && i < 4096; i++)
		if (buf[i] < 0x09 || (buf[i] > 0x0d && buf[i] < 0x20 && buf[i] != 0x1b))
			return EMBER_INPUT_PPROF;
	return EMBER_INPUT_FOLDED;
}

int ember_input_parse(struct ember_profile *p, const uint8_t *buf, size_t len)
{
	if (ember_input_detect(buf, len) == EMBER_INPUT_PPROF)
		return ember_read_pprof(p, buf, len);
	return ember_read_folded(p, (const char *)buf, len);
}
