// SPDX-License-Identifier: Apache-2.0
#include "collector/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shared/cleanup.h"
#include "shared/err.h"
#include "shared/fs_class.h"
#include "shared/log.h"
#include "shared/proc_number.h"
#include "shared/str.h"

#define MAPS_MAX_BYTES   (64u << 20) /* stop scanning a maps file after this much */
#define BUILD_ID_MAX_HEX 64

/*
 * One request type: its name, whether it needs a recently sampled, living
 * PID, whether it may wait, how many times one symbolizer connection may be served it (0: no
 * limit but the rate cap), the argument check, and either the opener or the
 * file: one of /proc/PID with a PID, a fixed path without.
 */
struct broker_handler {
	const char *name;
	bool needs_pid;
	bool may_wait; /* on the process's memory-map lock or a file system: a worker opens it */
	uint32_t per_peer;
	int (*validate)(const struct ember_msg_broker_req *req); /* NULL: no arguments */
	int (*open)(const struct ember_broker *b, const struct ember_msg_broker_req *req,
	            struct ember_broker_job *job);
	const char *file;
};

static int open_ro(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	return fd < 0 ? neg_errno() : fd;
}

/* -ETIMEDOUT (EMBER_BROKER_STALLED) for a device this job must not touch, else 0. */
static int device_refused(struct ember_broker_job *job, uint32_t major, uint32_t minor)
{
	const struct ember_broker_progress *p = job->progress;
	bool refused = p && p->block_only && !major;

	for (uint32_t i = 0; p && i < p->nrefuse && i < EMBER_BROKER_MAX_STALLS; i++)
		refused |= p->refuse[i].major == major && p->refuse[i].minor == minor;
	if (refused)
		job->file.flags |= EMBER_BROKER_STALLED;
	return refused ? -ETIMEDOUT : 0;
}

int ember_broker_reach_device(struct ember_broker_job *job, uint32_t major, uint32_t minor)
{
	job->file.dev_major = major;
	job->file.dev_minor = minor;
	if (job->progress) {
		__atomic_store_n(&job->progress->dev_major, major, __ATOMIC_RELAXED);
		__atomic_store_n(&job->progress->dev_minor, minor, __ATOMIC_RELAXED);
	}
	return device_refused(job, major, minor);
}

/*
 * Opens path (from dirfd, resolved as `resolve` says) as O_PATH (| flags) and reaches its
 * device with the attributes the kernel has cached (AT_STATX_DONT_SYNC, into stx): the
 * file system is asked nothing, so the device is known (and a stalled one refused) before
 * anything that may wait (FUSE, NFS). Returns the O_PATH descriptor or a negative errno.
 */
static int reach_path(int dirfd, const char *path, uint64_t flags, uint64_t resolve,
                      struct statx *stx, struct ember_broker_job *job)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC | flags, .resolve = resolve};
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	int err;

	if (fd < 0 || statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
	                    STATX_TYPE | STATX_MODE | STATX_INO, stx) < 0)
		return neg_errno();
	err = ember_broker_reach_device(job, stx->stx_dev_major, stx->stx_dev_minor);
	return err ? err : TAKE_FD(fd);
}

/*
 * Opens path (reach_path) for reading only once it is a regular file, of inode want_ino if
 * not 0, with the mode bits want_mode: a device, FIFO or socket that a process mounts or
 * links where a file should be is never opened. statfs and the open itself come after the
 * device was reached: they may wait.
 */
static int open_regular(int dirfd, const char *path, uint64_t resolve, ino_t want_ino,
                        mode_t want_mode, struct ember_broker_job *job)
{
	struct statx stx;
	_cleanup_close_ int pathfd = reach_path(dirfd, path, 0, resolve, &stx, job);
	struct ember_broker_file *f = &job->file;
	char self[32];
	struct statfs sfs;

	if (pathfd < 0)
		return pathfd;
	f->ino = stx.stx_ino;
	if (!S_ISREG(stx.stx_mode))
		return -EINVAL;
	if (want_ino && stx.stx_ino != want_ino)
		return -ESTALE;
	if ((stx.stx_mode & want_mode) != want_mode)
		return -EACCES;
	if (fstatfs(pathfd, &sfs) < 0)
		return neg_errno();
	f->fs_magic = (uint32_t)sfs.f_type;
	if (job->progress)
		__atomic_store_n(&job->progress->fs_magic, f->fs_magic, __ATOMIC_RELAXED);
	if (!ember_fs_is_local(f->fs_magic))
		f->flags |= EMBER_BROKER_REMOTE;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
	return open_ro(self);
}

static int validate_pid(const struct ember_msg_broker_req *req)
{
	return req->pid > 0 && req->pid <= (1u << 22) ? 0 : -EINVAL;
}

static int validate_build_id(const struct ember_msg_broker_req *req)
{
	size_t len = strnlen(req->arg, sizeof(req->arg));

	if (len == sizeof(req->arg) || len < 4 || len > BUILD_ID_MAX_HEX || len % 2)
		return -EINVAL;
	return ember_is_lower_hex(req->arg, len) ? 0 : -EINVAL;
}

/* /proc/PID/name, read-only. */
static int open_proc_file(const struct ember_msg_broker_req *req, const char *name)
{
	char path[64];
	int n = snprintf(path, sizeof(path), "/proc/%" PRIu32 "/%s", req->pid, name);

	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	return open_ro(path);
}

/* A mapping as the kernel's maps give it: its end, its file's inode and device. */
struct mapping {
	uint64_t end, ino;
	uint32_t dev[2];
};

/*
 * Finds the mapping of req->pid that starts at req->addr in the kernel's own
 * list (the symbolizer's claim is not trusted; maps_fd >= 0: the kernel's list in
 * a snapshot, taken over) and copies out its end, inode, device (m) and path. Returns
 * 0, -ENOENT (no such mapping, or not a file that still exists) or another
 * negative errno.
 */
static int find_mapping(const struct ember_msg_broker_req *req, int maps_fd, struct mapping *m,
                        char *path, size_t path_size)
{
	_cleanup_free_ char *line = NULL;
	_cleanup_close_ int fd = maps_fd >= 0 ? maps_fd : open_proc_file(req, "maps");
	_cleanup_fclose_ FILE *f = NULL;
	size_t cap = 0, total = 0;
	ssize_t n;
	int err = -ENOENT;

	if (fd < 0)
		return fd;
	f = fdopen(fd, "r");
	if (!f)
		return -ENOMEM;
	fd = -1; /* the stream owns it */
	while ((n = getline(&line, &cap, f)) > 0 && total < MAPS_MAX_BYTES) {
		unsigned long long start, end, off, inode;
		unsigned int major, minor;
		char perms[8];
		int path_at = 0;

		total += (size_t)n;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off,
		           &major, &minor, &inode, &path_at) < 7 ||
		    start != req->addr)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (!path_at || line[path_at] != '/' || !inode ||
		    ember_str_ends_with(line, " (deleted)"))
			break;
		if (ember_strlcpy(path, line + path_at, path_size)) {
			err = -ENAMETOOLONG;
			break;
		}
		*m = (struct mapping){end, inode, {major, minor}};
		err = 0;
		break;
	}
	return err;
}

static int open_in_root(int rootfd, const char *path, struct ember_broker_job *job)
{
	/* Never above the process's root (its container), through no link (the
	 * process could point one at anything the collector may read), and only
	 * a file anyone may read: a process names it, it is not the one mapped. */
	return open_regular(rootfd, path, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS, 0, S_IROTH, job);
}

int ember_broker_open_in_root(int rootfd, const char *path)
{
	struct ember_broker_job job = {0};

	return open_in_root(rootfd, path, &job);
}

/*
 * The file a process that is gone had mapped at req->addr: as the snapshot of its
 * maps (in_fd) names it, by that path inside its root (out_fd), if it is still
 * that device and inode. No mapping holds the inode any more, so a file given its
 * number since could be another: only a file anyone may read is served.
 */
static int open_gone_file(const struct ember_msg_broker_req *req, struct ember_broker_job *job)
{
	char path[4096];
	struct mapping m;
	int err = find_mapping(req, TAKE_FD(job->in_fd), &m, path, sizeof(path)), fd;

	if (!err)
		err = ember_broker_reach_device(job, m.dev[0], m.dev[1]);
	if (err)
		return err;
	fd = open_regular(job->out_fd, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, m.ino,
	                  S_IROTH, job);
	if (fd >= 0 && (job->file.dev_major != m.dev[0] || job->file.dev_minor != m.dev[1])) {
		close(fd);
		return -ESTALE;
	}
	job->file.flags |= EMBER_BROKER_SNAPSHOT;
	return fd;
}

/*
 * The very file mapped there, through /proc/PID/map_files: no path is
 * resolved, so nothing a process mounts or links over the path it mapped
 * (another file, maybe of the same inode number on another device) can be
 * handed out instead.
 */
static int open_mapped_file(const struct ember_broker *b, const struct ember_msg_broker_req *req,
                            struct ember_broker_job *job)
{
	char path[4096], link[80];
	_cleanup_close_ int rootfd = -1;
	struct mapping m, now;
	int err = find_mapping(req, -1, &m, path, sizeof(path)), fd;

	(void)b;
	if (job->gone)
		return open_gone_file(req, job);
	/* A stalled device (or, for the last worker, one that can stall) is refused before
	 * anything is looked up. map_files waits on the process's lock, not on the device: the
	 * device is reached (named if the open misses its deadline) only by a walk of the path. */
	if (!err)
		err = job->by_path ? ember_broker_reach_device(job, m.dev[0], m.dev[1])
		                   : device_refused(job, m.dev[0], m.dev[1]);
	if (err)
		return err;
	if (!job->by_path) {
		snprintf(link, sizeof(link), "/proc/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64,
		         req->pid, req->addr, m.end);
		return open_regular(AT_FDCWD, link, 0, m.ino, 0, job);
	}
	/* map_files waits for the lock: the same file by its path, the same device and inode. */
	snprintf(link, sizeof(link), "/proc/%" PRIu32 "/root", req->pid);
	rootfd = open(link, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return neg_errno();
	fd = open_regular(rootfd, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, m.ino, 0, job);
	if (fd < 0)
		return fd;
	/* Still mapped there after the open: the mapping holds its inode, so no other file
	 * (freed, its number reused) can be the one opened under that device and number. */
	if (job->file.dev_major != m.dev[0] || job->file.dev_minor != m.dev[1] ||
	    find_mapping(req, -1, &now, path, sizeof(path)) || now.end != m.end ||
	    now.ino != m.ino || now.dev[0] != m.dev[0] || now.dev[1] != m.dev[1]) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static int open_debug_file(const struct ember_broker *b, const struct ember_msg_broker_req *req,
                           struct ember_broker_job *job)
{
	struct statx stx;
	/* The walk below looks names up on the debug tree's file system. */
	_cleanup_close_ int dirfd = reach_path(AT_FDCWD, b->debug_root, O_DIRECTORY, 0, &stx, job);
	char rel[BUILD_ID_MAX_HEX + 32];

	if (dirfd < 0)
		return dirfd;
	snprintf(rel, sizeof(rel), ".build-id/%.2s/%s.debug", req->arg, req->arg + 2);
	/* Symbolic links inside the debug tree are fine, out of it not. */
	return open_regular(dirfd, rel, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, 0, 0, job);
}

/* A plain file name: no '/', not "." or "..", printable. */
static int validate_debuglink(const struct ember_msg_broker_req *req)
{
	size_t len = strnlen(req->arg, sizeof(req->arg));

	if (validate_pid(req) || !len || len == sizeof(req->arg) || !strcmp(req->arg, ".") ||
	    !strcmp(req->arg, ".."))
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (req->arg[i] == '/' || req->arg[i] <= ' ' || req->arg[i] > '~')
			return -EINVAL;
	return 0;
}

/*
 * A .gnu_debuglink file of the file mapped at req->addr: beside it, in
 * .debug/ beside it, or under the debug root plus its directory; all inside
 * the process's own root (ember_broker_open_in_root).
 */
static int open_debuglink(const struct ember_broker *b, const struct ember_msg_broker_req *req,
                          struct ember_broker_job *job)
{
	char dir[4096], cand[4096 + 256], root[64];
	_cleanup_close_ int rootfd = -1;
	struct mapping m;
	int fd = -ENOENT, err, n;

	err = find_mapping(req, -1, &m, dir, sizeof(dir));
	if (err)
		return err;
	*strrchr(dir, '/') = '\0'; /* find_mapping returns absolute paths only */
	snprintf(root, sizeof(root), "/proc/%" PRIu32 "/root", req->pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return neg_errno();
	/* The names are looked up beside the mapped file, on its file system first. */
	err = ember_broker_reach_device(job, m.dev[0], m.dev[1]);
	for (int i = 0; i < 3 && !err && fd < 0; i++) {
		if (i == 2)
			n = snprintf(cand, sizeof(cand), "%s%s/%s", b->debug_root, dir, req->arg);
		else
			n = snprintf(cand, sizeof(cand), i ? "%s/.debug/%s" : "%s/%s", dir,
			             req->arg);
		if (n > 0 && (size_t)n < sizeof(cand))
			fd = open_in_root(rootfd, cand, job);
		/* A stall ends the search; otherwise the next candidate. */
		if (fd == -ETIMEDOUT)
			err = fd;
	}
	return err ? err : fd;
}

/* Facts for OTLP resources: the cgroup list (container id), the executable. strcmp with
 * a literal reads no further than the literal's length: arg need not end in a NUL. */
static int validate_proc_file(const struct ember_msg_broker_req *req)
{
	if (validate_pid(req) || (strcmp(req->arg, "cgroup") && strcmp(req->arg, "exe")))
		return -EINVAL;
	return 0;
}

/* The executable is opened on its own file system (it may be FUSE): as any mapped file. */
static int open_named_proc_file(const struct ember_broker *b,
                                const struct ember_msg_broker_req *req,
                                struct ember_broker_job *job)
{
	char path[64];

	(void)b;
	if (strcmp(req->arg, "exe")) {
		job->file.fs_magic = PROC_SUPER_MAGIC;
		return open_proc_file(req, req->arg);
	}
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/exe", req->pid);
	return open_regular(AT_FDCWD, path, 0, 0, 0, job);
}

/*
 * A JIT's perf map: /tmp/perf-N.map inside the process's root, N the PID it knows itself by
 * (the last of its NSpid), through no link, a regular file of the process's user (the owner
 * of /proc/PID) or root's: one anybody else left there is a name planted for it.
 */
static int open_perf_map(const struct ember_broker *b, const struct ember_msg_broker_req *req,
                         struct ember_broker_job *job)
{
	char path[64];
	uint32_t nspid;
	_cleanup_close_ int rootfd = -1, fd = -1;
	struct statx proc;
	struct stat map;
	int err = ember_proc_nspid(req->pid, &nspid);

	(void)b;
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/root", req->pid);
	if (err || (rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    statx(AT_FDCWD, dirname(path), AT_STATX_DONT_SYNC, STATX_UID, &proc) < 0)
		return err ? err : neg_errno();
	snprintf(path, sizeof(path), "/tmp/perf-%" PRIu32 ".map", nspid);
	fd = open_regular(rootfd, path, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS, 0, 0, job);
	if (fd < 0 || fstat(fd, &map) < 0)
		return fd < 0 ? fd : neg_errno();
	return map.st_uid == proc.stx_uid || !map.st_uid ? TAKE_FD(fd) : -EPERM;
}

/* A snapshot: the maps the collector opened (in_fd) copied into its memfd (out_fd), which the
 * reply carries back. Empty: the process was gone already. */
static int copy_maps(struct ember_broker_job *job)
{
	char buf[16384];
	size_t total = 0;
	ssize_t n;

	while ((n = read(job->in_fd, buf, sizeof(buf))) > 0) {
		total += (size_t)n;
		if (total > EMBER_SNAPSHOT_MAX_BYTES || write(job->out_fd, buf, (size_t)n) != n)
			return -EFBIG;
	}
	if (n < 0 || !total)
		return n < 0 ? neg_errno() : -ESRCH;
	return TAKE_FD(job->out_fd);
}

/* clang-format off */
static const struct broker_handler handlers[EMBER_BROKER_WHAT_MAX] = {
	/*                             name           pid?   waits? per peer  validate            open or file */
	[EMBER_BROKER_MAPS]        = {"maps",        true,  false, 0,  validate_pid,       NULL, "maps"},
	[EMBER_BROKER_MAPPED_FILE] = {"mapped-file", true,  true,  0,  validate_pid,       open_mapped_file,     NULL},
	[EMBER_BROKER_KALLSYMS]    = {"kallsyms",    false, false, 64, NULL,               NULL, "/proc/kallsyms"},
	[EMBER_BROKER_MEM]         = {"mem",         true,  false, 0,  validate_pid,       NULL, "mem"},
	[EMBER_BROKER_MODULES]     = {"modules",     false, false, 64, NULL,               NULL, "/proc/modules"},
	[EMBER_BROKER_DEBUG_FILE]  = {"debug-file",  false, true,  0,  validate_build_id,  open_debug_file,      NULL},
	[EMBER_BROKER_DEBUGLINK]   = {"debuglink",   true,  true,  0,  validate_debuglink, open_debuglink,       NULL},
	[EMBER_BROKER_PROC_FILE]   = {"proc-file",   true,  true,  0,  validate_proc_file, open_named_proc_file, NULL},
	[EMBER_BROKER_PERF_MAP]    = {"perf-map",    true,  true,  0,  validate_pid,       open_perf_map,        NULL},
	[EMBER_BROKER_KERNEL_NOTES] = {"kernel-notes", false, false, 64, NULL,             NULL, "/sys/kernel/notes"},
};
/* clang-format on */

const char *ember_broker_what_name(uint32_t what)
{
	return what < EMBER_BROKER_WHAT_MAX && handlers[what].name ? handlers[what].name : "?";
}

void ember_broker_new_peer(struct ember_broker *b)
{
	memset(b->served_peer, 0, sizeof(b->served_peer));
}

void ember_broker_init(struct ember_broker *b, struct ember_procs *procs)
{
	memset(b, 0, sizeof(*b));
	b->procs = procs;
	b->debug_root = "/usr/lib/debug";
	b->pid_max_age_ns = 10ull * 60 * 1000000000ull;
	b->rate_per_s = 2000;
	b->burst = 10000;
	b->tokens = b->burst;
}

static bool take_token(struct ember_broker *b, uint64_t now_ns)
{
	if (now_ns > b->refill_ns) {
		b->tokens += (double)(now_ns - b->refill_ns) * b->rate_per_s / 1e9;
		if (b->tokens > b->burst)
			b->tokens = b->burst;
		b->refill_ns = now_ns;
	}
	if (b->tokens < 1.0)
		return false;
	b->tokens -= 1.0;
	return true;
}

int ember_broker_open(const struct ember_broker *b, const struct ember_msg_broker_req *req,
                      struct ember_broker_job *job)
{
	const struct broker_handler *h;

	if (req->what >= EMBER_BROKER_WHAT_MAX || !handlers[req->what].name)
		return -EINVAL;
	h = &handlers[req->what];
	if (job->snapshot)
		return req->what == EMBER_BROKER_MAPS ? copy_maps(job) : -EINVAL;
	if (h->open)
		return h->open(b, req, job);
	job->file.fs_magic = PROC_SUPER_MAGIC;
	return h->needs_pid ? open_proc_file(req, h->file) : open_ro(h->file);
}

static int refuse(struct ember_broker *b, const struct ember_msg_broker_req *req, int err)
{
	b->refused[req->what]++;
	log_debug("broker: refused %s for pid %" PRIu32 ": %s", handlers[req->what].name, req->pid,
	          strerror(-err));
	return err;
}

int ember_broker_complete(struct ember_broker *b, const struct ember_msg_broker_req *req, int fd,
                          uint64_t now_ns)
{
	int err;

	if (fd < 0)
		return refuse(b, req, fd);
	/* Still the same process after the open: the descriptor is its own. */
	if (handlers[req->what].needs_pid &&
	    (err = ember_procs_check(b->procs, req->pid, now_ns, b->pid_max_age_ns))) {
		close(fd);
		return refuse(b, req, err);
	}
	b->served[req->what]++;
	b->served_peer[req->what]++;
	return fd;
}

int ember_broker_handle(struct ember_broker *b, const struct ember_msg_broker_req *req,
                        uint64_t now_ns, struct ember_broker_file *file)
{
	struct ember_broker_job job = {0};
	const struct broker_handler *h;
	int err, fd;

	memset(file, 0, sizeof(*file));
	if (req->what >= EMBER_BROKER_WHAT_MAX || !handlers[req->what].name)
		return -EINVAL;
	h = &handlers[req->what];
	if (!take_token(b, now_ns)) {
		b->rate_limited++;
		return -EAGAIN;
	}
	err = h->per_peer && b->served_peer[req->what] >= h->per_peer ? -EPERM : 0;
	if (!err && h->validate)
		err = h->validate(req);
	if (!err && h->needs_pid)
		err = ember_procs_check(b->procs, req->pid, now_ns, b->pid_max_age_ns);
	/* Gone: its maps as they were while it ran, if a snapshot was made. */
	if (err && req->what == EMBER_BROKER_MAPS && (err == -ESRCH || err == -EPERM) &&
	    (fd = ember_procs_snapshot_open(b->procs, req->pid, now_ns, false)) >= 0) {
		file->flags = EMBER_BROKER_SNAPSHOT;
		b->served[req->what]++;
		b->served_peer[req->what]++;
		return fd;
	}
	/* Gone: the files it mapped, through that snapshot, by a worker (ember_pool_submit). */
	if (err && req->what == EMBER_BROKER_MAPPED_FILE && (err == -ESRCH || err == -EPERM) &&
	    b->pooled) {
		file->flags = EMBER_BROKER_SNAPSHOT;
		return -EINPROGRESS;
	}
	if (err)
		return refuse(b, req, err);
	/* A process's cgroup list waits on nothing; its executable is a file like any mapped. */
	if (h->may_wait && b->pooled &&
	    (req->what != EMBER_BROKER_PROC_FILE || !strcmp(req->arg, "exe")))
		return -EINPROGRESS;
	fd = ember_broker_open(b, req, &job);
	*file = job.file;
	return ember_broker_complete(b, req, fd, now_ns);
}
