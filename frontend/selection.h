/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What to sample besides every process, as the collector's configuration
 * carries it: the PIDs, cgroup v2 subtrees given by path or found by a
 * systemd unit's name, a container's id or a Kubernetes pod's uid, and the
 * words the profile carries about the choice (the selection, a title, a
 * default service.name).
 *
 * Names are searched in a child that has become the symbolizer's user
 * without any capability (cgroup_find.h): the tree is named by anyone with
 * a delegated subtree. What it finds is checked as a --cgroup path would be.
 */
#ifndef EMBER_FRONTEND_SELECTION_H
#define EMBER_FRONTEND_SELECTION_H

#include <sys/types.h>

#include "frontend/cli.h"
#include "ipc/core_config.h"

/*
 * Fills the selection of cfg (pids, cgroups, selection text, title, service) from what c
 * chose, searching names as uid:gid. Returns 0, or an exit code after saying what is wrong.
 */
int ember_select(const struct ember_cli *c, uid_t uid, gid_t gid, struct ember_core_config *cfg);

/* Adds "WHAT ARG" to the selection text; the first title and service given are kept (NULL:
 * none). */
void ember_select_note(struct ember_core_config *cfg, const char *what, const char *arg,
                       const char *title, const char *service);

#endif
