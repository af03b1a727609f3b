// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/formats/profile_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolizer/formats/out_folded.h"
#include "symbolizer/formats/out_html.h"
#include "symbolizer/formats/out_otlp.h"
#include "symbolizer/formats/out_pprof.h"
#include "shared/err.h"
#include "shared/str.h"

typedef int (*writer_fn)(const struct ember_profile *p, FILE *out);

static const writer_fn writers[EMBER_FORMAT_MAX] = {
    [EMBER_FORMAT_FOLDED] = ember_write_folded,
    [EMBER_FORMAT_PPROF] = ember_write_pprof,
    [EMBER_FORMAT_HTML] = ember_write_html,
    [EMBER_FORMAT_OTLP] = ember_write_otlp,
};

int ember_format_encode(enum ember_format f, const struct ember_profile *p, char **buf, size_t *len)
{
	FILE *mem;
	int err;

	if ((unsigned)f >= EMBER_FORMAT_MAX)
		return -EINVAL;
	*buf = NULL;
	*len = 0;
	mem = open_memstream(buf, len);
	if (!mem)
		return -ENOMEM;
	err = writers[f](p, mem);
	if (fclose(mem) && !err)
		err = -ENOMEM;
	if (err) {
		free(*buf);
		*buf = NULL;
	}
	return err;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return neg_errno();
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int ember_output_write(const struct ember_output *o, const struct ember_profile *p)
{
	char *buf;
	size_t len;
	int err = ember_format_encode(o->format, p, &buf, &len);

	if (err)
		return err;
	if (lseek(o->fd, 0, SEEK_SET) < 0 || ftruncate(o->fd, 0) < 0)
		err = neg_errno();
	if (!err)
		err = write_all(o->fd, buf, len);
	free(buf);
	return err;
}
