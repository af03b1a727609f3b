/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer's confinement. It starts (as root, under `ember record`, or
 * as its own user under systemd) and, before it reads the first record,
 * becomes the configured unprivileged user for good.
 */
#ifndef EMBER_SYMBOLIZER_SANDBOX_H
#define EMBER_SYMBOLIZER_SANDBOX_H

#include <sys/types.h>

struct ember_sandbox_opts {
	uid_t uid;
	gid_t gid;
};

/*
 * Sets the supplementary groups, gid and uid (when running as root),
 * checks that root cannot be regained, sets no_new_privs, makes the process
 * non-dumpable and asks for SIGKILL when the parent dies. Returns 0 or a
 * negative errno.
 */
int ember_sandbox_drop_privileges(const struct ember_sandbox_opts *o);

#endif
