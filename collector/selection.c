// SPDX-License-Identifier: Apache-2.0
#include "collector/selection.h"

#include <stdio.h>
#include <sys/stat.h>

size_t ember_select_ids(struct ember_selection *s)
{
	char full[128 + EMBER_CGROUP_PATH_LEN];
	size_t missing = 0;
	struct stat st;

	for (size_t i = 0; i < s->ncgroups; i++) {
		snprintf(full, sizeof(full), "%s%s", s->root, s->paths[i].path);
		if (!s->ids[i] && !stat(full, &st))
			s->ids[i] = st.st_ino;
		missing += !s->ids[i];
	}
	return missing;
}
