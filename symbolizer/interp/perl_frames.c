// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/perl_frames.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/bytes.h"

/* sv.h: an SV's type (the low byte of its flags) and the flags a name depends on. */
#define SVT_MASK   0xff
#define SVT_PVGV   9
#define SVT_PVHV   12
#define SVT_PVCV   13
#define SVF_OOK    0x02000000u /* a stash: its aux part (the name) is there */
#define SVPGV_GP   0x8000u     /* a GV with a GP (isGV_with_GP: without SVp_POK) */
#define SVP_POK    0x4000u
#define CVF_NAMED  0x8000u /* cv.h: the CV holds its name HEK, not a GV */
#define HEAD_BYTES 16      /* an SV's head: its body, refcount and flags */
#define CHUNK      256     /* bytes of a C string read at once */
#define PAGE       4096u

int ember_perl_read_cstring(ember_perl_read_fn read, void *ctx, uint64_t addr, size_t max,
                            char **out)
{
	char *s;
	size_t len = 0;

	*out = NULL;
	if (max > EMBER_PERL_MAX_STRING)
		return -EINVAL;
	if (!addr)
		return -EFAULT;
	s = malloc(max + 1);
	if (!s)
		return -ENOMEM;
	/* A chunk at a time, never across a page: the string may end just before an unmapped one.
	 */
	while (len <= max) {
		size_t n = PAGE - (size_t)((addr + len) % PAGE);
		char *nul;

		n = n < CHUNK ? n : CHUNK;
		n = n < max + 1 - len ? n : max + 1 - len;
		if (read(ctx, addr + len, s + len, n)) {
			free(s);
			return -EFAULT;
		}
		nul = memchr(s + len, '\0', n);
		if (nul) {
			*out = s;
			return 0;
		}
		len += n;
	}
	free(s);
	return -EBADMSG;
}

int ember_perl_read_hek(const struct ember_perl_layout *l, ember_perl_read_fn read, void *ctx,
                        uint64_t addr, char **out)
{
	uint8_t head[16];
	int32_t len;
	char *s;

	*out = NULL;
	if (l->hek_key > sizeof(head) || l->hek_len > l->hek_key - 4u)
		return -EINVAL;
	if (!addr || read(ctx, addr, head, l->hek_key))
		return -EFAULT;
	len = (int32_t)ember_le_in(head, l->hek_key, l->hek_len, 4);
	if (len < 0 || len > EMBER_PERL_MAX_STRING)
		return -EBADMSG;
	s = malloc((size_t)len + 1);
	if (!s)
		return -ENOMEM;
	if (len && read(ctx, addr + l->hek_key, s, (size_t)len)) {
		free(s);
		return -EFAULT;
	}
	for (int32_t i = 0; i < len; i++)
		if (!s[i])
			s[i] = '?';
	s[len] = '\0';
	*out = s;
	return 0;
}

/* The body of the SV at addr, whose type must be type, read as size bytes into win. */
static int read_body(const struct ember_perl_layout *l, ember_perl_read_fn read, void *ctx,
                     uint64_t addr, unsigned int type, uint8_t *win, size_t size, uint32_t *flags)
{
	uint8_t head[HEAD_BYTES];
	uint64_t body;

	if (!addr || read(ctx, addr, head, sizeof(head)))
		return -EFAULT;
	body = ember_le_in(head, sizeof(head), 0, 8);
	*flags = (uint32_t)ember_le_in(head, sizeof(head), l->sv_flags, 4);
	if ((*flags & SVT_MASK) != type)
		return -EBADMSG;
	return body && !read(ctx, body, win, size) ? 0 : -EFAULT;
}

/* The name of the stash at hv (HvNAME): 0, or why not. */
static int stash_name(const struct ember_perl_layout *l, ember_perl_read_fn read, void *ctx,
                      uint64_t hv, char **out)
{
	uint8_t win[EMBER_PERL_WINDOW];
	uint64_t names[2], hek;
	uint32_t flags;
	int err;

	if (l->hv_read > sizeof(win))
		return -EINVAL;
	err = read_body(l, read, ctx, hv, SVT_PVHV, win, l->hv_read, &flags);
	if (err)
		return err;
	if (!(flags & SVF_OOK))
		return -EBADMSG; /* no aux part: no name */
	hek = ember_le_in(win, l->hv_read, l->hv_name, 8);
	/* Several names (a stash renamed): an array of HEKs, the first the name (or NULL, and
	 * the second the effective one). */
	if (ember_le_in(win, l->hv_read, l->hv_count, 4)) {
		if (read(ctx, hek, names, sizeof(names)))
			return -EFAULT;
		hek = names[0] ? names[0] : names[1];
	}
	return ember_perl_read_hek(l, read, ctx, hek, out);
}

/* "Package::name" of a name HEK and a stash into out. */
static int join_name(const struct ember_perl_layout *l, ember_perl_read_fn read, void *ctx,
                     uint64_t hek, uint64_t stash, char **out)
{
	char *name = NULL, *pkg = NULL;
	int err = ember_perl_read_hek(l, read, ctx, hek, &name);

	if (!err && stash)
		err = stash_name(l, read, ctx, stash, &pkg);
	if (!err && pkg && asprintf(out, "%s::%s", pkg, name) < 0) {
		*out = NULL;
		err = -ENOMEM;
	} else if (!err && !pkg) {
		*out = name;
		name = NULL;
	}
	free(name);
	free(pkg);
	return err;
}

/* A sub or format by its CV: its name (through its GV, or its own HEK), file, checksum. */
static int read_cv(const struct ember_perl_layout *l, ember_perl_read_fn read, void *ctx,
                   uint64_t cv, struct ember_perl_sub *out)
{
	uint8_t win[EMBER_PERL_WINDOW], gv[EMBER_PERL_WINDOW], head[HEAD_BYTES];
	uint64_t gv_u, file;
	uint32_t flags;
	int err;

	if (l->cv_read > sizeof(win) || l->gv_read > sizeof(gv))
		return -EINVAL;
	err = read_body(l, read, ctx, cv, SVT_PVCV, win, l->cv_read, &flags);
	if (err)
		return err;
	if (read(ctx, cv, head, sizeof(head)))
		return -EFAULT;
	gv_u = ember_le_in(win, l->cv_read, l->cv_gv, 8);
	file = ember_le_in(win, l->cv_read, l->cv_file, 8);
	out->checksum = ember_interp_checksum(ember_le_in(head, sizeof(head), 0, 8), gv_u, file);
	if (file &&
	    (err = ember_perl_read_cstring(read, ctx, file, EMBER_PERL_MAX_STRING, &out->file)))
		return err;
	if (ember_le_in(win, l->cv_read, l->cv_flags, 4) & CVF_NAMED)
		return join_name(l, read, ctx, gv_u, ember_le_in(win, l->cv_read, l->cv_stash, 8),
		                 &out->name);
	err = read_body(l, read, ctx, gv_u, SVT_PVGV, gv, l->gv_read, &flags);
	if (!err && (flags & (SVPGV_GP | SVP_POK)) != SVPGV_GP)
		err = -EBADMSG;
	if (!err)
		err = join_name(l, read, ctx, ember_le_in(gv, l->gv_read, l->gv_name, 8),
		                ember_le_in(gv, l->gv_read, l->gv_stash, 8), &out->name);
	return err;
}

/* An eval or the main program by the COP it runs: its file, checksum and name. */
static int read_cop(const struct ember_perl_layout *l, ember_perl_read_fn read, void *ctx,
                    unsigned int kind, uint64_t cop, struct ember_perl_sub *out)
{
	uint8_t win[EMBER_PERL_WINDOW];
	uint64_t file;
	int err = 0;

	if (l->cop_read > sizeof(win))
		return -EINVAL;
	if (cop) {
		if (read(ctx, cop, win, l->cop_read))
			return -EFAULT;
		file = ember_le_in(win, l->cop_read, l->cop_file, 8);
		out->checksum = ember_interp_checksum(
		    file, ember_le_in(win, l->cop_read, l->cop_stash, 4), kind);
		if (file)
			err = ember_perl_read_cstring(read, ctx, file, EMBER_PERL_MAX_STRING,
			                              &out->file);
	} else {
		out->checksum =
		    ember_interp_checksum(0, 0, kind); /* no COP: what the walker mixes */
	}
	if (!err && !(out->name = strdup(kind == EMBER_PERL_FRAME_EVAL ? "(eval)" : "main")))
		err = -ENOMEM;
	return err;
}

int ember_perl_read_frame(const struct ember_perl_layout *l, ember_perl_read_fn read, void *ctx,
                          unsigned int kind, uint64_t addr, struct ember_perl_sub *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (kind == EMBER_PERL_FRAME_SUB || kind == EMBER_PERL_FRAME_FORMAT)
		err = read_cv(l, read, ctx, addr, out);
	else if (kind == EMBER_PERL_FRAME_EVAL || kind == EMBER_PERL_FRAME_MAIN)
		err = read_cop(l, read, ctx, kind, addr, out);
	else
		err = -EINVAL;
	if (err)
		ember_perl_sub_free(out);
	return err;
}

void ember_perl_sub_free(struct ember_perl_sub *s)
{
	free(s->name);
	free(s->file);
	s->name = s->file = NULL;
}
