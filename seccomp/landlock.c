// SPDX-License-Identifier: Apache-2.0
#include "seccomp/landlock.h"

#include <errno.h>
#include <linux/landlock.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shared/err.h"

/* Debian 12's headers stop at ABI 2; the kernel may offer more. */
#define FS_ABI1             ((1ull << 13) - 1) /* EXECUTE .. MAKE_SYM */
#define FS_REFER            (1ull << 13)       /* ABI 2 */
#define FS_TRUNCATE         (1ull << 14)       /* ABI 3 */
#define FS_IOCTL_DEV        (1ull << 15)       /* ABI 5 */
#define NET_BIND_TCP        (1ull << 0)        /* ABI 4 */
#define NET_CONNECT_TCP     (1ull << 1)
#define SCOPE_ABSTRACT_UNIX (1ull << 0) /* ABI 6 */
#define SCOPE_SIGNAL        (1ull << 1)
#define RULE_PATH_BENEATH   1
#define RULE_NET_PORT       2

#define FS_WRITE_FILE  (1ull << 1)
#define FS_READ_DIR    (1ull << 3)
#define FS_REMOVE_FILE (1ull << 5)
#define FS_MAKE_REG    (1ull << 8)

struct ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;             /* ABI 6 */
};

struct path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

int ember_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	return abi > 0 ? (int)abi : 0;
}

static int add_rules(int ruleset, int abi, const struct ember_landlock_opts *o)
{
	if (o->output_dir_fd >= 0) {
		struct path_beneath_attr dir = {
		    .allowed_access = (FS_MAKE_REG | FS_WRITE_FILE | FS_REMOVE_FILE | FS_READ_DIR |
		                       (abi >= 3 ? FS_TRUNCATE : 0)),
		    .parent_fd = o->output_dir_fd,
		};

		if (syscall(SYS_landlock_add_rule, ruleset, RULE_PATH_BENEATH, &dir, 0) < 0)
			return neg_errno();
	}
	if (abi >= 4 && o->tcp_port > 0) {
		struct net_port_attr port = {NET_CONNECT_TCP, (uint64_t)o->tcp_port};

		if (syscall(SYS_landlock_add_rule, ruleset, RULE_NET_PORT, &port, 0) < 0)
			return neg_errno();
	}
	return 0;
}

int ember_landlock_restrict(const struct ember_landlock_opts *o)
{
	int abi = ember_landlock_abi(), ruleset, err;
	struct ruleset_attr attr = {0};
	size_t size = sizeof(attr.handled_access_fs);

	if (abi <= 0)
		return 0;
	attr.handled_access_fs = FS_ABI1 | (abi >= 2 ? FS_REFER : 0) |
	                         (abi >= 3 ? FS_TRUNCATE : 0) | (abi >= 5 ? FS_IOCTL_DEV : 0);
	if (abi >= 4) {
		/* Port 0 in the options means any port: leave TCP connect unhandled. */
		attr.handled_access_net = NET_BIND_TCP | (o->tcp_port == 0 ? 0 : NET_CONNECT_TCP);
		size = offsetof(struct ruleset_attr, scoped);
	}
	if (abi >= 6) {
		attr.scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (ruleset < 0)
		return neg_errno();
	err = add_rules(ruleset, abi, o);
	if (!err && syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		err = neg_errno();
	close(ruleset);
	return err ? err : abi;
}
