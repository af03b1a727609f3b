/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scope-bound cleanup (as systemd's fd-util.h and the kernel's
 * linux/cleanup.h): a variable declared _cleanup_close_ is closed, one
 * declared _cleanup_free_ freed, when it goes out of scope, on every return
 * path. TAKE_FD and TAKE_PTR hand the value on and leave -1 or NULL behind,
 * so that nothing is released twice:
 *
 *	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
 *	if (fd < 0)
 *		return neg_errno();
 *	if (fstat(fd, &st))
 *		return neg_errno();     // fd is closed here
 *	*out = TAKE_FD(fd);             // and not here
 *	return 0;
 *
 * In the collector a descriptor leaked on an error path stays open in the
 * trusted process: declare descriptors this way where a function has more
 * than one way out.
 */
#ifndef EMBER_SHARED_CLEANUP_H
#define EMBER_SHARED_CLEANUP_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(fn) __attribute__((cleanup(fn)))

/* close() keeps errno: the cleanup runs after the code that set it. */
static inline void ember_closep(const int *fd)
{
	if (*fd >= 0) {
		int saved = errno;

		close(*fd);
		errno = saved;
	}
}

/* systemd's safe_close: closes fd if it is one; returns -1 to store in its place. */
static inline int ember_safe_close(int fd)
{
	ember_closep(&fd);
	return -1;
}

static inline void ember_freep(void *p)
{
	free(*(void **)p);
}

static inline void ember_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_close_  _cleanup_(ember_closep)
#define _cleanup_free_   _cleanup_(ember_freep)
#define _cleanup_fclose_ _cleanup_(ember_fclosep)

/* The descriptor in fd; fd becomes -1. */
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd_ = (fd);                                                                   \
		(fd) = -1;                                                                         \
		_fd_;                                                                              \
	})

/* The pointer in p; p becomes NULL. */
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p_ = (p);                                                           \
		(p) = NULL;                                                                        \
		_p_;                                                                               \
	})

#endif
