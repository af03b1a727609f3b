// SPDX-License-Identifier: Apache-2.0
#include "sandbox.h"

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "shared/err.h"
#include "shared/log.h"

int ember_sandbox_drop_privileges(const struct ember_sandbox_opts *o)
{
	if (geteuid() == 0 || getuid() == 0) {
		if (o->uid == 0) {
			log_error("refusing to run the symbolizer as root: configure a user");
			return -EPERM;
		}
		/* Groups first: after setuid we could no longer change them. */
		if (setgroups(1, &o->gid) < 0 || setresgid(o->gid, o->gid, o->gid) < 0 ||
		    setresuid(o->uid, o->uid, o->uid) < 0) {
			int err = neg_errno();

			log_error("cannot become uid %u gid %u: %s", (unsigned)o->uid,
				  (unsigned)o->gid, strerror(-err));
			return err;
		}
		/* The drop must be permanent: regaining root has to fail. */
		if (setuid(0) == 0 || seteuid(0) == 0) {
			log_error("privileges could be regained after dropping them");
			return -EPERM;
		}
	}
	if (geteuid() == 0 || getuid() == 0 || getegid() == 0) {
		log_error("the symbolizer still runs as root");
		return -EPERM;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return neg_errno();
	/* Changing credentials cleared the parent-death signal: set it again. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return neg_errno();
	return 0;
}
