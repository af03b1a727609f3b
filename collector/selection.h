/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What to sample besides -p: cgroup v2 subtrees, given by path or found by a
 * systemd unit's name, a container's id (containerd, CRI-O, docker, podman)
 * or a Kubernetes pod's uid; and the words the profile carries about the
 * choice (the selection, a title, a default service.name).
 *
 * The cgroup tree is the kernel's own file system, but anyone with a
 * delegated subtree (a rootless container, a user's systemd) names
 * directories in it: names are only compared with what the user asked for,
 * and a name found more than once at the shallowest depth is refused as
 * ambiguous rather than guessed.
 */
#ifndef EMBER_COLLECTOR_SELECTION_H
#define EMBER_COLLECTOR_SELECTION_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/records.h"
#include "ipc/proto.h"

struct ember_selection {
	/* The chosen cgroups: ids (0: not there yet) and paths from the v2 root. */
	uint64_t cgroup_ids[EMBER_SELECT_MAX_CGROUPS];
	struct ember_cgroup_path cgroup_paths[EMBER_SELECT_MAX_CGROUPS];
	size_t ncgroups;
	char root[128]; /* where the v2 hierarchy is mounted */
	char text[EMBER_SELECTION_LEN];
	char title[EMBER_TITLE_LEN];
	char service[EMBER_TITLE_LEN];
};

/*
 * Finds and adds one cgroup, and notes it (a unit also gives the title and service.name). kind:
 * "cgroup" (a path from the v2 root or under /sys/fs/cgroup), "unit" ("nginx", "nginx.service"),
 * "container" (an id, or a unique prefix of 4 hex digits or more) or "pod" (a pod's uid).
 * Returns 0; -EINVAL for an argument of the wrong form; another negative errno after saying
 * what to do.
 */
int ember_select_cgroup(struct ember_selection *s, const char *kind, const char *arg);

/* Looks up the ids of chosen cgroups not found before. Returns how many are still missing. */
size_t ember_select_ids(struct ember_selection *s);

/* Adds "WHAT ARG" to the text; the first title and service given are kept (NULL: none). */
void ember_select_note(struct ember_selection *s, const char *what, const char *arg,
                       const char *title, const char *service);

#endif
