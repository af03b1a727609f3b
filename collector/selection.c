// SPDX-License-Identifier: Apache-2.0
#include "collector/selection.h"

#include <stdio.h>
#include <sys/stat.h>

uint64_t ember_select_id(struct ember_selection *s, size_t i)
{
	char full[128 + EMBER_CGROUP_PATH_LEN];
	struct stat st;

	snprintf(full, sizeof(full), "%s%s", s->root, s->paths[i].path);
	if (!s->ids[i] && !stat(full, &st))
		s->ids[i] = st.st_ino;
	return s->ids[i];
}
