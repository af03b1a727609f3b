// SPDX-License-Identifier: Apache-2.0
#include "frontend/selection.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frontend/cgroup_find.h"
#include "frontend/launch.h"
#include "frontend/options.h"
#include "seccomp/caps.h"
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

void ember_select_note(struct ember_core_config *cfg, const char *what, const char *arg,
                       const char *title, const char *service)
{
	size_t n = strlen(cfg->selection);

	snprintf(cfg->selection + n, sizeof(cfg->selection) - n, "%s%s %s", n ? ", " : "", what,
	         arg);
	if (title && !cfg->title[0])
		ember_strlcpy(cfg->title, title, sizeof(cfg->title));
	if (service && !cfg->service[0])
		ember_strlcpy(cfg->service, service, sizeof(cfg->service));
}

/* Adds rel, a path from the v2 root, chosen as "WHAT ARG". Returns 0 or -EINVAL. */
static int add(struct ember_core_config *cfg, const char *what, const char *arg, const char *rel)
{
	char *path = cfg->cgroups[cfg->ncgroups].path, title[EMBER_TITLE_LEN],
	     service[EMBER_TITLE_LEN], full[sizeof(cfg->cgroup_root) + EMBER_CGROUP_PATH_LEN];
	bool by_id = !strcmp(what, "container") || !strcmp(what, "pod"),
	     unit = !strcmp(what, "unit");
	struct stat st;

	if (strstr(rel, "..") ||
	    (size_t)snprintf(path, EMBER_CGROUP_PATH_LEN, "%s%s", *rel == '/' ? "" : "/", rel) >=
	        EMBER_CGROUP_PATH_LEN)
		return -EINVAL;
	cfg->ncgroups++;
	snprintf(full, sizeof(full), "%s%s", cfg->cgroup_root, path);
	if (stat(full, &st) && !strcmp(what, "cgroup"))
		log_warn("no cgroup %s yet: its processes are sampled once it exists", full);
	log_info("sampling %s %s: cgroup %s", what, arg, path);
	/* The profile's title: the unit (also its service.name), the cgroup's own name, or the
	 * id. */
	if (by_id)
		snprintf(title, sizeof(title), "%s %.12s", what, arg);
	else
		ember_strlcpy(title, strrchr(path, '/') + 1, sizeof(title));
	snprintf(service, sizeof(service), "%.*s",
	         (int)strlen(title) - (ember_str_ends_with(title, ".service") ? 8 : 0), title);
	ember_select_note(cfg, what,
	                  by_id  ? arg
	                  : unit ? title
	                         : path,
	                  title, unit ? service : NULL);
	return 0;
}

/* Runs the search for KIND ARG in a child that is uid:gid without capabilities; reads its
 * answer. Returns 0, -EINVAL (ARG of the wrong form) or -ENOENT (said why). */
static int find_named(const char *root, const struct ember_cli_choice *ch, uid_t uid, gid_t gid,
                      char *out, size_t size)
{
	_cleanup_close_ int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), in = -1, wr = -1;
	int pipefd[2], status = 0;
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	if (fd >= 0 && !pipe2(pipefd, O_CLOEXEC)) {
		in = pipefd[0];
		wr = pipefd[1];
	}
	fflush(NULL);
	if (wr < 0 || (pid = fork()) < 0)
		return log_error_errno(-errno, "cannot search %s: %m", root), -ENOENT;
	if (pid == 0) {
		/* The directories' names are anyone's: read them with no privilege. A unit or
		 * container without CAP_SETUID stays its user, capabilities dropped. */
		in = ember_safe_close(in);
		if (ember_caps_become(uid, gid)) {
			/* No CAP_SETUID here: the same user, but no capability left. */
			ember_caps_limit(0);
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || ember_caps_effective())
				_exit(1);
		}
		_exit(ember_cgroup_find_command(fd, ch->kind, ch->arg, wr));
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
	return out[0] == '/' ? 0 : -ENOENT;
}

/* One --cgroup, --unit, --container or --pod. Returns 0 or an exit code. */
static int choose_cgroup(const struct ember_cli *c, const struct ember_cli_choice *ch, uid_t uid,
                         gid_t gid, struct ember_core_config *cfg)
{
	char rel[EMBER_CGROUP_PATH_LEN];
	const char *arg = ch->arg;
	int err;

	if (!cfg->cgroup_root[0] && cgroup_root(cfg->cgroup_root, sizeof(cfg->cgroup_root))) {
		log_error(
		    "no cgroup v2 hierarchy at /sys/fs/cgroup: --%s needs one (mount cgroup2)",
		    ch->kind);
		return EMBER_EXIT_FAILURE;
	}
	if (strcmp(ch->kind, "cgroup")) {
		err = find_named(cfg->cgroup_root, ch, uid, gid, rel, sizeof(rel));
		if (err)
			return err == -EINVAL ? EMBER_EXIT_USAGE : EMBER_EXIT_FAILURE;
		if (add(cfg, ch->kind, arg, rel))
			return log_error("found no usable cgroup path for --%s %s", ch->kind, arg),
			       EMBER_EXIT_FAILURE;
		return 0;
	}
	if (!strncmp(arg, "/sys/fs/cgroup/", 15)) /* also when given under /sys/fs/cgroup */
		arg += strncmp(arg + 14, "/unified/", 9) ? 14 : 22;
	if (add(cfg, "cgroup", ch->arg, arg))
		return ember_usage_error(c,
		                         "bad '%s': give a cgroup path from the v2 root, without "
		                         "'..'",
		                         ch->arg);
	return 0;
}

int ember_select(const struct ember_cli *c, uid_t uid, gid_t gid, struct ember_core_config *cfg)
{
	int err;

	for (size_t i = 0; i < c->npids; i++)
		cfg->pids[cfg->npids++] = c->pids[i];
	for (size_t i = 0; i < c->nchoices; i++) {
		const struct ember_cli_choice *ch = &c->choices[i];

		if (!strcmp(ch->kind, "pid"))
			ember_select_note(cfg, "pid", ch->arg, NULL, NULL);
		else if ((err = choose_cgroup(c, ch, uid, gid, cfg)))
			return err;
	}
	return 0;
}
