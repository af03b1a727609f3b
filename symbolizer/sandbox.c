// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp/caps.h"
#include "seccomp/landlock.h"
#include "seccomp/policy.h"
#include "shared/err.h"
#include "shared/log.h"

static bool any_root_id(void)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0)
		return true;
	return !ru || !eu || !su || !rg || !eg || !sg;
}

int ember_sandbox_drop_privileges(const struct ember_sandbox_opts *o)
{
	uint64_t eff, perm, bnd;
	int err;

	(void)o;
	/* The front end and the collector change the user before they exec the symbolizer. */
	if (any_root_id()) {
		log_error("the symbolizer must not run as root: start it through `ember`");
		return -EPERM;
	}
	err = ember_caps_limit(0);
	if (err == -EPERM)
		/* Started unprivileged: only the service manager can shrink the
		 * bounding set (CapabilityBoundingSet=). Without a capability and
		 * under no_new_privs the bounding set grants nothing. */
		log_debug("the capability bounding set stays as it was given");
	else if (err) {
		log_error_errno(err, "cannot drop capabilities: %m");
		return err;
	}
	/* The drop must be permanent: no capability left, root not regained. */
	if (ember_caps_get(&eff, &perm, &bnd) || eff || perm || setuid(0) == 0) {
		log_error("privileges remain after dropping them");
		return -EPERM;
	}
	return 0;
}

static int set_limit(int resource, uint64_t value)
{
	struct rlimit rl = {(rlim_t)value, (rlim_t)value};

	return setrlimit(resource, &rl) < 0 ? neg_errno() : 0;
}

static int set_limits(const struct ember_sandbox_opts *o)
{
	int err;

	/* Beyond the size limit a write fails with EFBIG instead of killing. */
	signal(SIGXFSZ, SIG_IGN);
	if ((err = set_limit(RLIMIT_CORE, 0)) ||
	    (err = set_limit(RLIMIT_FSIZE, o->max_file_bytes ? o->max_file_bytes
	                                                     : EMBER_SANDBOX_MAX_FILE_BYTES)) ||
	    (err = set_limit(RLIMIT_NOFILE,
	                     o->max_open_files ? o->max_open_files : EMBER_SANDBOX_MAX_OPEN_FILES)))
		return err;
	/* RLIMIT_NPROC counts every task of the user: 0 stops new threads too. */
	return o->threads_later ? 0 : set_limit(RLIMIT_NPROC, 0);
}

int ember_sandbox_enter(const struct ember_sandbox_opts *o)
{
	bool dir = o->output_dir_fd > 0;
	struct ember_landlock_opts ll = {
	    .output_dir_fd = dir ? o->output_dir_fd : -1,
	    .tcp_port = o->network ? o->tcp_port : -1,
	};
	struct ember_policy_param params[] = {
	    {"pid", (uint64_t)getpid()},
	    {"output_dir_fd", dir ? (uint64_t)o->output_dir_fd : UINT64_MAX},
	};
	uint32_t groups = o->reader ? EMBER_POLICY_READER
	                            : EMBER_POLICY_BASE | (dir ? EMBER_POLICY_OUTPUT_DIR : 0) |
	                                  (o->network ? EMBER_POLICY_NETWORK : 0);
	int err = ember_sandbox_drop_privileges(o), abi;
	unsigned int uid = (unsigned int)getuid();

	if (err)
		return err;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
	    (o->die_with_parent && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)) {
		err = neg_errno();
		log_error_errno(err, "cannot set no_new_privs: %m");
		return err;
	}
	err = set_limits(o);
	if (err) {
		log_error_errno(err, "cannot set resource limits: %m");
		return err;
	}
	abi = ember_landlock_restrict(&ll);
	if (abi < 0) {
		log_error_errno(abi, "cannot install the Landlock ruleset: %m");
		return abi;
	}
	if (abi == 0)
		log_warn("this kernel has no Landlock (Linux 5.13+ with landlock in lsm=): "
		         "file access is confined by the system-call filter alone");
	err = ember_policy_load(&ember_symbolizer_policy, groups, params, ARRAY_SIZE(params));
	if (err)
		return err;
	log_debug("sandbox entered: uid %u, Landlock ABI %d, %zu system calls allowed", uid, abi,
	          ember_policy_count(&ember_symbolizer_policy, groups));
	return 0;
}

void ember_sandbox_test_violation(void)
{
#ifdef EMBER_TEST_HOOKS
	const char *what = getenv("EMBER_TEST_SANDBOX_VIOLATION");
	int r = 0;

	if (!what || !*what)
		return;
	log_warn("test hook: attempting forbidden call '%s' in the sandbox", what);
	if (!strcmp(what, "open"))
		r = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	else if (!strcmp(what, "execve"))
		r = execl("/bin/true", "true", (char *)NULL);
	else if (!strcmp(what, "ptrace"))
		r = (int)syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, getppid(), 0, 0);
	else if (!strcmp(what, "netlink"))
		r = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);
	else if (!strcmp(what, "mmap-exec"))
		r = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) ==
		            MAP_FAILED
		        ? -1
		        : 0;
	else if (!strcmp(what, "heap-overflow")) {
		/* Not a system call: a read past a block, which a sanitized build reports from
		 * inside the sandbox (test_security.py: the report fails the test it is in). */
		volatile size_t n = 8;
		volatile char *p = malloc(n);

		r = p ? p[n] : 0;
		free((void *)p);
	}
	log_error_errno(errno, "test hook: forbidden call '%s' returned %d (%m) instead of killing",
	                what, r);
	_exit(99);
#endif
}
