// SPDX-License-Identifier: Apache-2.0
#include "shared/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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

int ember_read_proc_number(const char *path, const char *key, int skip, long long *out)
{
	char buf[1024], *at;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return neg_errno();
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? neg_errno() : -ENODATA;
	buf[n] = '\0';
	at = key ? strstr(buf, key) : buf;
	if (!at)
		return -ENOENT;
	at += key ? strlen(key) : 0;
	for (; skip > 0 && at; skip--) /* past a number and the blanks after it */
		at = strpbrk(at + strspn(at, " \t"), " \t\n");
	return at && sscanf(at, "%lld", out) == 1 ? 0 : -EBADMSG;
}

uint64_t ember_self_rss_bytes(void)
{
	long long pages;

	/* statm: size, then resident, in pages. */
	if (ember_read_proc_number("/proc/self/statm", NULL, 1, &pages) || pages < 0)
		return 0;
	return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

uint64_t ember_fd_memlock(int fd)
{
	char path[64];
	long long bytes;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	return ember_read_proc_number(path, "memlock:", 0, &bytes) || bytes < 0 ? 0
	                                                                        : (uint64_t)bytes;
}
