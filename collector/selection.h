/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What to sample besides -p: cgroup v2 subtrees, given by path or by a
 * systemd unit's name, a container's id or a Kubernetes pod's uid; and the
 * words the profile carries about the choice (the selection, a title, a
 * default service.name).
 *
 * Names are not searched here: the tree is named by anyone with a delegated
 * subtree (a rootless container, a user's systemd), so the search runs in
 * `ember-symbolizer find-cgroup` (symbolizer/process/cgroup_find.h), without
 * privilege, on the v2 root this process opened for it. What it prints back
 * is checked as a --cgroup path would be, and only stat'ed.
 */
#ifndef EMBER_COLLECTOR_SELECTION_H
#define EMBER_COLLECTOR_SELECTION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/records.h"
#include "ipc/proto.h"

struct ember_selection {
	/* The chosen cgroups: ids (0: not there yet) and paths from the v2 root. */
	uint64_t cgroup_ids[EMBER_SELECT_MAX_CGROUPS];
	struct ember_cgroup_path cgroup_paths[EMBER_SELECT_MAX_CGROUPS];
	size_t ncgroups;
	/* Chosen by name ("unit", "container", "pod"), found by ember_select_find. */
	const char *named[EMBER_SELECT_MAX_CGROUPS][2];
	size_t nnamed;
	char root[128]; /* where the v2 hierarchy is mounted */
	char text[EMBER_SELECTION_LEN];
	char title[EMBER_TITLE_LEN];
	char service[EMBER_TITLE_LEN];
};

/*
 * kind "cgroup": adds arg (a path from the v2 root or under /sys/fs/cgroup); "unit", "container",
 * "pod": keeps arg (which must outlive s) for ember_select_find. Returns 0; -EINVAL for a
 * path of the wrong form; another negative errno after saying what to do.
 */
int ember_select_cgroup(struct ember_selection *s, const char *kind, const char *arg);

/*
 * Finds the cgroups chosen by name, each by `ember-symbolizer find-cgroup` run as uid:gid,
 * and adds them (a unit also gives the title and service.name). Returns 0; -EINVAL for a
 * name of the wrong form; another negative errno. Every error has been said.
 */
int ember_select_find(struct ember_selection *s, uid_t uid, gid_t gid);

/* Looks up the ids of chosen cgroups not found before. Returns how many are still missing. */
size_t ember_select_ids(struct ember_selection *s);

/* Adds "WHAT ARG" to the text; the first title and service given are kept (NULL: none). */
void ember_select_note(struct ember_selection *s, const char *what, const char *arg,
                       const char *title, const char *service);

#endif
