/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroup v2 subtrees chosen (`--cgroup`, or found by the front end from
 * `--unit`, `--container`, `--pod`): paths from the hierarchy's root, and
 * their ids once the cgroups exist. A cgroup's id is its inode number
 * (kernfs), the number the sampler compares; a chosen path that does not
 * exist yet has id 0 until it does (select.bpf.h then learns it as the
 * kernel makes it).
 */
#ifndef EMBER_COLLECTOR_SELECTION_H
#define EMBER_COLLECTOR_SELECTION_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/records.h"

struct ember_selection {
	const char *root; /* where the v2 hierarchy is mounted */
	const struct ember_cgroup_path *paths;
	uint64_t ids[EMBER_SELECT_MAX_CGROUPS]; /* 0: not there yet */
	size_t ncgroups;
};

/* The id of chosen cgroup i, looked up if not found before; 0 while it does not exist. */
uint64_t ember_select_id(struct ember_selection *s, size_t i);

#endif
