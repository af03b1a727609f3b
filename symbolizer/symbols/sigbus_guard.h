/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files that shrink while they are mapped. libelf maps every binary and debug
 * file it reads; when such a file is truncated afterwards (a build rewriting
 * its output in place, a package upgrade, a file system that fails a page
 * in), touching a page past its new end raises SIGBUS, which would kill the
 * symbolizer and every profile in progress. Nothing a profiled process or
 * another user does with a file may do that.
 *
 * The guard's SIGBUS handler puts a page of zeros, read-only, where the
 * faulting page was, and notes its address; the parse that touched it reads
 * zeros (every parser takes hostile bytes) and carries on. The object cache
 * then drops the objects whose mapped images hold a noted address, so they
 * are read again from the file as it is now. Only faults on an address
 * (BUS_ADRERR, a mapping past its file's end or a failed page-in) are
 * answered; any other SIGBUS (hardware memory errors) still ends the process.
 *
 * The handler's record is process-wide state: a signal handler has no other.
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_SIGBUS_GUARD_H
#define EMBER_SYMBOLIZER_SYMBOLS_SIGBUS_GUARD_H

#include <stddef.h>
#include <stdint.h>

/* Pages remembered between two reads of ember_sigbus_guard_faults. */
#define EMBER_SIGBUS_GUARD_PAGES 64

/* Installs the handler (before the sandbox: rt_sigaction is not allowed in it). 0 or -errno. */
int ember_sigbus_guard_install(void);

/* Pages replaced so far. */
uint64_t ember_sigbus_guard_count(void);

/*
 * The pages replaced since *seen (a count from an earlier call, 0 at first),
 * at most n of them into pages; *seen is moved on. Returns how many were
 * copied, or SIZE_MAX when more were replaced than are remembered (the
 * caller treats every mapped file as changed).
 */
size_t ember_sigbus_guard_faults(uint64_t *seen, uintptr_t *pages, size_t n);

#endif
