/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the broker's opens that may wait are made, so that the collector's
 * loop never waits on a profiled process or a file system. An open can wait
 * on a process (reading its memory map takes a lock that one of its threads
 * may hold while it waits for a file system) or on a file system that stopped
 * answering (FUSE, NFS, CIFS, 9p, ...; a FUSE request its daemon never answers
 * cannot even be killed).
 *
 * Even an open on a local disk can wait: the lookup of a process's
 * /proc/PID/map_files entry takes its memory-map lock, and a second lookup of
 * the same name waits for the first one uninterruptibly (d_alloc_parallel), so
 * the process itself, looking up its own entry, could keep the collector from
 * ever exiting. Every such open therefore goes to workers: a few helper processes, forked at
 * start-up before the eBPF programs are loaded, keeping only
 * CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH and CAP_CHECKPOINT_RESTORE and the
 * "worker" group of seccomp/collector.policy. A stuck worker is a process of
 * its own: it keeps nobody from exiting, and dies with the collector (or,
 * if the kernel will not let it, when its request ends).
 *
 * Each open has a deadline (moved on a little while the worker only waits for the
 * CPU, as on a loaded host). One that misses it is answered -ETIMEDOUT and
 * what it waited on is marked stalled: the device it had reached, or else the
 * process. Later requests for it are refused at once. The worker left waiting
 * is the stall's probe: when it comes back, the stall is over; should it exit
 * without an answer, the stall ends with it and the next request that needs
 * it is the next probe. When no worker is free, requests that need one are
 * refused. Workers' answers are checked as messages of the control
 * protocol; what they report is used as numbers only.
 */
#ifndef EMBER_COLLECTOR_BROKER_POOL_H
#define EMBER_COLLECTOR_BROKER_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "collector/broker.h"

#define EMBER_POOL_WORKERS     4
#define EMBER_POOL_DEADLINE_NS (1000ull * 1000000ull)
/* A worker that waits for the CPU at its deadline gets another quarter, up to 8 times. */
#define EMBER_POOL_MAX_EXTENSIONS 8

enum ember_worker_state {
	EMBER_WORKER_IDLE = 0,
	EMBER_WORKER_BUSY,  /* on a job, within its deadline */
	EMBER_WORKER_STUCK, /* missed a deadline: left waiting */
	EMBER_WORKER_GONE,  /* exited or broke the protocol */
};

struct ember_worker {
	pid_t pid;
	int sock;
	enum ember_worker_state state;
	struct ember_msg_broker_req req; /* the job, as the symbolizer asked */
	uint32_t job;                    /* its sequence number */
	uint64_t peer_gen;               /* the connection that asked */
	uint64_t deadline_ns;
	unsigned int extended; /* times its deadline moved on: it waited for the CPU */
	int stall;             /* STUCK: the stall it waits on (its probe); -1 */
	bool by_path; /* the job reaches a mapped file by its path (EMBER_BROKER_JOB_BY_PATH) */
	uint32_t snapshot_gen; /* a snapshot of the maps of that process (seen_pids.h); 0: not */
};

/* A device (dev_major:dev_minor) or a process (pid, no device) that stopped answering. */
struct ember_stall {
	bool used;
	uint32_t pid;
	uint32_t dev_major, dev_minor, fs_magic;
	uint64_t since_ns;
	uint64_t refused;
};

#define EMBER_POOL_MAX_STALLS (2 * EMBER_POOL_WORKERS)

struct ember_pool {
	struct ember_worker workers[EMBER_POOL_WORKERS];
	unsigned int nworkers;
	struct ember_broker_progress *progress; /* one per worker, shared with it */
	struct ember_stall stalls[EMBER_POOL_MAX_STALLS];
	uint64_t deadline_ns;
	uint32_t next_job;
	/* worker: the open a worker makes (ember_broker_open; tests put their own) */
	int (*open)(const struct ember_broker *b, const struct ember_msg_broker_req *req,
	            struct ember_broker_job *job);
	struct ember_procs *procs; /* the broker's: snapshots of processes gone */
	uint64_t by_worker, abandoned, refused_stalled, refused_busy, late;
};

/* An open that ended (answered, or past its deadline): the reply the symbolizer waits for. */
struct ember_pool_done {
	struct ember_msg_broker_req req;
	uint64_t peer_gen;
	int fd; /* or a negative errno */
	struct ember_broker_file file;
	uint32_t snapshot_gen; /* not 0: a snapshot for seen_pids.h, no answer to the symbolizer */
};

/*
 * Forks n workers (at most EMBER_POOL_WORKERS) that open with p->open (set
 * it before; NULL: ember_broker_open) for b. Call before the eBPF programs
 * are loaded (a worker closes every descriptor but its socket all the same).
 * Sets b->pooled. Returns 0 or a negative errno.
 */
int ember_pool_start(struct ember_pool *p, struct ember_broker *b, unsigned int n);
/* Closes the workers' sockets: idle ones exit, stuck ones when they can. Never waits. */
void ember_pool_stop(struct ember_pool *p);

/*
 * Hands a request ember_broker_handle left to the pool (-EINPROGRESS) to a free
 * worker, with the snapshot and root of a process gone when it says so
 * (EMBER_BROKER_SNAPSHOT in file->flags; -ENOENT when they are not kept). Returns 0 (the answer
 * comes from ember_pool_on_readable or ember_pool_expire) or a negative errno to answer now:
 * -ETIMEDOUT with EMBER_BROKER_STALLED in file->flags for a stalled process, -EBUSY when no worker
 * is free.
 */
int ember_pool_submit(struct ember_pool *p, const struct ember_msg_broker_req *req,
                      uint64_t peer_gen, uint64_t now_ns, struct ember_broker_file *file);

/*
 * Copies the maps of process tgid (maps_fd: /proc/PID/maps, opened and checked by the
 * collector) into memfd, a snapshot for generation gen, on a spare worker: two stay free for
 * the symbolizer's requests, and none while a worker waits on a stall. Returns 0 (the end comes as
 * an ember_pool_done with snapshot_gen), -EBUSY or another negative errno.
 */
int ember_pool_snapshot(struct ember_pool *p, uint32_t tgid, uint32_t gen, int maps_fd, int memfd,
                        uint64_t now_ns);

/* Worker i's socket is readable. Returns 1 with *done filled when an open the symbolizer
 * waits for ended, else 0 (a late answer, now discarded, or nothing). */
int ember_pool_on_readable(struct ember_pool *p, unsigned int i, uint64_t now_ns,
                           struct ember_pool_done *done);

/* Returns 1 with *done filled (-ETIMEDOUT) for one worker past its deadline; 0 when none is. */
int ember_pool_expire(struct ember_pool *p, uint64_t now_ns, struct ember_pool_done *done);

/* Milliseconds until the next deadline of a worker (for epoll_wait), -1 when none runs. */
int ember_pool_timeout_ms(const struct ember_pool *p, uint64_t now_ns);

/* Workers stuck now. */
unsigned int ember_pool_stuck(const struct ember_pool *p);

#endif
