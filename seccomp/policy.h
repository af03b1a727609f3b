/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System-call allow-lists. Each policy is a readable table in seccomp/NAME.policy
 * (one system call per line, with the reason it is allowed) that the build
 * turns into a C table (seccomp/policy_gen.c). The loader here installs one
 * as a seccomp filter: anything not listed kills the whole process, and the
 * filter covers every thread (TSYNC).
 */
#ifndef EMBER_SECCOMP_POLICY_H
#define EMBER_SECCOMP_POLICY_H

#include <stddef.h>
#include <stdint.h>

/*
 * Groups of rules, enabled per process and mode. A line of a .policy file
 * names its group in lowercase ("output-dir" is EMBER_POLICY_OUTPUT_DIR).
 */
enum ember_policy_group {
	EMBER_POLICY_BASE = 1u << 0,       /* always */
	EMBER_POLICY_OUTPUT_DIR = 1u << 1, /* symbolizer daemon: files rotated in a directory */
	EMBER_POLICY_NETWORK = 1u << 2,    /* symbolizer: network export is configured */
	EMBER_POLICY_RECORD = 1u << 3,     /* collector: `ember record` with its child */
	EMBER_POLICY_DAEMON = 1u << 4,     /* collector: accepting symbolizers on a socket */
	EMBER_POLICY_WORKER = 1u << 5,     /* collector's broker workers: opens that may wait */
	EMBER_POLICY_READER = 1u << 6,     /* symbolizer's readers: reads that may wait */
	EMBER_POLICY_SANITIZER = 1u << 7,  /* sanitized builds only: seccomp/sanitizer.policy */
};

enum ember_policy_action {
	EMBER_RULE_ALLOW = 0,
	EMBER_RULE_ERRNO, /* fail with ->errno_value instead of killing */
};

enum ember_policy_op {
	EMBER_CMP_EQ = 1,
	EMBER_CMP_NE,
	EMBER_CMP_LT,
	EMBER_CMP_LE,
	EMBER_CMP_GT,
	EMBER_CMP_GE,
	EMBER_CMP_MASKED_EQ, /* (arg & mask) == value */
};

#define EMBER_POLICY_MAX_CONDS 4

struct ember_policy_cond {
	uint8_t arg; /* 0..5 */
	uint8_t op;  /* enum ember_policy_op */
	uint64_t mask;
	uint64_t value;
	const char *param; /* non-NULL: value comes from a run-time parameter of this name */
};

struct ember_policy_rule {
	const char *syscall;
	int nr; /* SCMP_SYS(name): negative when the syscall does not exist on this architecture */
	uint32_t group;
	uint8_t action;
	int errno_value;
	uint8_t nconds;
	struct ember_policy_cond conds[EMBER_POLICY_MAX_CONDS];
	const char *why;
	unsigned int line; /* in the .policy file, for messages */
};

struct ember_policy {
	const char *name;
	const struct ember_policy_rule *rules;
	size_t nrules;
};

/* A value only known at run time ("$output_dir_fd" in a .policy file). */
struct ember_policy_param {
	const char *name;
	uint64_t value;
};

extern const struct ember_policy ember_symbolizer_policy;
extern const struct ember_policy ember_collector_policy;

/*
 * Installs the rules of the given groups as a seccomp filter on every thread
 * of the process: default action KILL_PROCESS, no_new_privs set. A sanitized
 * build (EMBER_SANITIZERS) adds the sanitizer group to every filter. A rule that
 * refers to a parameter not given fails the load (nothing is installed).
 * Returns 0 or a negative errno.
 */
int ember_policy_load(const struct ember_policy *p, uint32_t groups,
                      const struct ember_policy_param *params, size_t nparams);

/* The number of distinct system calls the given groups allow (errno rules not counted). */
size_t ember_policy_count(const struct ember_policy *p, uint32_t groups);

/* Whether the groups have any rule for the syscall (by name), conditional or not. */
int ember_policy_find(const struct ember_policy *p, uint32_t groups, const char *syscall,
                      const struct ember_policy_rule **out);

#endif
