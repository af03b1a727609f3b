// SPDX-License-Identifier: Apache-2.0
#include "collector/selection.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/spawn.h"
#include "shared/cleanup.h"
#include "shared/err.h"
#include "shared/log.h"
#include "shared/str.h"

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

/* Adds rel, a path from the v2 root, chosen as "WHAT ARG". */
static int add(struct ember_selection *s, const char *what, const char *arg, const char *rel)
{
	char *path = s->cgroup_paths[s->ncgroups].path, title[EMBER_TITLE_LEN],
	     service[EMBER_TITLE_LEN];
	bool by_id = !strcmp(what, "container") || !strcmp(what, "pod"),
	     unit = !strcmp(what, "unit");

	if (strstr(rel, "..") ||
	    (size_t)snprintf(path, EMBER_CGROUP_PATH_LEN, "%s%s", *rel == '/' ? "" : "/", rel) >=
	        EMBER_CGROUP_PATH_LEN)
		return -EINVAL;
	s->cgroup_ids[s->ncgroups++] = 0;
	if (ember_select_ids(s) && !strcmp(what, "cgroup"))
		log_warn("no cgroup %s%s yet: its processes are sampled once it exists", s->root,
		         path);
	log_info("sampling %s %s: cgroup %s", what, arg, path);
	/* The profile's title: the unit (also its service.name), the cgroup's own name, or the id.
	 */
	if (by_id)
		snprintf(title, sizeof(title), "%s %.12s", what, arg);
	else
		ember_strlcpy(title, strrchr(path, '/') + 1, sizeof(title));
	snprintf(service, sizeof(service), "%.*s",
	         (int)strlen(title) - (ember_str_ends_with(title, ".service") ? 8 : 0), title);
	ember_select_note(s, what, by_id ? arg : unit ? title : path, title, unit ? service : NULL);
	return 0;
}

int ember_select_cgroup(struct ember_selection *s, const char *kind, const char *arg)
{
	if (s->ncgroups + s->nnamed == EMBER_SELECT_MAX_CGROUPS) {
		log_error("too many cgroups chosen (the limit is %d)", EMBER_SELECT_MAX_CGROUPS);
		return -E2BIG;
	}
	if (!s->root[0] && cgroup_root(s->root, sizeof(s->root))) {
		log_error(
		    "no cgroup v2 hierarchy at /sys/fs/cgroup: --%s needs one (mount cgroup2)",
		    kind);
		return -ENOENT;
	}
	if (strcmp(kind, "cgroup")) {
		s->named[s->nnamed][0] = kind;
		s->named[s->nnamed++][1] = arg;
		return 0;
	}
	if (!strncmp(arg, "/sys/fs/cgroup/", 15)) /* also when given under /sys/fs/cgroup */
		arg += strncmp(arg + 14, "/unified/", 9) ? 14 : 22;
	return add(s, "cgroup", arg, arg);
}

/* Runs `ember-symbolizer find-cgroup KIND ARG` as uid:gid on the v2 root; reads its answer. */
static int run_finder(const char *root, const char *const named[2], uid_t uid, gid_t gid, char *out,
                      size_t size)
{
	char exe[PATH_MAX], ids[2][16];
	char *const argv[] = {"ember-symbolizer",
	                      "find-cgroup",
	                      (char *)named[0],
	                      (char *)named[1],
	                      ids[0],
	                      ids[1],
	                      NULL};
	_cleanup_close_ int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), in = -1, wr = -1;
	int pipefd[2], status = 0;
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	if (ember_symbolizer_path(exe, sizeof(exe)))
		return -ENOENT;
	if (fd >= 0 && !pipe2(pipefd, O_CLOEXEC)) {
		in = pipefd[0];
		wr = pipefd[1];
	}
	if (wr < 0 || (pid = fork()) < 0)
		return log_error_errno(-errno, "cannot run ember-symbolizer on %s: %m", root);
	if (pid == 0) {
		/* The directories' names are anyone's: the finder reads them as uid:gid (where it
		 * can switch: a unit or container without CAP_SETUID cannot) and without any
		 * capability. It switches after the exec, which a 0700 build directory allows
		 * only to root. */
		snprintf(ids[0], sizeof(ids[0]), "%u", (unsigned)uid);
		snprintf(ids[1], sizeof(ids[1]), "%u", (unsigned)gid);
		if (dup2(fd, STDIN_FILENO) < 0 || dup2(wr, STDOUT_FILENO) < 0 ||
		    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			_exit(1);
		execv(exe, argv);
		_exit(127);
	}
	wr = ember_safe_close(wr);
	while (len < size - 1 &&
	       ((n = read(in, out + len, size - 1 - len)) > 0 || (n < 0 && errno == EINTR)))
		len += n > 0 ? (size_t)n : 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	out[len] = '\0';
	out[strcspn(out, "\n")] = '\0';
	/* It said what is wrong: 2 is an argument of the wrong form. */
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return WIFEXITED(status) && WEXITSTATUS(status) == 2 ? -EINVAL : -ENOENT;
	return out[0] == '/' ? 0 : -EIO;
}

int ember_select_find(struct ember_selection *s, uid_t uid, gid_t gid)
{
	char rel[EMBER_CGROUP_PATH_LEN];
	int err = 0;

	for (size_t i = 0; i < s->nnamed && !err; i++) {
		err = run_finder(s->root, s->named[i], uid, gid, rel, sizeof(rel));
		if (!err && add(s, s->named[i][0], s->named[i][1], rel))
			err = -EIO;
		if (err == -EIO)
			log_error("ember-symbolizer found no usable cgroup path for --%s %s",
			          s->named[i][0], s->named[i][1]);
	}
	s->nnamed = 0;
	return err;
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
