// SPDX-License-Identifier: Apache-2.0
#include "shared/proc_number.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shared/err.h"

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

int ember_proc_nspid(uint32_t pid, uint32_t *out)
{
	char path[64], buf[8192], *at, *end;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return neg_errno();
	buf[n] = '\0';
	*out = pid;
	/* After Groups, which very many groups make long: a line cut short is refused. */
	at = strstr(buf, "\nNSpid:");
	if (!at)
		return (size_t)n == sizeof(buf) - 1 ? -EBADMSG : 0;
	/* "NSpid:\t4242\t17\n": the outermost namespace's first, the process's own last. */
	for (at += 7;; at = end) {
		unsigned long long v;

		at += strspn(at, " \t");
		if (*at == '\n')
			return 0;
		v = strtoull(at, &end, 10);
		if (end == at || !v || v > UINT32_MAX || !*end)
			return -EBADMSG;
		*out = (uint32_t)v;
	}
}

int ember_read_cpu_list(int fd, bool *online, int ncpus)
{
	char buf[1024], *p = buf, *end;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	int count = 0;

	memset(online, 0, (size_t)ncpus * sizeof(*online));
	if (n < 0)
		return neg_errno();
	buf[n] = '\0';
	for (; *p && *p != '\n'; p = *end == ',' ? end + 1 : end) {
		long lo = strtol(p, &end, 10), hi = lo;

		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (end == p || lo < 0 || hi < lo || (*end && *end != ',' && *end != '\n'))
			return -EINVAL;
		for (long c = lo; c <= hi && c < ncpus; c++) {
			count += !online[c]; /* a CPU listed twice counts once */
			online[c] = true;
		}
	}
	return count;
}
