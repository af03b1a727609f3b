// SPDX-License-Identifier: Apache-2.0
#include "frontend/cgroup_find.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shared/err.h"
#include "shared/log.h"
#include "shared/str.h"

#define MAX_DEPTH 24

enum kind { UNIT, CONTAINER, POD };

/* What a search compares directory names with. */
struct query {
	enum kind kind;
	char name[EMBER_CGROUP_FIND_LEN]; /* a unit's full name, a container id (prefix) */
	char pod[2][64]; /* "pod<uid>" (cgroupfs), "pod<uid, '_' for '-'>.slice" (systemd) */
	int depth;       /* of the shallowest matches so far */
};

static bool matches(const struct query *q, const char *name)
{
	const char *tail = strrchr(name, '-') ? strrchr(name, '-') + 1 : name;
	size_t n = strlen(tail);

	switch (q->kind) {
	case UNIT:
		return !strcmp(name, q->name);
	case CONTAINER:
		/* docker-ID.scope, cri-containerd-ID.scope, crio-ID.scope, libpod-ID.scope
		 * (systemd), libpod-ID, ID (cgroupfs); not the runtime monitor's own
		 * (crio-conmon-ID.scope). */
		return (n == 64 || (n == 70 && !strcmp(tail + 64, ".scope"))) &&
		       ember_is_lower_hex(tail, 64) && !strncmp(tail, q->name, strlen(q->name)) &&
		       !strstr(name, "conmon");
	case POD:
		return ember_str_ends_with(name, q->pod[0]) || ember_str_ends_with(name, q->pod[1]);
	}
	return false;
}

/* Walks the directories below fd (path: its name from the root), depth first; closes fd. */
static void walk(struct query *q, struct ember_cgroup_found *out, int fd, char *path, size_t len,
                 int depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;

	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		int sub;

		/* A newline would end the path where the collector reads it. */
		if ((e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) || e->d_name[0] == '.' ||
		    strchr(e->d_name, '\n') || len + 1 + n >= EMBER_CGROUP_FIND_LEN)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, e->d_name, n + 1);
		if (matches(q, e->d_name) && depth <= q->depth) {
			out->count = depth < q->depth ? 0 : out->count;
			q->depth = depth;
			ember_strlcpy(out->count++ ? out->other : out->path, path,
			              sizeof(out->path));
		}
		/* Below a match's depth nothing can win any more. */
		if (depth >= MAX_DEPTH || depth >= q->depth)
			continue;
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			walk(q, out, sub, path, len + 1 + n, depth + 1);
	}
	path[len] = '\0';
	closedir(d);
}

/* Fills q from kind and arg. Returns 0 or -EINVAL for an argument not of the kind's form. */
static int make_query(struct query *q, const char *kind, const char *arg)
{
	size_t n = strlen(arg);

	*q = (struct query){.depth = MAX_DEPTH + 1};
	if (!strcmp(kind, "unit")) {
		q->kind = UNIT;
		if (!n || arg[0] == '.' || strchr(arg, '/') || n + 9 > sizeof(q->name))
			return -EINVAL;
		snprintf(q->name, sizeof(q->name), "%s%s", arg, strchr(arg, '.') ? "" : ".service");
	} else if (!strcmp(kind, "container")) {
		q->kind = CONTAINER;
		if (n < 4 || n > 64 || !ember_is_lower_hex(arg, n))
			return -EINVAL;
		ember_strlcpy(q->name, arg, sizeof(q->name));
	} else if (!strcmp(kind, "pod")) {
		q->kind = POD;
		if (n != 36 || strspn(arg, "0123456789abcdef-") != 36)
			return -EINVAL;
		snprintf(q->pod[0], sizeof(q->pod[0]), "pod%s", arg);
		snprintf(q->pod[1], sizeof(q->pod[1]), "pod%s.slice", arg);
		for (char *c = q->pod[1]; *c; c++)
			*c = *c == '-' ? '_' : *c;
	} else {
		return -EINVAL;
	}
	return 0;
}

int ember_cgroup_find(int rootfd, const char *kind, const char *arg, struct ember_cgroup_found *out)
{
	char path[EMBER_CGROUP_FIND_LEN] = "";
	struct query q;
	int fd, err = make_query(&q, kind, arg);

	*out = (struct ember_cgroup_found){0};
	if (err)
		return err;
	/* A description of its own: rootfd's read position stays where it was. */
	fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	walk(&q, out, fd, path, 0, 0);
	return out->count > 1 ? -EEXIST : out->count ? 0 : -ENOENT;
}

int ember_cgroup_find_command(int rootfd, const char *kind, const char *arg, int out_fd)
{
	struct ember_cgroup_found found;
	int err = ember_cgroup_find(rootfd, kind, arg, &found);

	if (err == -ENOENT && !strcmp(kind, "unit")) {
		/* Not running: where systemd starts a service of the default slice. */
		snprintf(found.path, sizeof(found.path), "/system.slice/%s%s", arg,
		         strchr(arg, '.') ? "" : ".service");
		log_warn("unit %s is not running: it is sampled once it starts in %s", arg,
		         found.path);
		err = 0;
	}
	if (err == -EINVAL)
		log_error("bad '%s': give a unit name (nginx, nginx.service), a container id "
		          "(hex, 4 digits or more) or a pod uid",
		          arg);
	else if (err == -ENOENT)
		log_error("no cgroup of %s %s: is it running?", kind, arg);
	else if (err == -EEXIST)
		log_error("%s %s: %d cgroups match (%s, %s, ...); choose one with --cgroup PATH",
		          kind, arg, found.count, found.path, found.other);
	else if (err)
		log_error_errno(err, "cannot read the cgroup tree: %m");
	if (err)
		return err == -EINVAL ? 2 : 1;
	return dprintf(out_fd, "%s\n", found.path) < 0 ? 1 : 0;
}
