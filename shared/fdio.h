/* SPDX-License-Identifier: Apache-2.0 */
/* Reading whole files from descriptors, with a size cap (the symbolizer reads only descriptors). */
#ifndef EMBER_SHARED_FDIO_H
#define EMBER_SHARED_FDIO_H

#include <stddef.h>

/*
 * Reads everything from offset 0 of fd (pread, so a descriptor can be read
 * again) into a malloc'd buffer. Returns the length, -E2BIG when the file
 * holds more than max bytes, or another negative errno.
 */
long ember_read_whole_fd(int fd, size_t max, char **out);

#endif
