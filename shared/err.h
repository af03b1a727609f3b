/* SPDX-License-Identifier: Apache-2.0 */
/* Conventions: functions return 0 (or a count) on success and a negative errno on failure. */
#ifndef EMBER_SHARED_ERR_H
#define EMBER_SHARED_ERR_H

#include <errno.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Exit codes of every ember program (ARCHITECTURE.md, output contracts). */
enum ember_exit {
	EMBER_EXIT_OK = 0,
	EMBER_EXIT_FAILURE = 1,
	EMBER_EXIT_USAGE = 2,
};

/* The negative errno of the last failed libc call. */
static inline int neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

#endif
