/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Capability sets, by the kernel's numbers (CAP_* in linux/capability.h).
 * Both processes shed what they do not use once start-up is over: the
 * collector keeps a handful, the symbolizer none.
 */
#ifndef EMBER_SECCOMP_CAPS_H
#define EMBER_SECCOMP_CAPS_H

#include <linux/capability.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define EMBER_CAP(n) (1ull << (n))

/* Whether set holds capability cap (CAP_*). */
static inline bool ember_caps_has(uint64_t set, int cap)
{
	return (set >> cap) & 1;
}

/*
 * Reduces the effective, permitted and bounding sets to `keep` and clears
 * the inheritable and ambient sets. Dropping from the bounding set needs
 * CAP_SETPCAP in the permitted set (it is raised for that and then dropped
 * unless kept). Returns 0; -EPERM when the bounding set still holds more
 * than `keep` (every other set is reduced all the same); another negative
 * errno when capset fails.
 */
int ember_caps_limit(uint64_t keep);

/*
 * Becomes uid and gid (never 0) for good: no supplementary group, no capability in any set
 * (the bounding set emptied while root could), no_new_privs. Run without root, it stays who
 * it is, with what capabilities it had dropped. Returns 0 or -EPERM.
 */
int ember_caps_become(uid_t uid, gid_t gid);

/* This process's sets. Returns 0 or a negative errno. */
int ember_caps_get(uint64_t *effective, uint64_t *permitted, uint64_t *bounding);
/* This process's effective set (empty when it cannot be read). */
uint64_t ember_caps_effective(void);

#endif
