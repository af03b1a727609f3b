/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Numbers the kernel writes in small text files (/proc, /sys): the
 * collector's own memory, a BPF map's, a sysctl the front end checks.
 */
#ifndef EMBER_SHARED_PROC_NUMBER_H
#define EMBER_SHARED_PROC_NUMBER_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A number in a small text file the kernel writes (/proc, /sys): the first
 * after `key` (NULL: from the start), past `skip` others (/proc/self/statm's
 * resident pages: skip 1). Returns 0 or a negative errno.
 */
int ember_read_proc_number(const char *path, const char *key, int skip, long long *out);

/*
 * The PID process pid knows itself by: the last of its status's NSpid (its own PID
 * namespace's); pid itself when the kernel writes no NSpid. Returns 0 or a negative errno.
 */
int ember_proc_nspid(uint32_t pid, uint32_t *out);

/* This process's resident bytes (/proc/self/statm); 0 when it cannot be read. */
uint64_t ember_self_rss_bytes(void);

/* The memory the kernel charges to this process's descriptor fd (a BPF map's "memlock:"
 * in /proc/self/fdinfo); 0 when it tells none. */
uint64_t ember_fd_memlock(int fd);

/* A CPU list as /sys/devices/system/cpu/online writes it ("0-3,5,7-8"), read from the
 * start of fd (held open: the collector's check each second walks no path) into one flag
 * a CPU; CPUs from ncpus on are left out. Returns how many CPUs it set, -EINVAL for a
 * malformed list, or a negative errno. */
int ember_read_cpu_list(int fd, bool *online, int ncpus);

#endif
