// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/process/container.h"

#include <stdbool.h>
#include <string.h>

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* A character that may separate an id from the rest of a path component. */
static bool id_prefix_end(char c)
{
	return c == '/' || c == '-' || c == ':';
}

static bool id_suffix_start(char c)
{
	return c == '/' || c == '.';
}

/* The last 64-hex-digit token of the cgroup path path[0..len), or NULL. */
static const char *find_id(const char *path, size_t len)
{
	const char *found = NULL;
	size_t i = 0;

	while (i < len) {
		size_t start = i;

		while (i < len && is_hex(path[i]))
			i++;
		if (i - start == EMBER_CONTAINER_ID_LEN &&
		    (start == 0 || id_prefix_end(path[start - 1])) &&
		    (i == len || id_suffix_start(path[i])))
			found = path + start;
		if (i == start)
			i++;
	}
	return found;
}

int ember_container_id_from_cgroup(const char *text, size_t len,
                                   char out[EMBER_CONTAINER_ID_LEN + 1])
{
	const char *end = text + len;

	out[0] = '\0';
	while (text < end) {
		const char *eol = memchr(text, '\n', (size_t)(end - text));
		const char *line_end = eol ? eol : end;
		/* "hierarchy-id:controllers:path": the path follows the second colon. */
		const char *c1 = memchr(text, ':', (size_t)(line_end - text));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(line_end - c1 - 1)) : NULL;

		if (c2) {
			const char *id = find_id(c2 + 1, (size_t)(line_end - c2 - 1));

			if (id) {
				memcpy(out, id, EMBER_CONTAINER_ID_LEN);
				out[EMBER_CONTAINER_ID_LEN] = '\0';
				return 1;
			}
		}
		text = line_end + (eol ? 1 : 0);
	}
	return 0;
}
