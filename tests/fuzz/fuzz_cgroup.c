// SPDX-License-Identifier: Apache-2.0
/* /proc/PID/cgroup text of a profiled host -> container id. */
#include <stdint.h>
#include <string.h>

#include "symbolizer/process/container.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[EMBER_CONTAINER_ID_LEN + 1];

	if (ember_container_id_from_cgroup((const char *)data, size, id) == 1 &&
	    strlen(id) != EMBER_CONTAINER_ID_LEN)
		__builtin_trap();
	return 0;
}
