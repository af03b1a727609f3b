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
 * A number in a small text file the kernel writes (/proc, /sys): the first
 * after `key` (NULL: from the start), past `skip` others (/proc/self/statm's
 * resident pages: skip 1). Returns 0 or a negative errno.
 */
int ember_read_proc_number(const char *path, const char *key, int skip, long long *out);

/* This process's resident bytes (/proc/self/statm); 0 when it cannot be read. */
uint64_t ember_self_rss_bytes(void);

/* The memory the kernel charges to this process's descriptor fd (a BPF map's "memlock:"
 * in /proc/self/fdinfo); 0 when it tells none. */
uint64_t ember_fd_memlock(int fd);

#endif
