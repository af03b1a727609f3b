/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A cgroup v2 directory found by name: a systemd unit's ("nginx.service",
 * also one of a container's own systemd, e.g. a machine booted with
 * systemd-nspawn), a container's by its id or a prefix of it (docker,
 * containerd/CRI, CRI-O, podman; systemd and cgroupfs layouts) or a
 * Kubernetes pod's by its uid (kubelet's systemd and cgroupfs layouts).
 *
 * `ember record` and `ember collector` (--unit, --container, --pod) run
 * this in a child that has become the symbolizer's user without any
 * capability, on the v2 root the front end opened for it; the collector
 * only stats the path it finds.
 *
 * The tree is hostile: anyone with a delegated subtree (a rootless container,
 * a user's systemd) names directories in it. Names are only compared with what
 * was asked for, never parsed; the walk is bounded in depth and path length;
 * two matches at the shallowest depth are refused as ambiguous, not guessed.
 */
#ifndef EMBER_FRONTEND_CGROUP_FIND_H
#define EMBER_FRONTEND_CGROUP_FIND_H

#include <stddef.h>

#define EMBER_CGROUP_FIND_LEN 256 /* a path from the root, with its NUL */

struct ember_cgroup_found {
	char path[EMBER_CGROUP_FIND_LEN];  /* "/a/b": the shallowest match */
	char other[EMBER_CGROUP_FIND_LEN]; /* a second one at that depth, if any */
	int count;                         /* matches at the shallowest depth */
};

/*
 * Searches the tree below the directory rootfd (left open) for kind
 * ("unit", "container" or "pod") named arg. Returns 0 (one match in
 * out->path); -EINVAL when arg is not of the kind's form; -ENOENT when
 * nothing matches; -EEXIST when out->count > 1 match at the shallowest
 * depth; another negative errno when rootfd cannot be read.
 */
int ember_cgroup_find(int rootfd, const char *kind, const char *arg,
                      struct ember_cgroup_found *out);

/*
 * The search as the front end's unprivileged child runs it: writes the path found (from the
 * root open at rootfd) and a newline to out_fd and returns 0, or says what is wrong and
 * returns 2 (arg is not of kind's form) or 1. A unit not running yet gives the path systemd
 * will start it at (system.slice).
 */
int ember_cgroup_find_command(int rootfd, const char *kind, const char *arg, int out_fd);

#endif
