// SPDX-License-Identifier: Apache-2.0
#include "shared/fdio.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/err.h"
#include "shared/vec.h"

#define READ_FROM (64 * 1024)

long ember_read_whole_fd(int fd, size_t max, char **out)
{
	size_t cap = 0, len = 0, guess = READ_FROM;
	bool seekable = true;
	char *buf = NULL;
	struct stat st;
	int err = 0;

	*out = NULL;
	if (max >= LONG_MAX)
		max = LONG_MAX - 1;
	/* Proc files report size 0: those grow until the end or the cap. */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0) {
		if ((uint64_t)st.st_size > max)
			return -EFBIG;
		guess = (size_t)st.st_size + 1;
	}
	for (;;) {
		ssize_t n;

		/* One byte beyond max tells a file of max bytes from a larger one. */
		if (len == cap) {
			err = ember_ensure_mem((void **)&buf, &cap, 1,
			                       cap ? cap + 1 : (guess < max ? guess : max) + 1,
			                       max + 1);
			if (err)
				break;
		}
		n = seekable ? pread(fd, buf + len, cap - len, (off_t)len)
		             : read(fd, buf + len, cap - len);
		if (n < 0 && errno == ESPIPE && seekable) {
			seekable = false;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = neg_errno();
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			err = -EFBIG;
			break;
		}
	}
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	return (long)len;
}
