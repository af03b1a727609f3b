// SPDX-License-Identifier: Apache-2.0
/* /proc/kallsyms text, with module and BPF program names; the same bytes as /sys/kernel/notes. */
#include <stdint.h>

#include "symbolizer/symbols/kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_kallsyms k = {0};
	char hex[129];

	(void)ember_kernel_build_id(data, size, hex, sizeof(hex));
	if (ember_kallsyms_parse((const char *)data, size, &k))
		return 0;
	for (size_t i = 0; i < k.nsyms; i++) {
		const struct ember_ksym *s = ember_kallsyms_lookup(&k, k.syms[i].addr + 1);

		if (s) {
			(void)ember_ksym_name(&k, s);
			(void)ember_ksym_module(&k, s);
		}
	}
	ember_kallsyms_free(&k);
	return 0;
}
