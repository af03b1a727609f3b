/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading whole files from descriptors, with a size cap: the symbolizer's one
 * whole-file reader (it reads only descriptors). The collector reads no whole
 * file and does not link this (its numbers from /proc: proc_number.h).
 */
#ifndef EMBER_SHARED_FDIO_H
#define EMBER_SHARED_FDIO_H

#include <stddef.h>

/*
 * Reads everything in fd into a malloc'd buffer: from offset 0 (pread, so a
 * descriptor can be read again), or from where it stands for a pipe.
 * Returns the length; -EFBIG when there are more than max bytes (checked
 * before reading for a regular file, which says its size); or another
 * negative errno.
 */
long ember_read_whole_fd(int fd, size_t max, char **out);

#endif
