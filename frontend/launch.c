// SPDX-License-Identifier: Apache-2.0
#include "frontend/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <linux/close_range.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp/caps.h"
#include "shared/err.h"
#include "shared/log.h"
#include "shared/parse.h"
#include "shared/str.h"

int ember_fdlist_add(struct ember_fdlist *l, int fd)
{
	if (l->n == ARRAY_SIZE(l->fds))
		return -E2BIG;
	l->fds[l->n] = fd;
	return l->base + (int)l->n++;
}

void ember_fdlist_close(struct ember_fdlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		close(l->fds[i]);
	l->n = 0;
}

int ember_program_open(const char *name)
{
	char self[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int fd = -1;

	if (n > 0) {
		self[n] = '\0';
		snprintf(path, sizeof(path), "%s/%s", dirname(self), name);
		fd = open(path, O_PATH | O_CLOEXEC);
	}
	if (fd < 0) {
		snprintf(path, sizeof(path), "%s/%s", EMBER_LIBEXECDIR, name);
		fd = open(path, O_PATH | O_CLOEXEC);
	}
	if (fd < 0) {
		log_error("cannot find %s next to ember or in %s; reinstall ember", name,
		          EMBER_LIBEXECDIR);
		return -ENOENT;
	}
	return fd;
}

static int user_from(const struct passwd *pw, struct ember_user *u)
{
	int n = (int)ARRAY_SIZE(u->groups);

	if (!pw || ember_strlcpy(u->name, pw->pw_name, sizeof(u->name)) ||
	    ember_strlcpy(u->home, pw->pw_dir, sizeof(u->home)))
		return -ENOENT;
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	/* Its groups as initgroups would set them: the collector only calls setgroups. */
	if (getgrouplist(pw->pw_name, pw->pw_gid, u->groups, &n) < 0)
		return -E2BIG;
	u->ngroups = (size_t)n;
	return 0;
}

int ember_user_find(const char *name, struct ember_user *u)
{
	uint64_t uid;

	if (!ember_parse_u64(name, 0, UINT32_MAX - 1, &uid))
		return user_from(getpwuid((uid_t)uid), u);
	return user_from(getpwnam(name), u);
}

int ember_user_of_uid(uid_t uid, struct ember_user *u)
{
	return user_from(getpwuid(uid), u);
}

int ember_exec(int exe, const char *argv0, int config_fd, const struct ember_fdlist *passed)
{
	char *const argv[] = {(char *)argv0, NULL};
	int high[1 + ARRAY_SIZE(passed->fds)], n = 1 + (int)passed->n;

	/* Out of the way first, the program's descriptor too: no dup2 overwrites a source. */
	exe = fcntl(exe, F_DUPFD_CLOEXEC, 64);
	for (int i = 0; i < n && exe >= 0; i++)
		if ((high[i] = fcntl(i ? passed->fds[i - 1] : config_fd, F_DUPFD_CLOEXEC, 64)) < 0)
			return neg_errno();
	for (int i = 0; i < n && exe >= 0; i++)
		if (dup2(high[i], EMBER_CONFIG_FD + i) < 0)
			return neg_errno();
	if (exe < 0 || syscall(SYS_close_range, EMBER_CONFIG_FD + n, ~0u, CLOSE_RANGE_CLOEXEC) < 0)
		return neg_errno();
	syscall(SYS_execveat, exe, "", argv, environ, AT_EMPTY_PATH);
	return neg_errno();
}
