// SPDX-License-Identifier: Apache-2.0
/*
 * The seccomp policy tables and their loader: what each allow-list may and
 * must not contain, and, in child processes, that a loaded filter lets the
 * allowed calls through and kills the process (SIGSYS) for the others.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "seccomp/policy.h"

#define SYM_ALL  (EMBER_POLICY_BASE | EMBER_POLICY_OUTPUT_DIR | EMBER_POLICY_NETWORK)
#define COLL_ALL (EMBER_POLICY_BASE | EMBER_POLICY_RECORD | EMBER_POLICY_DAEMON)

static const struct ember_policy_rule *rule(const struct ember_policy *p, uint32_t groups,
                                            const char *name)
{
	const struct ember_policy_rule *r = NULL;

	ck_assert_msg(ember_policy_find(p, groups, name, &r) == 0, "%s has no rule for %s", p->name,
	              name);
	return r;
}

static void assert_absent(const struct ember_policy *p, uint32_t groups, const char *name)
{
	ck_assert_msg(ember_policy_find(p, groups, name, NULL) == -ENOENT,
	              "%s allows %s, which it must not", p->name, name);
}

START_TEST(tables_are_well_formed)
{
	const struct ember_policy *pols[] = {&ember_symbolizer_policy, &ember_collector_policy};

	for (size_t i = 0; i < 2; i++) {
		const struct ember_policy *p = pols[i];

		ck_assert_uint_gt(p->nrules, 20);
		for (size_t j = 0; j < p->nrules; j++) {
			const struct ember_policy_rule *r = &p->rules[j];

			ck_assert_msg(r->why && strlen(r->why) >= 8, "%s line %u: no reason given",
			              p->name, r->line);
			ck_assert_msg(r->group, "%s line %u: no group", p->name, r->line);
			ck_assert_int_le(r->nconds, EMBER_POLICY_MAX_CONDS);
			/* Every base call exists on the architecture this runs on. */
			if (r->group == EMBER_POLICY_BASE && strcmp(r->syscall, "fstat"))
				ck_assert_msg(r->nr >= 0, "%s: %s unknown here", p->name,
				              r->syscall);
		}
	}
	printf(
	    "allow-lists: symbolizer %zu system calls (base %zu, + output-dir %zu, + network "
	    "%zu); collector %zu (record %zu, daemon %zu)\n",
	    ember_policy_count(&ember_symbolizer_policy, SYM_ALL),
	    ember_policy_count(&ember_symbolizer_policy, EMBER_POLICY_BASE),
	    ember_policy_count(&ember_symbolizer_policy,
	                       EMBER_POLICY_BASE | EMBER_POLICY_OUTPUT_DIR),
	    ember_policy_count(&ember_symbolizer_policy, EMBER_POLICY_BASE | EMBER_POLICY_NETWORK),
	    ember_policy_count(&ember_collector_policy, COLL_ALL),
	    ember_policy_count(&ember_collector_policy, EMBER_POLICY_BASE | EMBER_POLICY_RECORD),
	    ember_policy_count(&ember_collector_policy, EMBER_POLICY_BASE | EMBER_POLICY_DAEMON));
	ck_assert_uint_lt(ember_policy_count(&ember_symbolizer_policy, SYM_ALL), 90);
	ck_assert_uint_lt(ember_policy_count(&ember_collector_policy, COLL_ALL), 80);
}
END_TEST

START_TEST(symbolizer_forbidden_calls_absent)
{
	static const char *const never[] = {
	    "open",
	    "execve",
	    "execveat",
	    "fork",
	    "vfork",
	    "ptrace",
	    "kill",
	    "process_vm_readv",
	    "process_vm_writev",
	    "bpf",
	    "perf_event_open",
	    "memfd_create",
	    "mount",
	    "umount2",
	    "unshare",
	    "setns",
	    "pkey_mprotect",
	    "userfaultfd",
	    "io_uring_setup",
	    "personality",
	    "setuid",
	    "setresuid",
	    "setgid",
	    "capset",
	    "prctl",
	    "chmod",
	    "fchmod",
	    "chown",
	    "symlink",
	    "link",
	    "bind",
	    "listen",
	    "accept4",
	    "openat2",
	    "open_by_handle_at",
	    "name_to_handle_at",
	    "keyctl",
	    "add_key",
	    "init_module",
	    "finit_module",
	    "seccomp",
	    "landlock_create_ruleset",
	    "pidfd_open",
	    "pidfd_getfd",
	};

	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		assert_absent(&ember_symbolizer_policy, SYM_ALL, never[i]);
	/* Naming files and making sockets only outside the base group. */
	assert_absent(&ember_symbolizer_policy, EMBER_POLICY_BASE, "openat");
	assert_absent(&ember_symbolizer_policy, EMBER_POLICY_BASE, "socket");
	assert_absent(&ember_symbolizer_policy, EMBER_POLICY_BASE, "connect");
	assert_absent(&ember_symbolizer_policy, EMBER_POLICY_BASE | EMBER_POLICY_OUTPUT_DIR,
	              "socket");
}
END_TEST

START_TEST(symbolizer_conditions)
{
	const struct ember_policy_rule *r;
	bool exec = false, shared = false;

	r = rule(&ember_symbolizer_policy, EMBER_POLICY_BASE, "mmap");
	for (int i = 0; i < r->nconds; i++) {
		exec |= r->conds[i].arg == 2 && r->conds[i].op == EMBER_CMP_MASKED_EQ &&
		        r->conds[i].mask == PROT_EXEC && r->conds[i].value == 0;
		shared |= r->conds[i].arg == 3 && r->conds[i].op == EMBER_CMP_MASKED_EQ &&
		          r->conds[i].mask == MAP_SHARED && r->conds[i].value == 0;
	}
	ck_assert(exec && shared);
	r = rule(&ember_symbolizer_policy, EMBER_POLICY_BASE, "mprotect");
	ck_assert(r->nconds == 1 && r->conds[0].mask == PROT_EXEC && r->conds[0].value == 0);
	r = rule(&ember_symbolizer_policy, EMBER_POLICY_BASE, "clone");
	ck_assert(r->nconds == 1 && r->conds[0].mask == CLONE_THREAD &&
	          r->conds[0].value == CLONE_THREAD);
	r = rule(&ember_symbolizer_policy, EMBER_POLICY_BASE, "clone3");
	ck_assert(r->action == EMBER_RULE_ERRNO && r->errno_value == ENOSYS);
	r = rule(&ember_symbolizer_policy, EMBER_POLICY_OUTPUT_DIR, "openat");
	ck_assert(r->nconds == 2 && r->conds[0].arg == 0 && r->conds[0].param &&
	          !strcmp(r->conds[0].param, "output_dir_fd"));
	/* Every socket rule names an internet family and a stream. */
	for (size_t i = 0; i < ember_symbolizer_policy.nrules; i++) {
		r = &ember_symbolizer_policy.rules[i];
		if (strcmp(r->syscall, "socket"))
			continue;
		ck_assert(r->group == EMBER_POLICY_NETWORK && r->nconds == 2);
		ck_assert(r->conds[0].value == AF_INET || r->conds[0].value == AF_INET6);
		ck_assert(r->conds[1].value == SOCK_STREAM);
	}
}
END_TEST

START_TEST(collector_forbidden_calls_absent)
{
	static const char *const never[] = {
	    "execve",
	    "execveat",
	    "fork",
	    "vfork",
	    "clone",
	    "clone3",
	    "ptrace",
	    "process_vm_readv",
	    "process_vm_writev",
	    "mount",
	    "setuid",
	    "setresuid",
	    "capset",
	    "socket",
	    "connect",
	    "bind",
	    "chmod",
	    "chown",
	    "rename",
	    "renameat2",
	    "open",
	    "io_uring_setup",
	    "init_module",
	    "pidfd_getfd",
	};
	const struct ember_policy_rule *r;

	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		assert_absent(&ember_collector_policy, COLL_ALL, never[i]);
	r = rule(&ember_collector_policy, EMBER_POLICY_BASE, "openat");
	ck_assert(r->nconds == 1 && (r->conds[0].mask & O_ACCMODE) &&
	          (r->conds[0].mask & O_CREAT) && r->conds[0].value == O_RDONLY);
	assert_absent(&ember_collector_policy, EMBER_POLICY_BASE | EMBER_POLICY_DAEMON, "kill");
	assert_absent(&ember_collector_policy, EMBER_POLICY_BASE | EMBER_POLICY_DAEMON, "unlink");
	r = rule(&ember_collector_policy, EMBER_POLICY_RECORD, "kill");
	ck_assert(r->nconds == 2 && r->conds[0].param && !strcmp(r->conds[0].param, "child"));
}
END_TEST

/* The symbolizer's readers read what they are handed: no file by path, no network, no
 * process, no signal. */
START_TEST(symbolizer_readers_only_read)
{
	static const char *const never[] = {
	    "open",  "openat", "openat2", "socket", "connect", "clone",    "clone3",    "fork",
	    "vfork", "execve", "kill",    "ptrace", "bpf",     "unlinkat", "renameat2",
	};
	const struct ember_policy_rule *r;

	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		assert_absent(&ember_symbolizer_policy, EMBER_POLICY_READER, never[i]);
	/* memfd_create for the readers only, never for the symbolizer itself. */
	rule(&ember_symbolizer_policy, EMBER_POLICY_READER, "memfd_create");
	assert_absent(&ember_symbolizer_policy, SYM_ALL, "memfd_create");
	r = rule(&ember_symbolizer_policy, EMBER_POLICY_READER, "mmap");
	ck_assert_uint_eq(r->nconds, 2);
	printf("allow-list of the symbolizer's readers: %zu system calls\n",
	       ember_policy_count(&ember_symbolizer_policy, EMBER_POLICY_READER));
}
END_TEST

/* The broker's workers open files and nothing else: no eBPF, no processes, no signals. */
START_TEST(collector_workers_only_open)
{
	static const char *const never[] = {
	    "bpf",       "perf_event_open", "memfd_create", "pipe2",      "kill",
	    "clone",     "clone3",          "fork",         "vfork",      "execve",
	    "ptrace",    "socket",          "accept4",      "epoll_wait", "pidfd_open",
	    "ftruncate", "unlink",          "wait4",
	};
	const struct ember_policy_rule *r;

	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		assert_absent(&ember_collector_policy, EMBER_POLICY_WORKER, never[i]);
	r = rule(&ember_collector_policy, EMBER_POLICY_WORKER, "openat");
	ck_assert(r->nconds == 1 && (r->conds[0].mask & O_ACCMODE) &&
	          (r->conds[0].mask & O_CREAT) && r->conds[0].value == O_RDONLY);
	printf("allow-list of the broker's workers: %zu system calls\n",
	       ember_policy_count(&ember_collector_policy, EMBER_POLICY_WORKER));
	ck_assert_uint_lt(ember_policy_count(&ember_collector_policy, EMBER_POLICY_WORKER), 40);
}
END_TEST

/*
 * The sanitizer group (seccomp/sanitizer.policy) is in a sanitized build's tables alone: any
 * other build's tables are its .policy files row for row, and so are its filters. Where it
 * is, it allows two calls about the calling thread alone and refuses the others without
 * killing.
 */
START_TEST(sanitizer_rows_only_when_sanitized)
{
	const struct ember_policy *pols[] = {&ember_symbolizer_policy, &ember_collector_policy};
	size_t rows = 0;

	for (size_t i = 0; i < 2; i++)
		for (size_t j = 0; j < pols[i]->nrules; j++) {
			const struct ember_policy_rule *r = &pols[i]->rules[j];

			if (!(r->group & EMBER_POLICY_SANITIZER))
				continue;
			rows++;
			ck_assert_msg(r->group == EMBER_POLICY_SANITIZER, "%s line %u",
			              pols[i]->name, r->line);
			if (r->action == EMBER_RULE_ALLOW)
				ck_assert_msg(!strcmp(r->syscall, "sigaltstack") ||
				                  !strcmp(r->syscall, "rt_sigprocmask"),
				              "the sanitizer group allows %s", r->syscall);
		}
#ifdef EMBER_SANITIZERS
	ck_assert_uint_gt(rows, 0);
#else
	ck_assert_uint_eq(rows, 0);
#endif
}
END_TEST

/* Runs fn in a child under the policy; returns its wait status. */
static int run_confined(const struct ember_policy *p, uint32_t groups, int dir_fd,
                        void (*fn)(int dir_fd))
{
	pid_t pid = fork();
	int status = 0;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct ember_policy_param params[] = {
		    {"pid", (uint64_t)getpid()},
		    {"output_dir_fd", (uint64_t)dir_fd},
		    {"child", 1},
		};

		if (ember_policy_load(p, groups, params, 3))
			_exit(3);
		fn(dir_fd);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void killed_by_sigsys(int status, const char *what)
{
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
	              "%s: expected SIGSYS, got status 0x%x", what, status);
}

static void exited_zero(int status, const char *what)
{
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "%s: expected exit 0, got status 0x%x", what, status);
}

static void allowed_work(int dir_fd)
{
	void *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *big = malloc(1 << 20);

	(void)dir_fd;
	if (m == MAP_FAILED || !big || mprotect(m, 4096, PROT_READ) < 0 || munmap(m, 8192) < 0)
		_exit(4);
	memset(big, 1, 1 << 20);
	free(big);
	if (write(STDERR_FILENO, "", 0) < 0 || getpid() <= 0)
		_exit(5);
}

static void do_open(int dir_fd)
{
	(void)dir_fd;
	open("/etc/hostname", O_RDONLY);
}

static void do_exec(int dir_fd)
{
	(void)dir_fd;
	execl("/bin/true", "true", (char *)NULL);
}

static void do_ptrace(int dir_fd)
{
	(void)dir_fd;
	syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, getppid(), 0, 0);
}

static void do_netlink(int dir_fd)
{
	(void)dir_fd;
	socket(AF_NETLINK, SOCK_RAW, 0);
}

static void do_mmap_exec(int dir_fd)
{
	(void)dir_fd;
	mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void do_mmap_shared(int dir_fd)
{
	(void)dir_fd;
	mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
}

static void do_mprotect_exec(int dir_fd)
{
	void *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)dir_fd;
	mprotect(m, 4096, PROT_READ | PROT_EXEC);
}

static void do_fork(int dir_fd)
{
	(void)dir_fd;
	/* A clone without CLONE_THREAD: a new process. */
	if (syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) == 0)
		_exit(0);
}

static void do_kill_parent(int dir_fd)
{
	(void)dir_fd;
	kill(getppid(), 0);
}

static void do_tcp(int dir_fd)
{
	(void)dir_fd;
	if (socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) < 0)
		_exit(6);
}

static void do_udp(int dir_fd)
{
	(void)dir_fd;
	socket(AF_INET, SOCK_DGRAM, 0);
}

static void do_create_output(int dir_fd)
{
	int fd =
	    openat(dir_fd, "out.tmp", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);

	if (fd < 0 || write(fd, "x", 1) != 1 ||
	    renameat(dir_fd, "out.tmp", dir_fd, "out.folded") < 0 ||
	    unlinkat(dir_fd, "out.folded", 0) < 0)
		_exit(7);
}

static void do_read_in_dir(int dir_fd)
{
	openat(dir_fd, "anything", O_RDONLY);
}

static void do_open_beside_dir(int dir_fd)
{
	(void)dir_fd;
	openat(AT_FDCWD, "x", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
}

START_TEST(symbolizer_filter_kills_forbidden_calls)
{
	struct {
		void (*fn)(int);
		const char *name;
	} forbidden[] = {
	    {do_open, "open"},
	    {do_exec, "execve"},
	    {do_ptrace, "ptrace"},
	    {do_netlink, "socket(AF_NETLINK)"},
	    {do_mmap_exec, "mmap(PROT_EXEC)"},
	    {do_mmap_shared, "mmap(MAP_SHARED)"},
	    {do_mprotect_exec, "mprotect(PROT_EXEC)"},
	    {do_fork, "fork"},
	    {do_kill_parent, "kill"},
	    {do_tcp, "socket(AF_INET) without network"},
	};

	exited_zero(run_confined(&ember_symbolizer_policy, EMBER_POLICY_BASE, -1, allowed_work),
	            "allowed work");
	for (size_t i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++)
		killed_by_sigsys(
		    run_confined(&ember_symbolizer_policy, EMBER_POLICY_BASE, -1, forbidden[i].fn),
		    forbidden[i].name);
}
END_TEST

START_TEST(symbolizer_groups_widen_only_as_listed)
{
	char dir[] = "/tmp/ember-policy-XXXXXX";
	int dir_fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dir_fd, 0);
	exited_zero(run_confined(&ember_symbolizer_policy,
	                         EMBER_POLICY_BASE | EMBER_POLICY_OUTPUT_DIR, dir_fd,
	                         do_create_output),
	            "new output file in the directory");
	killed_by_sigsys(run_confined(&ember_symbolizer_policy,
	                              EMBER_POLICY_BASE | EMBER_POLICY_OUTPUT_DIR, dir_fd,
	                              do_read_in_dir),
	                 "read-only open in the output directory");
	killed_by_sigsys(run_confined(&ember_symbolizer_policy,
	                              EMBER_POLICY_BASE | EMBER_POLICY_OUTPUT_DIR, dir_fd,
	                              do_open_beside_dir),
	                 "open relative to the working directory");
	exited_zero(run_confined(&ember_symbolizer_policy, EMBER_POLICY_BASE | EMBER_POLICY_NETWORK,
	                         -1, do_tcp),
	            "TCP socket with network export");
	killed_by_sigsys(run_confined(&ember_symbolizer_policy,
	                              EMBER_POLICY_BASE | EMBER_POLICY_NETWORK, -1, do_udp),
	                 "UDP socket with network export");
	killed_by_sigsys(run_confined(&ember_symbolizer_policy,
	                              EMBER_POLICY_BASE | EMBER_POLICY_NETWORK, -1, do_netlink),
	                 "netlink socket with network export");
	close(dir_fd);
	rmdir(dir);
}
END_TEST

static void do_read_proc(int dir_fd)
{
	char buf[64];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	(void)dir_fd;
	if (fd < 0 || read(fd, buf, sizeof(buf)) <= 0)
		_exit(8);
	close(fd);
}

static void do_open_writable(int dir_fd)
{
	(void)dir_fd;
	open("/tmp/ember-policy-never", O_WRONLY | O_CREAT, 0600);
}

START_TEST(collector_filter)
{
	exited_zero(run_confined(&ember_collector_policy, EMBER_POLICY_BASE | EMBER_POLICY_DAEMON,
	                         -1, do_read_proc),
	            "read-only open");
	killed_by_sigsys(run_confined(&ember_collector_policy,
	                              EMBER_POLICY_BASE | EMBER_POLICY_DAEMON, -1,
	                              do_open_writable),
	                 "writable open");
	killed_by_sigsys(run_confined(&ember_collector_policy,
	                              EMBER_POLICY_BASE | EMBER_POLICY_DAEMON, -1, do_exec),
	                 "collector execve");
	killed_by_sigsys(run_confined(&ember_collector_policy,
	                              EMBER_POLICY_BASE | EMBER_POLICY_DAEMON, -1, do_tcp),
	                 "collector socket");
	killed_by_sigsys(run_confined(&ember_collector_policy,
	                              EMBER_POLICY_BASE | EMBER_POLICY_DAEMON, -1, do_fork),
	                 "collector fork");
}
END_TEST

START_TEST(missing_parameter_installs_nothing)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		struct ember_policy_param only_pid[] = {{"pid", (uint64_t)getpid()}};
		int err =
		    ember_policy_load(&ember_symbolizer_policy,
		                      EMBER_POLICY_BASE | EMBER_POLICY_OUTPUT_DIR, only_pid, 1);

		/* No filter may be left half-installed. */
		_exit(err == -EINVAL && prctl(PR_GET_SECCOMP) == 0 ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	exited_zero(status, "load without $output_dir_fd");
}
END_TEST

static Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *t = tcase_create("policy");

	tcase_add_test(t, tables_are_well_formed);
	tcase_add_test(t, symbolizer_forbidden_calls_absent);
	tcase_add_test(t, symbolizer_conditions);
	tcase_add_test(t, collector_forbidden_calls_absent);
	tcase_add_test(t, collector_workers_only_open);
	tcase_add_test(t, symbolizer_readers_only_read);
	tcase_add_test(t, sanitizer_rows_only_when_sanitized);
	tcase_add_test(t, symbolizer_filter_kills_forbidden_calls);
	tcase_add_test(t, symbolizer_groups_widen_only_as_listed);
	tcase_add_test(t, collector_filter);
	tcase_add_test(t, missing_parameter_installs_nothing);
	suite_add_tcase(s, t);
	return s;
}

EMBER_CHECK_MAIN(policy_suite)
