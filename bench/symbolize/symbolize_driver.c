// SPDX-License-Identifier: Apache-2.0
/*
 * Benchmark driver: resolves a list of addresses of one ELF file with
 * ember's symbolizer code (objfile: symbols, DWARF with inline frames,
 * .gopclntab, debug files) and reports the time taken.
 *
 *   ember-symbolize-bench [--print] [--passes N] FILE < addresses
 *
 * Addresses are ELF virtual addresses in hex, one per line. Pass 1 starts
 * from nothing (the file is opened and parsed inside the timed region);
 * later passes reuse what pass 1 built, as the symbolizer's cache does.
 * Debug files are opened here from /usr/lib/debug (in ember the broker
 * opens them). --print writes each address's frames the way
 * `eu-addr2line -f -i` does (name, then file:line; innermost first).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symbolizer/symbols/demangle.h"
#include "symbolizer/symbols/objfile.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char binary_dir[4096];

static int by_build_id(void *ctx, const char *hex)
{
	char path[256];

	(void)ctx;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static int by_debuglink(void *ctx, const char *name)
{
	const char *fmt[] = {"%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s"};
	char path[8192];

	(void)ctx;
	for (int i = 0; i < 3; i++) {
		int fd;

		snprintf(path, sizeof(path), fmt[i], binary_dir, name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	return -ENOENT;
}

struct counts {
	uint64_t named, with_line, inline_frames;
};

static void print_frames(uint64_t addr, const struct ember_sym_frames *fr)
{
	char readable[1024];

	printf("0x%" PRIx64 "\n", addr);
	if (!fr->n) {
		printf("??\n??:0\n");
		return;
	}
	for (uint32_t i = 0; i < fr->n; i++) {
		const struct ember_sym_frame *f = &fr->f[i];
		const char *name = f->name;

		if (ember_demangle(name, readable, sizeof(readable)) == 1)
			name = readable;
		printf("%s\n%s:%u\n", name, f->file ? f->file : "??", f->line);
	}
}

static void pass(struct ember_objfile *o, const uint64_t *addrs, size_t n, bool print,
                 struct counts *c)
{
	struct ember_sym_frames fr;
	char readable[1024];

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		if (ember_objfile_lookup(o, addrs[i], &fr) != EMBER_SYM_NONE) {
			c->named++;
			c->with_line += fr.f[0].line != 0;
			c->inline_frames += fr.n - 1;
			/* Demangling is part of the work a user sees. */
			for (uint32_t k = 0; k < fr.n; k++)
				ember_demangle(fr.f[k].name, readable, sizeof(readable));
		}
		if (print)
			print_frames(addrs[i], &fr);
	}
}

int main(int argc, char **argv)
{
	struct ember_debug_opener op = {NULL, by_build_id, by_debuglink};
	struct ember_objfile obj;
	uint64_t *addrs = NULL, t0, t1;
	size_t n = 0, cap = 0;
	bool print = false;
	int passes = 2, argi = 1, fd, err;
	char line[64], *slash;

	for (; argi < argc && argv[argi][0] == '-'; argi++) {
		if (!strcmp(argv[argi], "--print"))
			print = true;
		else if (!strcmp(argv[argi], "--passes") && argi + 1 < argc)
			passes = atoi(argv[++argi]);
		else
			break;
	}
	if (argi + 1 != argc || passes < 1) {
		fprintf(stderr, "usage: %s [--print] [--passes N] FILE < addresses\n", argv[0]);
		return 2;
	}
	snprintf(binary_dir, sizeof(binary_dir), "%s", argv[argi]);
	slash = strrchr(binary_dir, '/');
	if (slash)
		*slash = '\0';
	else
		strcpy(binary_dir, ".");
	while (fgets(line, sizeof(line), stdin)) {
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			addrs = realloc(addrs, cap * sizeof(*addrs));
			if (!addrs)
				return 1;
		}
		addrs[n++] = strtoull(line, NULL, 16);
	}
	t0 = now_ns();
	fd = open(argv[argi], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[argi]);
		return 1;
	}
	err = ember_objfile_open(fd, &op, &obj);
	close(fd);
	if (err) {
		fprintf(stderr, "%s: %s\n", argv[argi], strerror(-err));
		return 1;
	}
	for (int p = 1; p <= passes; p++) {
		struct counts c;

		pass(&obj, addrs, n, print && p == 1, &c);
		t1 = now_ns();
		fprintf(stderr,
		        "pass %d: %zu addresses in %.3f ms: %" PRIu64 " named, %" PRIu64
		        " with a line, %" PRIu64
		        " inline frames; debug info: %s, go: %d, bytes: %zu\n",
		        p, n, (t1 - t0) / 1e6, c.named, c.with_line, c.inline_frames,
		        obj.dwarf ? ember_debug_source_name(obj.dwarf_source) : "none", obj.has_go,
		        ember_objfile_bytes(&obj));
		t0 = t1;
	}
	ember_objfile_close(&obj);
	free(addrs);
	return 0;
}
