// SPDX-License-Identifier: Apache-2.0
#include "seccomp/caps.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shared/err.h"

struct capsets {
	uint64_t effective, permitted, inheritable;
};

static int caps_read(struct capsets *s)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, d) < 0)
		return neg_errno();
	s->effective = d[0].effective | (uint64_t)d[1].effective << 32;
	s->permitted = d[0].permitted | (uint64_t)d[1].permitted << 32;
	s->inheritable = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
	return 0;
}

static int caps_write(const struct capsets *s)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {
	    {(uint32_t)s->effective, (uint32_t)s->permitted, (uint32_t)s->inheritable},
	    {(uint32_t)(s->effective >> 32), (uint32_t)(s->permitted >> 32),
	     (uint32_t)(s->inheritable >> 32)},
	};

	return syscall(SYS_capset, &hdr, d) < 0 ? neg_errno() : 0;
}

static uint64_t bounding_set(void)
{
	uint64_t set = 0;

	/* PR_CAPBSET_READ fails with EINVAL past the kernel's last capability. */
	for (int cap = 0; cap < 64; cap++) {
		int r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);

		if (r < 0)
			break;
		if (r)
			set |= EMBER_CAP(cap);
	}
	return set;
}

int ember_caps_get(uint64_t *effective, uint64_t *permitted, uint64_t *bounding)
{
	struct capsets s;
	int err = caps_read(&s);

	if (err)
		return err;
	*effective = s.effective;
	*permitted = s.permitted;
	*bounding = bounding_set();
	return 0;
}

int ember_caps_limit(uint64_t keep)
{
	struct capsets s;
	uint64_t drop;
	int err = caps_read(&s), bounding_err = 0;

	if (err)
		return err;
	/* CAP_SETPCAP must be effective to shrink the bounding set. */
	if ((s.permitted & EMBER_CAP(CAP_SETPCAP)) && !(s.effective & EMBER_CAP(CAP_SETPCAP))) {
		s.effective |= EMBER_CAP(CAP_SETPCAP);
		err = caps_write(&s);
		if (err)
			return err;
	}
	drop = bounding_set() & ~keep;
	for (int cap = 0; cap < 64; cap++)
		if ((drop & EMBER_CAP(cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			bounding_err = -EPERM;
	/* Older kernels lack ambient capabilities: nothing to clear there. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return neg_errno();
	s.permitted &= keep;
	s.effective = s.permitted;
	s.inheritable = 0;
	err = caps_write(&s);
	return err ? err : bounding_err;
}

uint64_t ember_caps_effective(void)
{
	uint64_t effective = 0, permitted, bounding;

	return ember_caps_get(&effective, &permitted, &bounding) ? 0 : effective;
}

int ember_caps_become(uid_t uid, gid_t gid)
{
	const uint64_t ids = EMBER_CAP(CAP_SETUID) | EMBER_CAP(CAP_SETGID);
	bool root = geteuid() == 0;
	uint64_t eff, prm, bnd;
	uid_t r, e, s;
	int err;

	/* The bounding set first, while CAP_SETPCAP is there; the ids need only their two. */
	if (root && (ember_caps_limit(ids | EMBER_CAP(CAP_SETPCAP)) ||
	             prctl(PR_CAPBSET_DROP, CAP_SETUID, 0, 0, 0) ||
	             prctl(PR_CAPBSET_DROP, CAP_SETGID, 0, 0, 0) ||
	             prctl(PR_CAPBSET_DROP, CAP_SETPCAP, 0, 0, 0) || setgroups(0, NULL) ||
	             setresgid(gid, gid, gid) || setresuid(uid, uid, uid)))
		return -EPERM;
	/* -EPERM: a user who never was root cannot shrink its bounding set, and need not. */
	err = ember_caps_limit(0);
	if ((err && err != -EPERM) || ember_caps_get(&eff, &prm, &bnd) || eff || prm ||
	    (root && bnd) || getresuid(&r, &e, &s) || !r || !e || !s)
		return -EPERM;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ? -EPERM : 0;
}
