/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The broker opens files for the symbolizer, which cannot open anything
 * itself. In the spirit of OpenSSH's monitor, every request type has one
 * entry in a dispatch table: whether it needs a recently sampled PID, a
 * validator for its arguments, and the function that opens the file. Every
 * reply is a read-only descriptor or a negative errno.
 *
 * Nothing the collector's loop does may wait on a profiled process or a file
 * system that stopped answering. Requests that can (they read a process's
 * memory map, whose lock a process can hold for ever, or open one of its
 * files, which may sit on FUSE or NFS) are marked in the table: with a pool
 * of workers (broker_pool.h) they are handed to it, opened here otherwise (tests).
 * Such an open says how far it got in an ember_broker_progress the collector
 * reads when it misses its deadline, and refuses the devices listed there as
 * stalled.
 */
#ifndef EMBER_COLLECTOR_BROKER_H
#define EMBER_COLLECTOR_BROKER_H

#include <stdbool.h>
#include <stdint.h>

#include "ipc/proto.h"
#include "collector/seen_pids.h"

#define EMBER_BROKER_MAX_STALLS 8

/*
 * Shared between the collector and one worker (MAP_SHARED): what the
 * collector tells the worker before a job, and how far the job has got.
 * Each side treats the other's fields as untrusted numbers.
 */
struct ember_broker_progress {
	/* Written by the collector before it sends a job. */
	uint32_t nrefuse;
	struct {
		uint32_t major, minor;
	} refuse[EMBER_BROKER_MAX_STALLS]; /* devices that stalled: not to be touched */
	/* The last free worker: it touches no file system but a block device's (major 0 is
	 * FUSE, NFS, CIFS, ... but also tmpfs, overlayfs, btrfs): stalls cannot take them all. */
	uint32_t block_only;
	/* Written by the worker: the job it works on (the request's sequence number), and the
	 * device and file system it has reached (0:0 while it waits on the process). */
	volatile uint32_t job, dev_major, dev_minor, fs_magic;
};

/* One open of a request that may wait. */
struct ember_broker_job {
	/* Where it says how far it got and finds the stalled devices; NULL: nobody watches. */
	struct ember_broker_progress *progress;
	/* The process's memory-map lock is stalled: a mapped file is opened by the path the
	 * kernel's maps give, inside the process's root, if it is still the mapped inode. */
	bool by_path;
	/* A snapshot of a process's maps (seen_pids.h): in_fd, the maps the collector opened,
	 * copied into its memfd out_fd. */
	bool snapshot;
	/* A mapped file of a process that is gone: in_fd, the snapshot of its maps; out_fd,
	 * its root. */
	bool gone;
	int in_fd, out_fd;
	struct ember_broker_file file; /* what the reply says */
};

/* A job's flags in the reserved field of the request a worker gets. */
#define EMBER_BROKER_JOB_BY_PATH  1u
#define EMBER_BROKER_JOB_SNAPSHOT 2u
#define EMBER_BROKER_JOB_GONE     4u

struct ember_broker {
	struct ember_procs *procs;
	/* Set when a pool (broker_pool.h) makes the opens that may wait: ember_broker_handle
	 * leaves them to it. */
	bool pooled;
	const char *debug_root;  /* "/usr/lib/debug" */
	uint64_t pid_max_age_ns; /* serve PIDs sampled at most this long ago */
	/* Token bucket capping the request rate. */
	uint32_t rate_per_s;
	uint32_t burst;
	double tokens;
	uint64_t refill_ns;
	uint64_t served[EMBER_BROKER_WHAT_MAX];
	uint32_t served_peer[EMBER_BROKER_WHAT_MAX]; /* to the current connection */
	uint64_t refused[EMBER_BROKER_WHAT_MAX];
	uint64_t rate_limited;
};

void ember_broker_init(struct ember_broker *b, struct ember_procs *procs);
/* A new symbolizer connected: the per-connection limits start again. */
void ember_broker_new_peer(struct ember_broker *b);

/*
 * Serves one request (already copied and size-checked by the protocol
 * layer). Returns a read-only descriptor the caller sends and closes, or a
 * negative errno for the reply; -EINPROGRESS when the request passed its
 * checks but may wait and b->pooled: the caller hands it to the pool and,
 * with the pool's answer, calls ember_broker_complete. file gets what the
 * reply says about the file. The maps of a process that is gone are its
 * snapshot, if one was made (EMBER_BROKER_SNAPSHOT); its mapped files are
 * opened by the paths the snapshot gives, inside its root, if they are still
 * the device and inode mapped and anyone may read them: -EINPROGRESS, with
 * EMBER_BROKER_SNAPSHOT in file->flags (ember_pool_submit hands the worker
 * the snapshot and the root).
 */
int ember_broker_handle(struct ember_broker *b, const struct ember_msg_broker_req *req,
                        uint64_t now_ns, struct ember_broker_file *file);

/*
 * The open itself, for a request ember_broker_handle checked, by a worker. Returns
 * a descriptor or a negative errno: -ETIMEDOUT with EMBER_BROKER_STALLED when it
 * reached a device listed as stalled.
 */
int ember_broker_open(const struct ember_broker *b, const struct ember_msg_broker_req *req,
                      struct ember_broker_job *job);

/*
 * An open reached a file system on device major:minor: says so in the job's
 * progress (the collector names it if the open misses its deadline). Returns
 * 0, or -ETIMEDOUT (EMBER_BROKER_STALLED) for a device listed as stalled.
 */
int ember_broker_reach_device(struct ember_broker_job *job, uint32_t major, uint32_t minor);

/*
 * The end of a request a worker opened (fd, or a negative errno): the process
 * must still be the one that was asked about; counted like any other.
 * Returns the descriptor to send or a negative errno (fd is closed then).
 */
int ember_broker_complete(struct ember_broker *b, const struct ember_msg_broker_req *req, int fd,
                          uint64_t now_ns);

const char *ember_broker_what_name(uint32_t what);

/*
 * Opens a file a process names (a debug link) inside its root rootfd: resolved
 * never above it and through no symbolic link, and served only if it is a
 * regular file that anyone may read. Returns the descriptor or a negative errno.
 */
int ember_broker_open_in_root(int rootfd, const char *path);

#endif
