/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the front end starts ember's two programs: it finds and opens each
 * (beside itself in a build tree, else in the package's libexec directory),
 * puts the configuration and the descriptors it names at their fixed numbers
 * (ipc/config_fd.h), changes user where it must, and execs the descriptor it
 * opened (so that a build tree only root may enter still works).
 *
 * Users are looked up here, by name or by sudo's SUDO_UID, with their groups:
 * the collector parses no user database.
 */
#ifndef EMBER_FRONTEND_LAUNCH_H
#define EMBER_FRONTEND_LAUNCH_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "ipc/core_config.h"

/* Descriptors a program is handed, numbered from base in its own table. */
struct ember_fdlist {
	int base;
	int fds[EMBER_CORE_MAX_PASSED + 2];
	size_t n;
};

/* Adds fd; returns the number the program will see it as (base + its place). */
int ember_fdlist_add(struct ember_fdlist *l, int fd);
/* Closes every descriptor of the list. */
void ember_fdlist_close(struct ember_fdlist *l);

/* Opens ember's program `name` (O_PATH): beside this program, else in EMBER_LIBEXECDIR.
 * Returns the descriptor, or -ENOENT after saying what to do. */
int ember_program_open(const char *name);

struct ember_user {
	uid_t uid;
	gid_t gid;
	gid_t groups[EMBER_CORE_MAX_GROUPS];
	size_t ngroups;
	char name[256];
	char home[EMBER_CORE_PATH_LEN];
};

/* The user called name (or, for a name of digits, with that uid). Returns 0 or -ENOENT. */
int ember_user_find(const char *name, struct ember_user *u);
/* The user of uid. Returns 0 or -ENOENT. */
int ember_user_of_uid(uid_t uid, struct ember_user *u);

/*
 * Execs the program at exe (ember_program_open) as argv0, with the configuration memfd at
 * EMBER_CONFIG_FD and the list's descriptors from EMBER_CONFIG_FIRST_FD (the list's base
 * must be that). Every other descriptor but 0-2 closes at the exec. Returns only on failure,
 * a negative errno.
 */
int ember_exec(int exe, const char *argv0, int config_fd, const struct ember_fdlist *passed);

#endif
