// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/go_labels.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BUILDINFO_MAGIC  "\xff Go buildinf:"
#define BUILDINFO_INLINE 0x2  /* flags: the version string follows the header (Go 1.18+) */
#define GO_TLS_G         (-8) /* cmd/link: Tlsoffset = -PtrSize on Linux */
#define MAP_LAST_B       4    /* buckets read: 1 << B, B at most this */
#define MAP_BUCKET       272  /* bucket<string,string>: tophash[8], keys[8], values[8], overflow */
#define MAP_MIN_TOPHASH  5
#define SLICE_MAX        64 /* labels in a set at most (pprof.Labels takes pairs by hand) */

/* Go 1.minor's offsets (amd64): g.m is 48 in all of them. */
static const struct {
	uint8_t first, last;
	uint16_t m_curg, g_labels;
} offsets[] = {
    {17, 20, 192, 360},                     /* map[string]string */
    {21, 22, 192, 344}, {23, 24, 192, 352}, /* 1.24: a sorted slice */
    {25, 25, 184, 344},                     /* 1.25 dropped gobuf.ret, in m before curg */
    {26, 26, 184, 352},
};

int ember_go_offsets(uint8_t minor, uint16_t *g_m, uint16_t *m_curg, uint16_t *g_labels)
{
	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++)
		if (minor >= offsets[i].first && minor <= offsets[i].last) {
			*g_m = 48;
			*m_curg = offsets[i].m_curg;
			*g_labels = offsets[i].g_labels;
			return 0;
		}
	return -ENOENT;
}

/* "go1.26.8" (or "go1.21rc2", "devel go1.27-..."): 26. */
static uint8_t version_minor(const uint8_t *s, size_t len)
{
	unsigned minor = 0;
	size_t i = 0;

	while (i + 4 <= len && memcmp(s + i, "go1.", 4))
		i++;
	if (i + 4 > len)
		return 0;
	for (i += 4; i < len && s[i] >= '0' && s[i] <= '9' && minor < 256; i++)
		minor = minor * 10 + (s[i] - '0');
	return minor < 256 ? (uint8_t)minor : 0;
}

static int read_elf(Elf *elf, void *facts)
{
	static const char *const names[] = {"runtime.tlsg"};
	struct ember_go_elf *out = facts;
	struct ember_elf_image f;
	struct ember_elf_sym tlsg;
	const uint8_t *bi;
	size_t len, vlen = 0, at = 32;
	int err = ember_elf_image_open(elf, &f);

	memset(out, 0, sizeof(*out));
	if (err)
		return err;
	if (ember_elf_image_section(&f, ".go.buildinfo", &bi, &len))
		return 0;
	out->is_go = true;
	if (len < 33 || memcmp(bi, BUILDINFO_MAGIC, 14) || !(bi[15] & BUILDINFO_INLINE))
		return 0; /* before 1.18: no offsets kept for it anyway */
	for (int shift = 0; at < len && shift < 21; shift += 7) { /* a varint length */
		vlen |= (size_t)(bi[at] & 0x7f) << shift;
		if (!(bi[at++] & 0x80))
			break;
	}
	if (vlen > len - at)
		return 0;
	out->minor = version_minor(bi + at, vlen < 64 ? vlen : 64);
	/* g: in runtime.tlsg when linked with C (glibc's static TLS), else at -8. */
	ember_elf_image_symbols(&f, names, 1, &tlsg);
	if (tlsg.type == STT_TLS)
		out->has_tls = !ember_elf_tls_static(&f, tlsg.addr, &out->tls_g);
	else if (f.tls.p_type != PT_TLS || f.tls.p_memsz <= 8) {
		out->has_tls = true;
		out->tls_g = GO_TLS_G;
	}
	return 0;
}

int ember_go_elf_read(int fd, struct ember_go_elf *out)
{
	return ember_elf_read_fd(fd, read_elf, out);
}

int ember_go_elf_read_mem(const void *image, size_t len, struct ember_go_elf *out)
{
	return ember_elf_read_memory(image, len, read_elf, out);
}

/* ---- the label set ---- */

struct go_label {
	char key[EMBER_GO_MAX_KEY + 1];
	char value[EMBER_GO_MAX_VALUE + 1];
};

/* A Go string {ptr, len} at s into buf (max bytes, NUL-ended; longer: cut, or -E2BIG). */
static int read_string(ember_go_read_fn read, void *ctx, const uint64_t s[2], char *buf, size_t max,
                       bool cut)
{
	size_t n = s[1];

	if (n > max) {
		if (!cut)
			return -E2BIG;
		n = max;
	}
	if (n && (!s[0] || read(ctx, s[0], buf, n)))
		return -EFAULT;
	buf[n] = '\0';
	return memchr(buf, '\0', n) ? -EBADMSG : 0;
}

static int add_label(ember_go_read_fn read, void *ctx, const uint64_t kv[4], struct go_label *l,
                     size_t *n)
{
	int err = read_string(read, ctx, kv, l[*n].key, EMBER_GO_MAX_KEY, false);

	if (err == -E2BIG || err == -EBADMSG)
		return 0; /* left out */
	if (!err)
		err = read_string(read, ctx, kv + 2, l[*n].value, EMBER_GO_MAX_VALUE, true);
	if (err == -EBADMSG)
		return 0;
	if (!err && l[*n].key[0] && !strpbrk(l[*n].key, "=\n"))
		(*n)++;
	return err;
}

/* 1.24 and later: labelMap{Set{List []Label{Key, Value string}}}, sorted by key. */
static int read_slice(ember_go_read_fn read, void *ctx, uint64_t addr, struct go_label *l,
                      size_t *n)
{
	uint64_t hdr[3], kv[4];
	int err = read(ctx, addr, hdr, sizeof(hdr));

	if (err)
		return err;
	if (hdr[1] > SLICE_MAX || hdr[1] > hdr[2])
		return -EBADMSG;
	for (uint64_t i = 0; i < hdr[1] && *n < EMBER_GO_MAX_LABELS; i++)
		if ((err = read(ctx, hdr[0] + 32 * i, kv, sizeof(kv))) ||
		    (err = add_label(read, ctx, kv, l, n)))
			return err;
	return 0;
}

/* Up to 1.23: *labelMap, a map[string]string: the map's header, its first buckets. */
static int read_map(ember_go_read_fn read, void *ctx, uint64_t addr, struct go_label *l, size_t *n)
{
	uint8_t hmap[24];
	uint64_t map = 0, buckets, count;
	uint8_t *bucket = malloc(MAP_BUCKET);
	int err = bucket ? read(ctx, addr, &map, sizeof(map)) : -ENOMEM;

	if (!err)
		err = map ? read(ctx, map, hmap, sizeof(hmap)) : -ENOENT;
	if (err) {
		free(bucket);
		return err == -ENOENT ? 0 : err;
	}
	memcpy(&count, hmap, 8);
	memcpy(&buckets, hmap + 16, 8);
	if (hmap[9] > MAP_LAST_B || count > SLICE_MAX)
		err = -EBADMSG;
	for (uint64_t b = 0; !err && b < (1ull << hmap[9]) && *n < EMBER_GO_MAX_LABELS; b++) {
		err = read(ctx, buckets + b * MAP_BUCKET, bucket, MAP_BUCKET);
		for (int i = 0; !err && i < 8 && *n < EMBER_GO_MAX_LABELS; i++) {
			uint64_t kv[4];

			if (bucket[i] < MAP_MIN_TOPHASH)
				continue;
			memcpy(kv, bucket + 8 + 16 * i, 16);
			memcpy(kv + 2, bucket + 136 + 16 * i, 16);
			err = add_label(read, ctx, kv, l, n);
		}
	}
	free(bucket);
	return err;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct go_label *)a)->key, ((const struct go_label *)b)->key);
}

int ember_go_read_labels(ember_go_read_fn read, void *ctx, uint8_t minor, uint64_t addr, char *out,
                         size_t size)
{
	struct go_label *l = calloc(EMBER_GO_MAX_LABELS, sizeof(*l));
	size_t n = 0, used = 0;
	int err;

	if (!l)
		return -ENOMEM;
	err = minor >= 24 ? read_slice(read, ctx, addr, l, &n) : read_map(read, ctx, addr, l, &n);
	qsort(l, n, sizeof(*l), by_key);
	out[0] = '\0';
	for (size_t i = 0; !err && i < n; i++) {
		size_t kl = strlen(l[i].key), vl = strlen(l[i].value);

		if (used + kl + vl + 3 > size)
			break;
		for (char *c = l[i].value; *c; c++)
			if (*c == '\n' || *c == '\r')
				*c = ' ';
		memcpy(out + used, l[i].key, kl);
		out[used + kl] = '=';
		memcpy(out + used + kl + 1, l[i].value, vl);
		out[used + kl + 1 + vl] = '\n';
		used += kl + vl + 2;
		out[used] = '\0';
	}
	free(l);
	return err;
}
