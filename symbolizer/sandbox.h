/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer's confinement. It starts as its own user (the front end or
 * the collector changed it before the exec; any root id is refused), with
 * what it needs open (control socket, output files or directory), resolves
 * the export endpoint's address, then enters its sandbox before it reads the
 * first record, in this order:
 *
 *   1. no uid or gid 0 among its ids;
 *   2. every capability dropped, the bounding set included where it can;
 *   3. no_new_privs; not dumpable;
 *   4. rlimits: no core files, output files bounded in size, open files
 *      bounded, no new processes (or threads) once its threads exist;
 *   5. Landlock: no filesystem access by path (but creating its output files
 *      beneath the output directory), no TCP but to the export port, no
 *      signals or abstract sockets outside itself;
 *   6. seccomp: the allow-list of seccomp/symbolizer.policy, every thread,
 *      anything else kills the process.
 *
 * Other programs of the symbolizer side (report, diff, top) use the same
 * entry after they opened their input and output files.
 */
#ifndef EMBER_SYMBOLIZER_SANDBOX_H
#define EMBER_SYMBOLIZER_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define EMBER_SANDBOX_MAX_FILE_BYTES (1ull << 30)
#define EMBER_SANDBOX_MAX_OPEN_FILES 1024

struct ember_sandbox_opts {
	/* > 0: files may be created, renamed and removed beneath this directory
	 * (daemon outputs); 0 or -1: no file can be named at all. */
	int output_dir_fd;
	/* Network export is configured: TCP to tcp_port (0: any port) and the
	 * network rules of the policy. */
	bool network;
	int tcp_port;
	/* Threads will be started after entering: RLIMIT_NPROC is left alone
	 * (seccomp still refuses new processes). */
	bool threads_later;
	uint64_t max_file_bytes;     /* RLIMIT_FSIZE; 0: EMBER_SANDBOX_MAX_FILE_BYTES */
	unsigned int max_open_files; /* RLIMIT_NOFILE; 0: EMBER_SANDBOX_MAX_OPEN_FILES */
	bool die_with_parent;        /* SIGKILL when the parent (ember record) dies */
	/* A reader process (reader.h): only the "reader" group of the policy, no files by path,
	 * no network. */
	bool reader;
};

/* Steps 1 and 2 only: for a daemon before it connects. Idempotent. Returns 0 or a negative
 * errno (logged). */
int ember_sandbox_drop_privileges(const struct ember_sandbox_opts *o);

/* All the steps; on failure the caller must exit. Returns 0 or a negative errno (logged). */
int ember_sandbox_enter(const struct ember_sandbox_opts *o);

/*
 * Test builds only (EMBER_TEST_HOOKS): if EMBER_TEST_SANDBOX_VIOLATION names
 * a forbidden call (open, execve, ptrace, netlink, mmap-exec), make it; the
 * sandbox must kill the process. Does nothing otherwise.
 */
void ember_sandbox_test_violation(void);

#endif
