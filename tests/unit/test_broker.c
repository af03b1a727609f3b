// SPDX-License-Identifier: Apache-2.0
/*
 * The broker's dispatch table: argument validators, PID permission (seen,
 * living, same process), per-connection limits, the rate cap, debug files
 * confined to the debug tree, mapped files confined to a process's root, and
 * perf maps that are the process's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "waiting_child.h"
#include "collector/broker.h"

#define SEC 1000000000ull

struct fixture {
	struct ember_procs procs;
	struct ember_broker broker;
	char dir[64];
};

static void fixture_init(struct fixture *f)
{
	ck_assert_int_eq(ember_procs_init(&f->procs, 64), 0);
	ember_broker_init(&f->broker, &f->procs);
	snprintf(f->dir, sizeof(f->dir), "/tmp/ember-broker-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
}

static void fixture_free(struct fixture *f)
{
	char cmd[128];

	ember_procs_free(&f->procs);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	ck_assert_int_eq(system(cmd), 0);
}

static int request(struct fixture *f, uint32_t what, uint32_t pid, uint64_t addr, const char *arg)
{
	struct ember_msg_broker_req req = {.what = what, .pid = pid, .addr = addr};
	struct ember_broker_file file;
	int fd;

	if (arg)
		memcpy(req.arg, arg, strnlen(arg, sizeof(req.arg)));
	fd = ember_broker_handle(&f->broker, &req, SEC, &file);
	if (fd >= 0)
		close(fd);
	return fd >= 0 ? 0 : fd;
}

static void put_file(const char *dir, const char *rel, const char *content)
{
	char path[256];
	FILE *out;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	out = fopen(path, "w");
	ck_assert_ptr_nonnull(out);
	fputs(content, out);
	fclose(out);
}

static void put_dir(const char *dir, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	ck_assert_int_eq(mkdir(path, 0755), 0);
}

static void put_link(const char *dir, const char *rel, const char *target)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	ck_assert_int_eq(symlink(target, path), 0);
}

START_TEST(unknown_request_types_are_refused)
{
	struct fixture f;

	fixture_init(&f);
	ck_assert_int_eq(request(&f, 0, 0, 0, NULL), -EINVAL);
	ck_assert_int_eq(request(&f, EMBER_BROKER_WHAT_MAX, 0, 0, NULL), -EINVAL);
	ck_assert_int_eq(request(&f, 0xffffffffu, 0, 0, NULL), -EINVAL);
	fixture_free(&f);
}
END_TEST

START_TEST(build_ids_are_lowercase_hex_only)
{
	static const char *const bad[] = {
	    "",
	    "ab",
	    "abc",
	    "ABCDEF01",
	    "ab/../../etc/passwd",
	    "../../etc",
	    "ab cd",
	    "abcdefgh",
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef00",
	    "abcd\n",
	    "/etc/passwd",
	    "ab%2e%2e",
	};
	struct fixture f;
	char unterminated[128];

	fixture_init(&f);
	f.broker.debug_root = f.dir;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(request(&f, EMBER_BROKER_DEBUG_FILE, 0, 0, bad[i]) == -EINVAL,
		              "build id '%s' was accepted", bad[i]);
	memset(unterminated, 'a', sizeof(unterminated));
	ck_assert_int_eq(request(&f, EMBER_BROKER_DEBUG_FILE, 0, 0, unterminated), -EINVAL);
	/* Well formed but absent. */
	ck_assert_int_eq(request(&f, EMBER_BROKER_DEBUG_FILE, 0, 0, "abcdef"), -ENOENT);
	fixture_free(&f);
}
END_TEST

START_TEST(debug_files_stay_in_the_debug_tree)
{
	struct fixture f;
	char outside[128];

	fixture_init(&f);
	f.broker.debug_root = f.dir;
	put_dir(f.dir, ".build-id");
	put_dir(f.dir, ".build-id/ab");
	put_dir(f.dir, "real");
	put_file(f.dir, "real/libx.debug", "debug");
	put_file(f.dir, ".build-id/ab/cdef01.debug", "debug");
	/* A relative link inside the tree is how distributions lay it out. */
	put_link(f.dir, ".build-id/ab/0011.debug", "../../real/libx.debug");
	/* Links out of the tree: absolute, and climbing above it. */
	put_link(f.dir, ".build-id/ab/2233.debug", "/etc/passwd");
	put_link(f.dir, ".build-id/ab/4455.debug", "../../../../../../../../etc/passwd");
	snprintf(outside, sizeof(outside), "%s-outside", f.dir);
	put_file("/tmp", outside + 5, "secret");
	put_link(f.dir, ".build-id/ab/6677.debug", outside);
	put_dir(f.dir, ".build-id/ab/8899.debug");
	put_link(f.dir, ".build-id/ab/aabb.debug", "/proc/self/exe");

	ck_assert_int_eq(request(&f, EMBER_BROKER_DEBUG_FILE, 0, 0, "abcdef01"), 0);
	ck_assert_int_eq(request(&f, EMBER_BROKER_DEBUG_FILE, 0, 0, "ab0011"), 0);
	ck_assert_int_lt(request(&f, EMBER_BROKER_DEBUG_FILE, 0, 0, "ab2233"), 0);
	ck_assert_int_lt(request(&f, EMBER_BROKER_DEBUG_FILE, 0, 0, "ab4455"), 0);
	ck_assert_int_lt(request(&f, EMBER_BROKER_DEBUG_FILE, 0, 0, "ab6677"), 0);
	ck_assert_int_eq(request(&f, EMBER_BROKER_DEBUG_FILE, 0, 0, "ab8899"), -EINVAL);
	ck_assert_int_lt(request(&f, EMBER_BROKER_DEBUG_FILE, 0, 0, "abaabb"), 0);
	ck_assert_uint_eq(f.broker.served[EMBER_BROKER_DEBUG_FILE], 2);
	unlink(outside);
	fixture_free(&f);
}
END_TEST

/* True when a process blocked opening fifo for writing got through: a reader opened it. */
static bool writer_released(int ready_fd)
{
	struct pollfd p = {.fd = ready_fd, .events = POLLIN};

	return poll(&p, 1, 300) == 1;
}

/* A child blocked in open(fifo, O_WRONLY) until a reader opens it; then it writes to *ready. */
static pid_t fifo_writer(const char *fifo, int *ready)
{
	int pipefd[2];
	pid_t pid;

	ck_assert_int_eq(pipe(pipefd), 0);
	pid = fork();
	if (pid < 0) /* no ck_assert the child also runs: it would write to Check's messages */
		ck_abort_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(fifo, O_WRONLY | O_CLOEXEC);

		if (write(pipefd[1], "x", 1) < 0 || fd < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	*ready = pipefd[0];
	usleep(100000); /* into its open() */
	return pid;
}

/* Files a process names (debug links): inside its root, through no link, readable by anyone. */
START_TEST(named_files_stay_in_the_process_root)
{
	struct fixture f;
	char root[96], path[160], buf[16];
	int rootfd, fd, selfd, ready, status;
	pid_t writer;
	ssize_t n;

	fixture_init(&f);
	snprintf(root, sizeof(root), "%s/root", f.dir);
	put_dir(f.dir, "root");
	put_dir(root, "lib");
	put_file(root, "lib/libx.so", "elf");
	put_dir(root, "etc");
	put_file(root, "etc/passwd", "decoy");
	put_file(root, "lib/secret.debug", "secret");
	snprintf(path, sizeof(path), "%s/lib/secret.debug", root);
	ck_assert_int_eq(chmod(path, 0640), 0);
	/* Escapes the process controls: absolute and climbing links, dot-dots. */
	put_link(root, "lib/abs.so", "/etc/passwd");
	put_link(root, "lib/up.so", "../../../../../../../etc/passwd");
	put_link(root, "lib/inside.so", "/lib/libx.so");
	snprintf(path, sizeof(path), "%s/lib/fifo.debug", root);
	ck_assert_int_eq(mkfifo(path, 0666), 0);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(rootfd, 0);

	fd = ember_broker_open_in_root(rootfd, "/lib/libx.so");
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* No link is followed, not even one that stays inside: a process could point one at
	 * anything the collector may read. */
	ck_assert_int_eq(ember_broker_open_in_root(rootfd, "/lib/inside.so"), -ELOOP);
	ck_assert_int_eq(ember_broker_open_in_root(rootfd, "/lib/abs.so"), -ELOOP);
	ck_assert_int_eq(ember_broker_open_in_root(rootfd, "/lib/up.so"), -ELOOP);
	/* Dot-dots stop at the root: they meet the decoy, not the host's file. */
	fd = ember_broker_open_in_root(rootfd, "/../../../../etc/passwd");
	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof(buf));
	ck_assert(n == 5 && !memcmp(buf, "decoy", 5));
	close(fd);
	fd = ember_broker_open_in_root(rootfd, "lib/../../../etc/passwd");
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* A file not everyone may read is not handed to the symbolizer (think /etc/shadow). */
	ck_assert_int_eq(ember_broker_open_in_root(rootfd, "/lib/secret.debug"), -EACCES);
	/* Not a regular file; and a FIFO is not even opened (its writer stays blocked). */
	ck_assert_int_eq(ember_broker_open_in_root(rootfd, "/lib"), -EINVAL);
	snprintf(path, sizeof(path), "%s/lib/fifo.debug", root);
	writer = fifo_writer(path, &ready);
	ck_assert_int_eq(ember_broker_open_in_root(rootfd, "/lib/fifo.debug"), -EINVAL);
	ck_assert_msg(!writer_released(ready), "the broker opened a FIFO");
	kill(writer, SIGKILL);
	waitpid(writer, &status, 0);
	close(ready);
	close(rootfd);
	/* Magic links (/proc/PID/exe and the like) are never followed. */
	selfd = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(selfd, 0);
	ck_assert_int_eq(ember_broker_open_in_root(selfd, "exe"), -ELOOP);
	close(selfd);
	fixture_free(&f);
}
END_TEST

START_TEST(pids_must_be_seen_living_and_the_same)
{
	struct fixture f;
	pid_t child = ember_waiting_child();
	int status;

	fixture_init(&f);
	ck_assert_int_eq(request(&f, EMBER_BROKER_MAPS, 0, 0, NULL), -EINVAL);
	ck_assert_int_eq(request(&f, EMBER_BROKER_MAPS, 1u << 23, 0, NULL), -EINVAL);
	/* Never sampled: refused, though it exists. */
	ck_assert_int_eq(request(&f, EMBER_BROKER_MAPS, (uint32_t)child, 0, NULL), -EPERM);
	ck_assert_int_eq(request(&f, EMBER_BROKER_MEM, 1, 0, NULL), -EPERM);
	ck_assert_int_eq(ember_procs_note(&f.procs, (uint32_t)child, SEC, false), 0);
	ck_assert_int_eq(request(&f, EMBER_BROKER_MAPS, (uint32_t)child, 0, NULL), 0);
	ck_assert_int_eq(request(&f, EMBER_BROKER_MEM, (uint32_t)child, 0, NULL), 0);
	/* No mapping starts there. */
	ck_assert_int_eq(request(&f, EMBER_BROKER_MAPPED_FILE, (uint32_t)child, 4096, NULL),
	                 -ENOENT);
	/* Gone: its PID may name another process now. */
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	ck_assert_int_eq(request(&f, EMBER_BROKER_MAPS, (uint32_t)child, 0, NULL), -ESRCH);
	ck_assert_int_eq(request(&f, EMBER_BROKER_MAPS, (uint32_t)child, 0, NULL), -EPERM);
	ck_assert_uint_eq(f.broker.served[EMBER_BROKER_MAPS], 1);
	ck_assert_uint_ge(f.broker.refused[EMBER_BROKER_MAPS], 4);
	fixture_free(&f);
}
END_TEST

/* The start address of the mapping of pid's executable, from its maps. */
static uint64_t exe_mapping(pid_t pid)
{
	char path[64], exe[4096], line[4096];
	unsigned long long start = 0;
	ssize_t n;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "r");
	ck_assert_ptr_nonnull(maps);
	while (fgets(line, sizeof(line), maps))
		if (strstr(line, exe) && sscanf(line, "%llx-", &start) == 1)
			break;
	fclose(maps);
	ck_assert_uint_ne(start, 0);
	return start;
}

START_TEST(mapped_file_of_a_seen_process)
{
	struct fixture f;
	pid_t child = ember_waiting_child();
	int status;

	fixture_init(&f);
	ck_assert_int_eq(ember_procs_note(&f.procs, (uint32_t)child, SEC, false), 0);
	ck_assert_int_eq(
	    request(&f, EMBER_BROKER_MAPPED_FILE, (uint32_t)child, exe_mapping(child), NULL), 0);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	fixture_free(&f);
}
END_TEST

/* The same file as pid's executable (device and inode), opened read-only. */
static void ck_is_exe(int fd, pid_t pid)
{
	struct stat st, exe;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(stat(path, &exe), 0);
	ck_assert(st.st_ino == exe.st_ino && st.st_dev == exe.st_dev);
	ck_assert_int_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	close(fd);
}

/*
 * A worker's opens of a mapped file without map_files: by the path the kernel's maps give,
 * inside the process's root (its lock stalled), and through the snapshot of its maps and
 * its root (it is gone); each the mapped file, and refused on a device listed as stalled.
 */
START_TEST(mapped_file_by_path_and_through_a_snapshot)
{
	struct fixture f;
	pid_t child = ember_waiting_child();
	struct ember_msg_broker_req req = {
	    .what = EMBER_BROKER_MAPPED_FILE, .pid = (uint32_t)child, .addr = exe_mapping(child)};
	struct ember_broker_progress pg = {0};
	struct ember_broker_job job = {.by_path = true, .in_fd = -1, .out_fd = -1};
	char path[64];
	int status;

	fixture_init(&f);
	ck_is_exe(ember_broker_open(&f.broker, &req, &job), child);
	ck_assert_uint_ne(job.file.ino, 0);
	/* Its device stalled: refused before any open. */
	pg.nrefuse = 1;
	pg.refuse[0].major = job.file.dev_major;
	pg.refuse[0].minor = job.file.dev_minor;
	job =
	    (struct ember_broker_job){.progress = &pg, .by_path = true, .in_fd = -1, .out_fd = -1};
	ck_assert_int_eq(ember_broker_open(&f.broker, &req, &job), -ETIMEDOUT);
	ck_assert(job.file.flags & EMBER_BROKER_STALLED);
	/* Gone: the snapshot names the file, its root leads there. */
	job = (struct ember_broker_job){.gone = true};
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)child);
	job.in_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/root", (int)child);
	job.out_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_is_exe(ember_broker_open(&f.broker, &req, &job), child);
	ck_assert(job.file.flags & EMBER_BROKER_SNAPSHOT);
	ck_assert_int_eq(job.in_fd, -1); /* taken over and closed */
	close(job.out_fd);
	/* A snapshot without that mapping: nothing. */
	job = (struct ember_broker_job){.gone = true};
	job.in_fd = memfd_create("maps", MFD_CLOEXEC);
	job.out_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(ember_broker_open(&f.broker, &req, &job), -ENOENT);
	close(job.out_fd);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	fixture_free(&f);
}
END_TEST

/* The start of the mapping of path in pid's maps (0 if none). */
static uint64_t mapping_of(pid_t pid, const char *path)
{
	char maps[64], line[4096];
	unsigned long long start = 0;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		/* The kernel prints the path from our root. A process in another mount
		 * namespace (mapped_file_is_the_one_mapped) shows files we cannot reach
		 * from its namespace's root instead: with a prefix when we run in a chroot. */
		char *file = strstr(line, " /");
		size_t n;

		line[strcspn(line, "\n")] = '\0';
		n = file ? strlen(file + 1) : 0;
		if (n >= strlen(path) && !strcmp(file + 1 + n - strlen(path), path) &&
		    sscanf(line, "%llx-", &start) == 1)
			break;
	}
	fclose(f);
	return start;
}

/* A child that maps path read-only and waits; returns once the mapping is there. */
static pid_t mapper(const char *path)
{
	int ready[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	if (pid < 0) /* no ck_assert the child also runs: it would write to Check's messages */
		ck_abort_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED ||
		    write(ready[1], "x", 1) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return pid;
}

static int request_fd(struct fixture *f, uint32_t what, uint32_t pid, uint64_t addr,
                      const char *arg)
{
	struct ember_msg_broker_req req = {.what = what, .pid = pid, .addr = addr};
	struct ember_broker_file file;

	if (arg)
		memcpy(req.arg, arg, strnlen(arg, sizeof(req.arg)));
	return ember_broker_handle(&f->broker, &req, SEC, &file);
}

/*
 * A debug link names a file beside the mapped one: only a regular file anyone may read,
 * reached through no link, is served. Otherwise a process mapping /etc/passwd would let the
 * symbolizer ask for "shadow" beside it.
 */
START_TEST(debuglinks_are_files_anyone_may_read)
{
	struct fixture f;
	char dir[96], lib[128], path[160], buf[16];
	uint64_t start;
	pid_t child;
	int fd, status;

	fixture_init(&f);
	snprintf(dir, sizeof(dir), "%s/bin", f.dir);
	put_dir(f.dir, "bin");
	put_dir(dir, ".debug");
	put_file(dir, "prog", "elf");
	put_file(dir, "prog.debug", "debug");
	put_file(dir, ".debug/other.debug", "debug2");
	put_file(dir, "shadow", "secret");
	snprintf(path, sizeof(path), "%s/shadow", dir);
	ck_assert_int_eq(chmod(path, 0640), 0);
	put_link(dir, "link.debug", "prog.debug");
	put_link(dir, "passwd.debug", "/etc/passwd");
	snprintf(lib, sizeof(lib), "%s/prog", dir);
	child = mapper(lib);
	start = mapping_of(child, lib);
	ck_assert_uint_ne(start, 0);
	ck_assert_int_eq(ember_procs_note(&f.procs, (uint32_t)child, SEC, false), 0);

	fd = request_fd(&f, EMBER_BROKER_DEBUGLINK, (uint32_t)child, start, "prog.debug");
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 5);
	close(fd);
	fd = request_fd(&f, EMBER_BROKER_DEBUGLINK, (uint32_t)child, start, "other.debug");
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 6);
	close(fd);
	ck_assert_int_lt(request(&f, EMBER_BROKER_DEBUGLINK, (uint32_t)child, start, "shadow"), 0);
	ck_assert_int_lt(request(&f, EMBER_BROKER_DEBUGLINK, (uint32_t)child, start, "link.debug"),
	                 0);
	ck_assert_int_lt(
	    request(&f, EMBER_BROKER_DEBUGLINK, (uint32_t)child, start, "passwd.debug"), 0);
	ck_assert_uint_eq(f.broker.served[EMBER_BROKER_DEBUGLINK], 2);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	fixture_free(&f);
}
END_TEST

static bool root_or_skip(const char *test, const char *what)
{
	if (geteuid() == 0)
		return true;
	ember_skip_report(test, "not root: %s not tested (run as root)", what);
	return false;
}

/*
 * The mapped file is the very file mapped, whatever the process mounts over its path
 * afterwards. Here: two fresh tmpfs give the same inode number to their first file; the
 * process maps a/lib.so, then bind-mounts b/secret over it (in its own mount namespace, as
 * an unprivileged user can). Resolved by its path inside the process's root, the inode
 * number would match and the secret would be handed out.
 */
START_TEST(mapped_file_is_the_one_mapped)
{
	struct fixture f;
	char a[96], b[96], lib[128], secret[128], buf[16];
	int ready[2], fd, status;
	uint64_t start;
	ino_t inos[2];
	ssize_t n;
	pid_t child;

	if (!root_or_skip(__func__, "mapping over a mapped file"))
		return;
	fixture_init(&f);
	/* The child's mounts go beneath a private tmpfs of ours, so none can propagate
	 * out of its namespace even where "/" is no mount point to make private (a
	 * chroot); the child keeps its copy and ours goes once the child is ready. */
	ck_assert_int_eq(mount("tmpfs", f.dir, "tmpfs", 0, "mode=0700"), 0);
	ck_assert_int_eq(mount(NULL, f.dir, NULL, MS_PRIVATE, NULL), 0);
	snprintf(a, sizeof(a), "%s/a", f.dir);
	snprintf(b, sizeof(b), "%s/b", f.dir);
	put_dir(f.dir, "a");
	put_dir(f.dir, "b");
	snprintf(lib, sizeof(lib), "%s/lib.so", a);
	snprintf(secret, sizeof(secret), "%s/secret", b);
	ck_assert_int_eq(pipe(ready), 0);
	child = fork();
	if (child < 0)
		ck_abort_msg("fork: %s", strerror(errno));
	if (child == 0) {
		struct stat st[2];
		int fd;

		if (unshare(CLONE_NEWNS) || mount(NULL, f.dir, NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("tmpfs", a, "tmpfs", 0, NULL) || mount("tmpfs", b, "tmpfs", 0, NULL))
			_exit(1);
		put_file(a, "lib.so", "mapped");
		put_file(b, "secret", "secret");
		fd = open(lib, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED ||
		    mount(secret, lib, NULL, MS_BIND, NULL) || fstat(fd, &st[0]) ||
		    stat(lib, &st[1]))
			_exit(1);
		close(fd);
		inos[0] = st[0].st_ino;
		inos[1] = st[1].st_ino;
		if (write(ready[1], inos, sizeof(inos)) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	n = read(ready[0], inos, sizeof(inos));
	close(ready[0]);
	umount2(f.dir, MNT_DETACH);
	ck_assert_int_eq(n, sizeof(inos));
	/* The premise: another file, of the same inode number, now at the mapped path. */
	ck_assert_uint_eq(inos[0], inos[1]);
	start = mapping_of(child, lib);
	ck_assert_uint_ne(start, 0);
	ck_assert_int_eq(ember_procs_note(&f.procs, (uint32_t)child, SEC, false), 0);
	fd = request_fd(&f, EMBER_BROKER_MAPPED_FILE, (uint32_t)child, start, NULL);
	ck_assert_int_ge(fd, 0);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_gt(read(fd, buf, sizeof(buf) - 1), 0);
	ck_assert_str_eq(buf, "mapped");
	close(fd);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	fixture_free(&f);
}
END_TEST

/* OTLP facts: exactly the cgroup list and the executable, of a seen process only. */
START_TEST(proc_files_are_the_cgroup_and_the_executable_only)
{
	static const char *const refused[] = {"environ", "cmdline", "exe/", "../1/exe", "cgroupx",
	                                      "",        "root",    "fd/0", "mem"};
	struct fixture f;
	pid_t child = ember_waiting_child();
	struct ember_msg_broker_req req = {.what = EMBER_BROKER_PROC_FILE, .pid = (uint32_t)child};
	struct ember_broker_file file;
	struct stat st, exe;
	int status, fd;
	char path[64];

	fixture_init(&f);
	/* Never seen: refused whatever the name. */
	ck_assert_int_eq(request(&f, EMBER_BROKER_PROC_FILE, (uint32_t)child, 0, "cgroup"), -EPERM);
	ck_assert_int_eq(ember_procs_note(&f.procs, (uint32_t)child, SEC, false), 0);
	ck_assert_int_eq(request(&f, EMBER_BROKER_PROC_FILE, (uint32_t)child, 0, "cgroup"), 0);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		ck_assert_msg(request(&f, EMBER_BROKER_PROC_FILE, (uint32_t)child, 0, refused[i]) ==
		                  -EINVAL,
		              "%s served", refused[i]);
	/* A name that fills the whole field without a NUL is refused, not overread. */
	memset(req.arg, 'c', sizeof(req.arg));
	ck_assert_int_eq(ember_broker_handle(&f.broker, &req, SEC, &file), -EINVAL);
	/* "exe" is the process's executable itself, read-only. */
	memcpy(req.arg, "exe", 4);
	fd = ember_broker_handle(&f.broker, &req, SEC, &file);
	ck_assert_int_ge(fd, 0);
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)child);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(stat(path, &exe), 0);
	ck_assert(st.st_ino == exe.st_ino && st.st_dev == exe.st_dev);
	ck_assert_int_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	close(fd);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	fixture_free(&f);
}
END_TEST

START_TEST(per_connection_limits_and_rate_cap)
{
	struct fixture f;
	int served = 0;

	fixture_init(&f);
	for (int i = 0; i < 100; i++)
		served += request(&f, EMBER_BROKER_KALLSYMS, 0, 0, NULL) == 0;
	ck_assert_int_eq(served, 64);
	ck_assert_int_eq(request(&f, EMBER_BROKER_KALLSYMS, 0, 0, NULL), -EPERM);
	ember_broker_new_peer(&f.broker);
	ck_assert_int_eq(request(&f, EMBER_BROKER_KALLSYMS, 0, 0, NULL), 0);
	/* The kernel's notes (its build id), a fixed file as kallsyms is. */
	ck_assert_int_eq(request(&f, EMBER_BROKER_KERNEL_NOTES, 0, 0, NULL), 0);

	/* The token bucket: a burst, then refusals until time passes. */
	f.broker.rate_per_s = 1;
	f.broker.burst = 3;
	f.broker.tokens = 3;
	f.broker.refill_ns = SEC;
	ember_broker_new_peer(&f.broker);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(request(&f, EMBER_BROKER_KALLSYMS, 0, 0, NULL), 0);
	ck_assert_int_eq(request(&f, EMBER_BROKER_KALLSYMS, 0, 0, NULL), -EAGAIN);
	ck_assert_uint_eq(f.broker.rate_limited, 1);
	fixture_free(&f);
}
END_TEST

/* A child in a PID namespace of its own (PID 1 there), chrooted into root, running as uid:
 * the host's PID. */
static pid_t jailed_child(const char *root, uid_t uid)
{
	int pipefd[2];
	pid_t mid, pid = -1;

	ck_assert_int_eq(pipe(pipefd), 0);
	mid = fork();
	if (mid < 0)
		ck_abort_msg("fork: %s", strerror(errno));
	if (mid == 0) { /* asserts nothing: see waiting_child.h */
		pid_t inner;

		if (unshare(CLONE_NEWPID) < 0)
			_exit(1);
		inner = fork();
		if (inner == 0) {
			if (chroot(root) < 0 || chdir("/") < 0 || setuid(uid) < 0)
				_exit(1);
			pause();
			_exit(0);
		}
		if (write(pipefd[1], &inner, sizeof(inner)) != sizeof(inner))
			_exit(1);
		waitpid(inner, NULL, 0);
		_exit(0);
	}
	close(pipefd[1]);
	ck_assert_int_eq(read(pipefd[0], &pid, sizeof(pid)), sizeof(pid));
	close(pipefd[0]);
	usleep(100000); /* into its chroot and uid */
	return pid;
}

static void put_perf_map(const char *root, const char *name, uid_t owner)
{
	char path[256];

	put_file(root, name, "1000 10 jitted\n");
	snprintf(path, sizeof(path), "%s/%s", root, name);
	ck_assert_int_eq(chown(path, owner, 0), 0);
}

/*
 * A JIT's perf map: /tmp/perf-N.map inside the process's root, N its PID in its own
 * namespace; the process's user's or root's; through no link; not a FIFO.
 */
START_TEST(perf_maps_are_the_process_own)
{
	struct fixture f;
	char root[96], path[160], buf[32];
	struct ember_msg_broker_req req = {.what = EMBER_BROKER_PERF_MAP};
	struct ember_broker_file file;
	pid_t child, writer;
	int fd, ready, status;

	if (!root_or_skip("perf_maps_are_the_process_own", "perf maps"))
		return;
	fixture_init(&f);
	snprintf(root, sizeof(root), "%s/root", f.dir);
	put_dir(f.dir, "root");
	put_dir(root, "tmp");
	child = jailed_child(root, 4242);
	ck_assert_int_eq(ember_procs_note(&f.procs, (uint32_t)child, SEC, false), 0);
	req.pid = (uint32_t)child;
	/* None yet; the host's PID names none either. */
	ck_assert_int_eq(request(&f, EMBER_BROKER_PERF_MAP, (uint32_t)child, 0, NULL), -ENOENT);
	snprintf(path, sizeof(path), "tmp/perf-%d.map", (int)child);
	put_perf_map(root, path, 4242);
	ck_assert_int_eq(request(&f, EMBER_BROKER_PERF_MAP, (uint32_t)child, 0, NULL), -ENOENT);
	/* Its own, by the PID it knows itself by (1): served, the bytes the JIT wrote. */
	put_perf_map(root, "tmp/perf-1.map", 4242);
	fd = ember_broker_handle(&f.broker, &req, SEC, &file);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 15);
	ck_assert(!memcmp(buf, "1000 10 jitted\n", 15));
	close(fd);
	/* Root's: served (perf reads root's too). Another user's: planted, refused. */
	put_perf_map(root, "tmp/perf-1.map", 0);
	ck_assert_int_eq(request(&f, EMBER_BROKER_PERF_MAP, (uint32_t)child, 0, NULL), 0);
	put_perf_map(root, "tmp/perf-1.map", 4343);
	ck_assert_int_eq(request(&f, EMBER_BROKER_PERF_MAP, (uint32_t)child, 0, NULL), -EPERM);
	/* A link, even to the process's own file; a FIFO (never opened: its writer waits). */
	snprintf(path, sizeof(path), "%s/tmp/perf-1.map", root);
	ck_assert_int_eq(unlink(path), 0);
	put_perf_map(root, "tmp/real.map", 4242);
	put_link(root, "tmp/perf-1.map", "/tmp/real.map");
	ck_assert_int_eq(request(&f, EMBER_BROKER_PERF_MAP, (uint32_t)child, 0, NULL), -ELOOP);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkfifo(path, 0666), 0);
	ck_assert_int_eq(chown(path, 4242, 0), 0);
	writer = fifo_writer(path, &ready);
	ck_assert_int_eq(request(&f, EMBER_BROKER_PERF_MAP, (uint32_t)child, 0, NULL), -EINVAL);
	ck_assert_msg(!writer_released(ready), "the broker opened a FIFO");
	kill(writer, SIGKILL);
	waitpid(writer, &status, 0);
	close(ready);
	/* A process never sampled: refused before anything is looked up. */
	ck_assert_int_eq(request(&f, EMBER_BROKER_PERF_MAP, (uint32_t)getpid(), 0, NULL), -EPERM);
	kill(child, SIGKILL);
	while (wait(&status) > 0)
		;
	fixture_free(&f);
}
END_TEST

static Suite *broker_suite(void)
{
	Suite *s = suite_create("broker");
	TCase *t = tcase_create("broker");

	tcase_add_test(t, unknown_request_types_are_refused);
	tcase_add_test(t, build_ids_are_lowercase_hex_only);
	tcase_add_test(t, debug_files_stay_in_the_debug_tree);
	tcase_add_test(t, named_files_stay_in_the_process_root);
	tcase_add_test(t, pids_must_be_seen_living_and_the_same);
	tcase_add_test(t, mapped_file_of_a_seen_process);
	tcase_add_test(t, mapped_file_by_path_and_through_a_snapshot);
	tcase_add_test(t, debuglinks_are_files_anyone_may_read);
	tcase_add_test(t, mapped_file_is_the_one_mapped);
	tcase_add_test(t, per_connection_limits_and_rate_cap);
	tcase_add_test(t, proc_files_are_the_cgroup_and_the_executable_only);
	tcase_add_test(t, perf_maps_are_the_process_own);
	suite_add_tcase(s, t);
	return s;
}

EMBER_CHECK_MAIN(broker_suite)
