/* SPDX-License-Identifier: Apache-2.0 */
/* The main() every Check program shares: run one suite, exit non-zero on failure. */
#ifndef EMBER_TESTS_CHECK_MAIN_H
#define EMBER_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

#define EMBER_CHECK_MAIN(suite_fn)                                                                 \
	int main(void)                                                                             \
	{                                                                                          \
		SRunner *sr = srunner_create(suite_fn());                                          \
		int failed;                                                                        \
		srunner_run_all(sr, CK_NORMAL);                                                    \
		failed = srunner_ntests_failed(sr);                                                \
		srunner_free(sr);                                                                  \
		return failed ? EXIT_FAILURE : EXIT_SUCCESS;                                       \
	}

#endif
