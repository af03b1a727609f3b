/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading whole files from descriptors, with a size cap: the one whole-file
 * reader of both processes (the symbolizer reads only descriptors).
 */
#ifndef EMBER_SHARED_FDIO_H
#define EMBER_SHARED_FDIO_H

#include <stddef.h>
#include <stdint.h>

/*
 * Reads everything in fd into a malloc'd buffer: from offset 0 (pread, so a
 * descriptor can be read again), or from where it stands for a pipe.
 * Returns the length; -EFBIG when there are more than max bytes (checked
 * before reading for a regular file, which says its size); or another
 * negative errno.
 */
long ember_read_whole_fd(int fd, size_t max, char **out);

/*
 * The number after `key` in a small text file the kernel writes about this
 * process (/proc/self/statm with key NULL: its second number, the resident
 * pages; /proc/self/fdinfo/N with "memlock:"). Returns 0 or a negative errno.
 */
int ember_read_proc_number(const char *path, const char *key, uint64_t *out);

#endif
