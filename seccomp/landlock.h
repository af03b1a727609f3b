/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer's Landlock ruleset: no filesystem access by path at all,
 * except (in daemon mode) creating and replacing its own output files in one
 * directory; no TCP but to the export endpoint's port; no signals or
 * abstract sockets outside itself. Descriptors opened before are unaffected.
 */
#ifndef EMBER_SECCOMP_LANDLOCK_H
#define EMBER_SECCOMP_LANDLOCK_H

struct ember_landlock_opts {
	int output_dir_fd; /* -1: no directory; else files may be created, written,
	                    * renamed and removed beneath it (nothing else) */
	int tcp_port;      /* -1: no TCP connections; 0: any port; >0: only this port */
};

/* The Landlock ABI version the kernel offers, or 0 without Landlock. */
int ember_landlock_abi(void);

/*
 * Restricts this thread (and its future threads) for good; needs
 * no_new_privs. Returns the ABI version used (>= 1), 0 when the kernel has
 * no Landlock (the caller warns), or a negative errno.
 */
int ember_landlock_restrict(const struct ember_landlock_opts *o);

#endif
