// SPDX-License-Identifier: Apache-2.0
#include "shared/fdio.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "shared/err.h"

long ember_read_whole_fd(int fd, size_t max, char **out)
{
	size_t cap = 64 * 1024, len = 0;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *grown;

			/* Proc files report size 0, so grow until the end or the cap. */
			if (cap >= max) {
				free(buf);
				return -E2BIG;
			}
			grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				return -ENOMEM;
			}
			buf = grown;
			cap *= 2;
		}
		n = pread(fd, buf + len, cap - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = neg_errno();

			free(buf);
			return err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*out = buf;
	return (long)len;
}
