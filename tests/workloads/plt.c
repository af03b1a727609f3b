// SPDX-License-Identifier: Apache-2.0
/*
 * Calls a libc function through the PLT as fast as it can, for
 * tests/integration/test_symbols.py: a good share of the samples land in the
 * PLT stub (labs@plt), which the linker puts right after _init, a symbol
 * without a size. Usage: plt [SECONDS]
 */
#include <stdlib.h>
#include <time.h>

volatile size_t plt_sink;

__attribute__((noinline)) void call_through_plt(void)
{
	for (int i = 0; i < 100000; i++)
		plt_sink += (size_t)labs(i - 50000);
}

int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 10);

	while (time(NULL) < end)
		call_through_plt();
	return 0;
}
