// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the collector's own reading of /proc/PID/maps (collector/broker.c,
 * find_mapping), in the root process, to find the file a process mapped at an address: the
 * lines are the kernel's, but each path in them is one the profiled process chose (a file
 * named "x (deleted)", with spaces, with what looks like more fields). broker.c is compiled
 * into this target with its getline() reading the fuzzer's lines instead of the file.
 *
 * The first byte picks the input's shape:
 *   even: the lines as the kernel writes them (show_map_vma: "start-end perms offset
 *         major:minor inode", padded, the path with '\n' escaped as \012), made from the
 *         fuzzer's fields and paths; the answer must be exactly the first mapping at the
 *         address asked: its end, inode, device and path, or -ENOENT for no file there (no
 *         path, an anonymous or special mapping, inode 0, a deleted file), or -ENAMETOOLONG;
 *   odd:  any bytes as the file: whatever it answers, a mapping found is a file by its
 *         absolute path, not deleted, of a nonzero inode, and its path fits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static const char *maps_text;
static size_t maps_len, maps_at;

/* getline() over maps_text, for broker.c: the lines as they come, '\n' kept. */
static ssize_t fuzz_getline(char **line, size_t *cap, FILE *f)
{
	const char *nl;
	size_t n;

	(void)f;
	if (maps_at >= maps_len)
		return -1;
	nl = memchr(maps_text + maps_at, '\n', maps_len - maps_at);
	n = nl ? (size_t)(nl - maps_text - maps_at) + 1 : maps_len - maps_at;
	if (*cap < n + 1) {
		char *grown = realloc(*line, n + 1);

		if (!grown)
			return -1;
		*line = grown;
		*cap = n + 1;
	}
	memcpy(*line, maps_text + maps_at, n);
	(*line)[n] = '\0';
	maps_at += n;
	return (ssize_t)n;
}

#define getline fuzz_getline
#include "collector/broker.c"
#undef getline

static void finding(const char *what, unsigned long long a)
{
	fprintf(stderr, "fuzz_broker_maps: %s (%#llx)\n", what, a);
	abort();
}

struct take {
	const uint8_t *d;
	size_t n, at;
};

static uint64_t take_u(struct take *t, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)(t->at < t->n ? t->d[t->at++] : 0) << (8 * i);
	return v;
}

/* What find_mapping must answer for one line of the kernel's. */
struct expect {
	int err;
	uint64_t end, ino;
	uint32_t dev[2];
	char path[1024]; /* as long as the longest shown path: 255 bytes each written \012 */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const perms[] = {"r-xp", "r--p", "rw-p", "---p", "rwxs", "r-xs"};
	struct ember_msg_broker_req req = {.pid = (uint32_t)getpid()};
	struct take t = {data, size, 1};
	struct expect want = {.err = -ENOENT};
	char path[4096], *text = NULL;
	size_t text_len = 0, path_size;
	struct mapping got = {0};
	bool found = false;
	int err;

	if (size < 1)
		return 0;
	req.addr = take_u(&t, 8);
	path_size = 16 + take_u(&t, 2) % (sizeof(path) - 16);
	if (data[0] & 1) {
		maps_text = (const char *)data + t.at;
		maps_len = size - t.at;
	} else {
		/* Entries: start 8, end 8, perms 1, offset 4, major 1, minor 1, inode 4, path
		 * length 1, path bytes (its first byte '/', '[' or none; '\n' written \012). */
		FILE *f = open_memstream(&text, &text_len);

		if (!f)
			return 0;
		while (t.at < t.n) {
			uint64_t start = take_u(&t, 8), stop = take_u(&t, 8);
			const char *p = perms[take_u(&t, 1) % 6];
			unsigned long long off = take_u(&t, 4), inode = take_u(&t, 4);
			unsigned major = (unsigned)take_u(&t, 1), minor = (unsigned)take_u(&t, 1);
			size_t plen = (size_t)take_u(&t, 1), w;
			char shown[1024];
			size_t s = 0;

			if (plen > t.n - t.at)
				plen = t.n - t.at;
			for (size_t i = 0; i < plen; i++) {
				char c = (char)t.d[t.at + i];

				if (i == 0 && c != '/' && c != '[')
					c = '/';
				if (c == '\n') {
					memcpy(shown + s, "\\012", 4);
					s += 4;
				} else if (c) {
					shown[s++] = c;
				}
			}
			shown[s] = '\0';
			t.at += plen;
			w = (size_t)fprintf(f, "%08llx-%08llx %s %08llx %02x:%02x %llu",
			                    (unsigned long long)start, (unsigned long long)stop, p, off,
			                    major, minor, inode);
			if (s) {
				fputc(' ', f);
				for (w++; w < 73; w++)
					fputc(' ', f);
				fputs(shown, f);
			}
			fputc('\n', f);
			if (found || start != req.addr)
				continue;
			found = true;
			if (s && shown[0] == '/' && inode &&
			    !(s >= 10 && !strcmp(shown + s - 10, " (deleted)"))) {
				if (s >= path_size) {
					want.err = -ENAMETOOLONG;
				} else {
					want.err = 0;
					want.end = stop;
					want.ino = inode;
					want.dev[0] = major;
					want.dev[1] = minor;
					memcpy(want.path, shown, s + 1);
				}
			}
		}
		fclose(f);
		maps_text = text;
		maps_len = text_len;
	}
	maps_at = 0;
	err = find_mapping(&req, -1, &got, path, path_size);
	if (!(data[0] & 1)) {
		if (err != want.err)
			finding("not the answer the kernel's lines give", (unsigned long long)err);
		if (!err &&
		    (got.end != want.end || got.ino != want.ino || got.dev[0] != want.dev[0] ||
		     got.dev[1] != want.dev[1] || strcmp(path, want.path)))
			finding("not the mapping the kernel's lines give", req.addr);
	} else if (!err) {
		size_t n = strnlen(path, path_size);

		if (n == path_size || path[0] != '/' || !got.ino ||
		    (n >= 10 && !strcmp(path + n - 10, " (deleted)")))
			finding("a mapping the broker must not open", req.addr);
	}
	free(text);
	return 0;
}
