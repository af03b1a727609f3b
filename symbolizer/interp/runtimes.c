// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/runtimes.h"

#include <errno.h>
#include <string.h>

#define RUNTIME_NAME(id, number, name, kind) [number] = name,
static const char *const names[EMBER_RUNTIME_MAX] = {EMBER_RUNTIMES(RUNTIME_NAME)};
#undef RUNTIME_NAME

const char *ember_interp_name(uint32_t runtime)
{
	return runtime < EMBER_RUNTIME_MAX ? names[runtime] : NULL;
}

int ember_interp_parse_list(const char *list, uint32_t *mask)
{
	const char *p = list;

	*mask = 0;
	if (!strcmp(list, "none"))
		return 0;
	if (!strcmp(list, "all")) {
		*mask = EMBER_RUNTIMES_ALL;
		return 0;
	}
	for (;;) {
		size_t len = strcspn(p, ",");
		uint32_t rt = 1;

		while (rt < EMBER_RUNTIME_MAX &&
		       (!names[rt] || strlen(names[rt]) != len || strncmp(p, names[rt], len)))
			rt++;
		if (rt == EMBER_RUNTIME_MAX)
			return -EINVAL;
		*mask |= 1u << rt;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}
