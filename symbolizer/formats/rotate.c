// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/rotate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/err.h"
#include "shared/log.h"
#include "shared/str.h"

#define NAME_MAX_LEN 96
#define MAX_LISTED   4096 /* outputs considered per pruning pass */

int ember_rotation_name(uint64_t unix_ns, const char *suffix, char *buf, size_t size)
{
	/* UTC by hand, so names sort by time: glibc's gmtime reads the time-zone
	 * file on first use, which the sandbox would kill the process for. */
	int64_t secs = (int64_t)(unix_ns / 1000000000ull), days = secs / 86400, rem = secs % 86400;
	/* Civil date from days since 1970-01-01 (proleptic Gregorian). */
	int64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
	int64_t day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
	int64_t year = yoe + era * 400 + (month <= 2);

	return snprintf(buf, size,
	                EMBER_ROTATE_PREFIX "%04" PRId64 "%02" PRId64 "%02" PRId64 "T%02" PRId64
	                                    "%02" PRId64 "%02" PRId64 "Z%s",
	                year, month, day, rem / 3600, rem / 60 % 60, rem % 60, suffix) < (int)size
	           ? 0
	           : -ENAMETOOLONG;
}

static int write_one(struct ember_rotation *r, const struct ember_profile *p, enum ember_format f)
{
	const char *suffix = ember_format_suffix(f);
	struct ember_output out = {.format = f};
	char base[NAME_MAX_LEN], tmp[NAME_MAX_LEN + 8];
	int err = ember_rotation_name(p->start_ns, "", base, sizeof(base));

	if (err)
		return err;
	snprintf(tmp, sizeof(tmp), ".%s%s.tmp", base, suffix);
	/* A new file only, never through a link; a leftover of a crash is replaced. */
	unlinkat(r->dir_fd, tmp, 0);
	out.fd = openat(r->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (out.fd < 0)
		return neg_errno();
	snprintf(out.path, sizeof(out.path), "%s%s", base, suffix);
	err = ember_output_write(&out, p);
	if (!err && fsync(out.fd) < 0)
		err = neg_errno();
	close(out.fd);
	/* Two intervals in one second (SIGHUP): the later one gets a number. */
	for (int n = 0; !err; n++) {
		if (n)
			snprintf(out.path, sizeof(out.path), "%s-%d%s", base, n, suffix);
		if (renameat2(r->dir_fd, tmp, r->dir_fd, out.path, RENAME_NOREPLACE) == 0)
			break;
		if (errno != EEXIST || n == 99)
			err = neg_errno();
	}
	if (err)
		unlinkat(r->dir_fd, tmp, 0);
	else
		r->files_written++;
	return err;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Removes the oldest outputs of format f beyond r->keep. */
static void prune(struct ember_rotation *r, enum ember_format f)
{
	const char *suffix = ember_format_suffix(f);
	char **names = calloc(MAX_LISTED, sizeof(*names));
	int fd = fcntl(r->dir_fd, F_DUPFD_CLOEXEC, 0);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	size_t n = 0;
	struct dirent *e;

	if (!d || !names) {
		if (fd >= 0 && !d)
			close(fd);
		goto out;
	}
	rewinddir(d);
	while ((e = readdir(d)) && n < MAX_LISTED) {
		size_t len = strlen(e->d_name);

		if ((e->d_type != DT_REG && e->d_type != DT_UNKNOWN) ||
		    strncmp(e->d_name, EMBER_ROTATE_PREFIX, strlen(EMBER_ROTATE_PREFIX)) ||
		    !ember_str_ends_with(e->d_name, suffix) || len >= NAME_MAX_LEN)
			continue;
		names[n] = strdup(e->d_name);
		if (names[n])
			n++;
	}
	/* The names start with the interval's time: sorted, the oldest come first. */
	qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; n > r->keep && i < n - r->keep; i++)
		if (unlinkat(r->dir_fd, names[i], 0) == 0)
			r->files_removed++;
out:
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	if (d)
		closedir(d);
}

int ember_rotation_write(struct ember_rotation *r, const struct ember_profile *p)
{
	int first_err = 0;

	for (size_t i = 0; i < r->nformats; i++) {
		int err = write_one(r, p, r->formats[i]);

		if (err) {
			r->write_errors++;
			log_error_errno(err, "cannot write the %s output of this interval: %m",
			                ember_format_name(r->formats[i]));
			if (!first_err)
				first_err = err;
		} else if (r->keep) {
			prune(r, r->formats[i]);
		}
	}
	return first_err;
}
