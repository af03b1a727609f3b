// SPDX-License-Identifier: Apache-2.0
#include "collector/selection.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "shared/err.h"
#include "shared/log.h"
#include "shared/str.h"

#define MAX_DEPTH 24

enum select_kind { SELECT_CGROUP, SELECT_UNIT, SELECT_CONTAINER, SELECT_POD };

/* A search of the tree for the shallowest directories a name matches. */
struct search {
	enum select_kind kind;
	const char *arg;
	char pod[2][64]; /* "pod<uid>" (cgroupfs), "pod<uid, '_' for '-'>.slice" (systemd) */
	char found[EMBER_CGROUP_PATH_LEN], other[EMBER_CGROUP_PATH_LEN];
	int depth, nfound; /* of the shallowest matches */
};

/*
 * The v2 hierarchy as the host's PID 1 sees it: a collector in a container
 * (with the host's PIDs) may see only its own cgroup at /sys/fs/cgroup.
 * Systems booted in hybrid mode have it at .../unified.
 */
static int cgroup_root(char *out, size_t size)
{
	static const char *const roots[] = {"/proc/1/root/sys/fs/cgroup",
	                                    "/proc/1/root/sys/fs/cgroup/unified", "/sys/fs/cgroup",
	                                    "/sys/fs/cgroup/unified"};
	struct statfs fs;

	for (size_t i = 0; i < ARRAY_SIZE(roots); i++)
		if (!statfs(roots[i], &fs) && fs.f_type == CGROUP2_SUPER_MAGIC)
			return ember_strlcpy(out, roots[i], size);
	return -ENOENT;
}

static bool matches(const struct search *q, const char *name)
{
	const char *tail = strrchr(name, '-') ? strrchr(name, '-') + 1 : name;
	size_t n = strlen(tail);

	switch (q->kind) {
	case SELECT_UNIT:
		return !strcmp(name, q->arg);
	case SELECT_CONTAINER:
		/* docker-ID.scope, cri-containerd-ID.scope, crio-ID.scope, libpod-ID.scope
		 * (systemd), libpod-ID, ID (cgroupfs); not the runtime monitor's own
		 * (crio-conmon-ID.scope). */
		return (n == 64 || (n == 70 && !strcmp(tail + 64, ".scope"))) &&
		       ember_is_lower_hex(tail, 64) && !strncmp(tail, q->arg, strlen(q->arg)) &&
		       !strstr(name, "conmon");
	case SELECT_POD:
		return ember_str_ends_with(name, q->pod[0]) || ember_str_ends_with(name, q->pod[1]);
	default:
		return false;
	}
}

/* Walks the directories below fd (path: its name from the root), depth first; closes fd. */
static void walk(struct search *q, int fd, char *path, size_t len, int depth)
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

		if (e->d_type != DT_DIR || e->d_name[0] == '.' ||
		    len + 1 + n >= EMBER_CGROUP_PATH_LEN)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, e->d_name, n + 1);
		if (matches(q, e->d_name) && depth <= q->depth) {
			q->nfound = depth < q->depth ? 0 : q->nfound;
			q->depth = depth;
			ember_strlcpy(q->nfound++ ? q->other : q->found, path, sizeof(q->found));
		}
		if (depth >= MAX_DEPTH || depth >= q->depth)
			continue;
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			walk(q, sub, path, len + 1 + n, depth + 1);
	}
	path[len] = '\0';
	closedir(d);
}

/* The path below root of the one shallowest directory that q matches. */
static int find(struct search *q, const char *root, const char *what)
{
	char path[EMBER_CGROUP_PATH_LEN] = "";
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return neg_errno();
	q->depth = MAX_DEPTH + 1;
	walk(q, fd, path, 0, 0);
	if (q->nfound > 1) {
		log_error("%s %s: %d cgroups match (%s, %s, ...); choose one with --cgroup PATH",
		          what, q->arg, q->nfound, q->found, q->other);
		return -EEXIST;
	}
	return q->nfound ? 0 : -ENOENT;
}

int ember_select_cgroup(struct ember_selection *s, const char *kind_name, const char *arg)
{
	static const char *const what[] = {"cgroup", "unit", "container", "pod"};
	enum select_kind kind = SELECT_CGROUP;
	struct search q;
	char *root = s->root, unit[EMBER_CGROUP_PATH_LEN - 16], *rel;
	char title[EMBER_TITLE_LEN], service[EMBER_TITLE_LEN];
	int err = 0;

	while (strcmp(what[kind], kind_name))
		if (++kind == ARRAY_SIZE(what))
			return -EINVAL;
	q = (struct search){.kind = kind, .arg = arg};
	if (s->ncgroups == EMBER_SELECT_MAX_CGROUPS) {
		log_error("too many cgroups chosen (the limit is %d)", EMBER_SELECT_MAX_CGROUPS);
		return -E2BIG;
	}
	if (!root[0] && cgroup_root(root, sizeof(s->root))) {
		log_error(
		    "no cgroup v2 hierarchy at /sys/fs/cgroup: --%s needs one (mount cgroup2)",
		    what[kind]);
		return -ENOENT;
	}
	rel = s->cgroup_paths[s->ncgroups].path;
	switch (kind) {
	case SELECT_CGROUP: /* from the v2 root, also when given under /sys/fs/cgroup */
		if (!strncmp(arg, "/sys/fs/cgroup/", 15))
			arg += strncmp(arg + 14, "/unified/", 9) ? 14 : 22;
		if (strstr(arg, "..") ||
		    (size_t)snprintf(rel, EMBER_CGROUP_PATH_LEN, "%s%s", *arg == '/' ? "" : "/",
		                     arg) >= EMBER_CGROUP_PATH_LEN)
			return -EINVAL;
		break;
	case SELECT_UNIT:
		if (strchr(arg, '/') || strlen(arg) + 9 > sizeof(unit))
			return -EINVAL;
		snprintf(unit, sizeof(unit), "%s%s", arg, strchr(arg, '.') ? "" : ".service");
		q.arg = unit;
		break;
	case SELECT_CONTAINER:
		if (strlen(arg) < 4 || strlen(arg) > 64 || !ember_is_lower_hex(arg, strlen(arg)))
			return -EINVAL;
		break;
	case SELECT_POD:
		if (strlen(arg) != 36 || strspn(arg, "0123456789abcdef-") != 36)
			return -EINVAL;
		snprintf(q.pod[0], sizeof(q.pod[0]), "pod%s", arg);
		snprintf(q.pod[1], sizeof(q.pod[1]), "pod%s.slice", arg);
		for (char *c = q.pod[1]; *c; c++)
			*c = *c == '-' ? '_' : *c;
		break;
	}
	if (kind != SELECT_CGROUP) {
		err = find(&q, root, what[kind]);
		if (err == -ENOENT && kind == SELECT_UNIT) {
			/* Not running: where systemd starts a service of the default slice. */
			snprintf(q.found, sizeof(q.found), "/system.slice/%s", unit);
			log_warn("unit %s is not running: it is sampled once it starts in %s", unit,
			         q.found);
			err = 0;
		} else if (err == -ENOENT) {
			log_error("no cgroup of %s %s under %s: is it running?", what[kind], arg,
			          root);
		}
		if (err)
			return err;
		ember_strlcpy(rel, q.found, EMBER_CGROUP_PATH_LEN);
	}
	s->cgroup_ids[s->ncgroups++] = 0;
	if (ember_select_ids(s) && kind == SELECT_CGROUP)
		log_warn("no cgroup %s%s yet: its processes are sampled once it exists", root, rel);
	log_info("sampling %s %s: cgroup %s", what[kind], q.arg, rel);
	/* The profile's title: the unit (also its service.name), the cgroup's own name, or the id.
	 */
	if (kind == SELECT_CGROUP || kind == SELECT_UNIT)
		ember_strlcpy(title, strrchr(rel, '/') + 1, sizeof(title));
	else
		snprintf(title, sizeof(title), "%s %.12s", what[kind], arg);
	snprintf(service, sizeof(service), "%.*s",
	         (int)strlen(title) - (ember_str_ends_with(title, ".service") ? 8 : 0), title);
	ember_select_note(s, what[kind], q.arg, title, kind == SELECT_UNIT ? service : NULL);
	return 0;
}

size_t ember_select_ids(struct ember_selection *s)
{
	char full[sizeof(s->root) + EMBER_CGROUP_PATH_LEN];
	size_t missing = 0;
	struct stat st;

	for (size_t i = 0; i < s->ncgroups; i++) {
		snprintf(full, sizeof(full), "%s%s", s->root, s->cgroup_paths[i].path);
		/* A cgroup's inode number is its id (kernfs), the one the sampler compares. */
		if (!s->cgroup_ids[i] && !stat(full, &st))
			s->cgroup_ids[i] = st.st_ino;
		missing += !s->cgroup_ids[i];
	}
	return missing;
}

void ember_select_note(struct ember_selection *s, const char *what, const char *arg,
                       const char *title, const char *service)
{
	size_t n = strlen(s->text);

	snprintf(s->text + n, sizeof(s->text) - n, "%s%s %s", n ? ", " : "", what, arg);
	if (title && !s->title[0])
		ember_strlcpy(s->title, title, sizeof(s->title));
	if (service && !s->service[0])
		ember_strlcpy(s->service, service, sizeof(s->service));
}
