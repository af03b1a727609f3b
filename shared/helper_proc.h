/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helper processes: the collector's broker workers and the symbolizer's
 * readers do what may wait for ever (an open, a read on a file system that
 * stopped answering) in processes of their own, under a deadline their parent
 * keeps. A helper is forked before its parent gives anything up, talks to it
 * over one SOCK_SEQPACKET socket and keeps nothing else of it: its standard
 * descriptors are /dev/null (a helper the kernel cannot kill must not hold a
 * terminal or a pipe open after its parent is gone: `ember record 2>&1 | tee`
 * would wait for it), every other descriptor is closed, and it dies with its
 * parent. Then it confines itself; one that cannot exits, and its parent sees
 * its socket close.
 */
#ifndef EMBER_SHARED_HELPER_PROC_H
#define EMBER_SHARED_HELPER_PROC_H

#include <sys/types.h>

/*
 * Forks a helper that runs confine(ctx) (it exits 1 unless that returns 0) and then
 * serve(sock, ctx), which should not return (the helper exits 0 if it does). Returns 0 with
 * the helper's pid and the parent's end of the socket (close-on-exec), or a negative errno.
 */
int ember_helper_start(int (*confine)(void *ctx), void (*serve)(int sock, void *ctx), void *ctx,
                       pid_t *pid, int *sock);

#endif
