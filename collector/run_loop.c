// SPDX-License-Identifier: Apache-2.0
#include "collector/run_loop.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/param.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/bpf_loader.h"
#include "collector/broker.h"
#include "collector/broker_pool.h"
#include "collector/peer.h"
#include "collector/seen_pids.h"
#include "collector/spawn.h"
#include "collector/ring_drain.h"
#include "ipc/endpoint.h"
#include "seccomp/caps.h"
#include "seccomp/policy.h"
#include "shared/cleanup.h"
#include "collector/table_loader.h"
#include "shared/clock.h"
#include "shared/err.h"
#include "shared/log.h"
#include "shared/str.h"

/* The kernel's rings are drained once a tick (EMBER_COLLECTOR_TICK_MS). The eBPF side wakes
 * the collector early for what cannot wait; the symbolizer asks when an interval ends. */
#define FLUSH_TIMEOUT_NS     (300ull * 1000000000ull)
#define PROCS_CAPACITY       32768
#define HANDSHAKE_TIMEOUT_NS (15ull * 1000000000ull)

enum event_tag {
	TAG_BPF = 1,
	TAG_SIGNAL,
	TAG_PEER,
	TAG_CHILD,
	TAG_LISTEN,
	TAG_WORKER,
	TAG_COMMAND
};

struct recorder {
	struct ember_record_opts *opts;
	const struct ember_core_config *cfg;
	struct ember_bpf bpf;
	struct ember_procs procs;
	struct ember_drain drain;
	struct ember_broker broker;
	struct ember_pool pool;
	struct ember_peer peer;
	struct ember_tables tables;
	int epfd, sigfd, child_pidfd, listen_fd;
	pid_t child;
	pid_t command;      /* while it runs */
	int command_status; /* how it ended (wait status) */
	int command_signals;
	uint64_t stop_ns, flush_deadline_ns, tick_ns; /* tick_ns: the last tick's (or the start) */
	uint64_t ticks, map_bytes; /* map_bytes: the BPF maps' memory, last read */
	/* listed: the processes already running were listed to the connected symbolizer */
	bool stopping, finished, failed, listed;
	bool undelivered; /* outputs written, but not every profile reached the OTLP endpoint */
	bool usage;       /* the symbolizer refused its arguments (exit status 2) */
	bool daemon;      /* serving symbolizers on a socket, not a child */
	bool passed_closed;
};

/* The symbolizer draws the progress line (--progress) in place; log lines first erase it. */
static void erase_progress(void)
{
	if (write(STDERR_FILENO, "\r\033[K", 4) < 0) /* carriage return, erase the line */
		return;
}

/* tag, and for workers their index in the upper half */
static int epoll_add(int epfd, int fd, uint32_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? neg_errno() : 0;
}

/* The outputs exist from the start (the front end made them): a failed run removes them. */
static void unlink_outputs(const struct ember_core_config *c)
{
	for (size_t i = 0; i < c->noutputs; i++)
		unlink(c->outputs[i].path);
}

/* The descriptors passed for the symbolizer: the collector keeps none once it has them. */
static void close_passed(struct recorder *r)
{
	if (r->passed_closed)
		return;
	for (size_t i = 0; i < r->cfg->npassed; i++)
		close(r->cfg->passed_fds[i]);
	close(r->cfg->symbolizer_exe_fd);
	close(r->cfg->symbolizer_config_fd);
	r->passed_closed = true;
}

static void begin_stop(struct recorder *r, const char *why)
{
	uint64_t drops[EMBER_DROP_MAX];

	if (r->stopping)
		return;
	r->stopping = true;
	log_debug("stopping: %s", why);
	ember_bpf_stop_sampling(&r->bpf);
	ember_bpf_drain(&r->bpf);
	if (!ember_bpf_read_drops(&r->bpf, drops))
		ember_drain_account_bpf_drops(&r->drain, drops);
	r->flush_deadline_ns = ember_monotonic_ns() + FLUSH_TIMEOUT_NS;
	ember_drain_report_memory(&r->drain, ember_bpf_map_bytes(&r->bpf)); /* the final counts */
	if (ember_peer_send_flush(&r->peer, &r->drain, true)) {
		if (r->daemon)
			log_info("no symbolizer connected: the last samples are lost");
		else
			log_error("the symbolizer is not connected: no outputs can be written");
		r->failed = !r->daemon;
		r->finished = true;
	}
}

static void drop_peer(struct recorder *r)
{
	if (r->peer.sock >= 0)
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->peer.sock, NULL);
	if (r->stopping || !r->daemon) /* no peer follows: the maps go as the run ends */
		r->peer.tables = NULL;
	ember_peer_detach(&r->peer, &r->drain);
	r->listed = false;
}

/* Records were written to the symbolizer's ring: it is told, unless writing found a position
 * it could not have reached (checked at every write: a quiet host's tick is 30 s apart). */
static void hand_over(struct recorder *r)
{
	if (ember_peer_active(&r->peer) && r->peer.ring.bad_positions) {
		log_warn("symbolizer (pid %d) wrote an impossible ring position: disconnecting it",
		         r->peer.pid);
		drop_peer(r);
	} else if (ember_peer_active(&r->peer)) {
		ember_ring_notify(&r->peer.ring);
	}
}

/* What the kernel's rings hold and the losses counted, to the symbolizer: each tick, and
 * when the symbolizer asks (DRAIN) for no more than that. */
static void drain_now(struct recorder *r)
{
	uint64_t drops[EMBER_DROP_MAX];

	ember_bpf_drain(&r->bpf);
	if (!ember_bpf_read_drops(&r->bpf, drops))
		ember_drain_account_bpf_drops(&r->drain, drops);
	ember_drain_flush_lost(&r->drain);
	hand_over(r);
}

static void on_tick(struct recorder *r, uint64_t now_ns)
{
	if (r->finished)
		return;
	if (!r->stopping) {
		/* Samples wake the collector only when urgent: the tick drains the rest. */
		drain_now(r);
		/* The maps' memory barely moves (most are preallocated) and is read from a /proc
		 * file per map (a third of a millisecond): every tenth report, and at the end. */
		if (r->ticks % (10 * EMBER_COLLECTOR_MEMORY_EVERY_TICKS) == 1)
			r->map_bytes = ember_bpf_map_bytes(&r->bpf);
		if (r->ticks++ % EMBER_COLLECTOR_MEMORY_EVERY_TICKS == 1)
			ember_drain_report_memory(&r->drain, r->map_bytes);
		if (r->cfg->duration_ms && now_ns >= r->stop_ns && r->command)
			log_info("the duration is over; ember exits when the command does");
		if (r->cfg->duration_ms && now_ns >= r->stop_ns)
			begin_stop(r, "duration reached");
	} else if (now_ns > r->flush_deadline_ns) {
		log_error("the symbolizer did not finish its outputs within %llu s; giving up",
		          FLUSH_TIMEOUT_NS / 1000000000ull);
		r->failed = true;
		r->finished = true;
	}
}

static void on_signal(struct recorder *r)
{
	struct signalfd_siginfo si;

	if (read(r->sigfd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP && r->daemon)
		return; /* the daemon keeps no files to reopen */
	if (r->command > 0) {
		/* Signals are the command's: ember stops when it exits. The terminal's (Ctrl-C)
		 * reached it already (one process group); others are passed on; a third kills it.
		 */
		if (++r->command_signals >= 3)
			kill(r->command, SIGKILL);
		else if (si.ssi_code != SI_KERNEL)
			kill(r->command, (int)si.ssi_signo);
		return;
	}
	if (!r->stopping) {
		begin_stop(r, "signal");
		return;
	}
	/* Within half a second, the same request twice: timeout(1) signals its child, then its
	 * process group, which holds the child too. A person's second Ctrl-C comes later. */
	if (ember_monotonic_ns() + FLUSH_TIMEOUT_NS < r->flush_deadline_ns + 500000000ull)
		return;
	log_warn("stopping without waiting for the outputs (second signal)");
	r->failed = true;
	r->finished = true;
}

static void describe_child_exit(int status)
{
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		log_error("the symbolizer was killed by its sandbox (SIGSYS: a forbidden system "
		          "call); please report this with `ember record --log-level debug` output");
	else if (WIFSIGNALED(status))
		log_error("the symbolizer was killed by signal %d", WTERMSIG(status));
	else if (WIFEXITED(status) && WEXITSTATUS(status))
		log_error("the symbolizer failed (exit status %d); see its messages above",
		          WEXITSTATUS(status));
}

static void on_peer(struct recorder *r, uint64_t now_ns)
{
	int err = ember_peer_on_readable(&r->peer, &r->broker, &r->drain, now_ns);

	/* FLUSHED can come together with the peer's goodbye (err): its status first. */
	if (r->stopping && r->peer.flushed && r->peer.flush_status == -EREMOTEIO)
		r->undelivered = r->cfg->flags & EMBER_CORE_EXPORT;
	if (err) {
		drop_peer(r);
		/* The daemon samples on (counting losses) until a symbolizer connects
		 * again; a child that is gone or misbehaving cannot write outputs now. */
		if (r->daemon)
			r->finished = r->stopping;
		else if (!r->peer.flushed && r->child > 0)
			kill(r->child, SIGKILL); /* its exit (described there) ends the run */
		return;
	}
	/* A new symbolizer loads the tables of the processes already running, now. */
	if (!r->listed && !r->stopping && ember_peer_active(&r->peer))
		ember_bpf_list_running(&r->bpf, ember_drain_on_proc_event, &r->drain);
	r->listed |= ember_peer_active(&r->peer);
	if (r->stopping && r->peer.flushed) {
		if (r->peer.flush_status && r->peer.flush_status != -EREMOTEIO) {
			log_error_errno(r->peer.flush_status,
			                "the symbolizer could not write the outputs: %m");
			r->failed = true;
		}
		r->finished |= r->daemon;
	}
}

/* A worker's open ended (or missed its deadline): the symbolizer that asked gets the answer. */
static void deliver(struct recorder *r, struct ember_pool_done *d, uint64_t now_ns)
{
	int fd;

	if (d->snapshot_gen) {
		ember_procs_snapshot_done(&r->procs, d->req.pid, d->snapshot_gen, d->fd, now_ns);
		return;
	}
	/* A gone process's file, found through its snapshot: no process left to check. */
	fd = d->file.flags & EMBER_BROKER_SNAPSHOT
	         ? d->fd
	         : ember_broker_complete(&r->broker, &d->req, d->fd, now_ns);

	if (d->peer_gen == r->peer.gen && ember_peer_active(&r->peer))
		ember_peer_send_reply(&r->peer, d->req.id, fd, &d->file); /* closes fd */
	else
		ember_closep(&fd);
}

static void on_worker(struct recorder *r, unsigned int i, uint64_t now_ns)
{
	struct ember_pool_done done;

	/* A worker sends one answer per job: read them all. */
	for (int n = 0; n < 4 && r->pool.workers[i].sock >= 0; n++)
		if (ember_pool_on_readable(&r->pool, i, now_ns, &done) == 1)
			deliver(r, &done, now_ns);
}

static void expire_workers(struct recorder *r, uint64_t now_ns)
{
	struct ember_pool_done done;

	while (ember_pool_expire(&r->pool, now_ns, &done))
		deliver(r, &done, now_ns);
}

/* Snapshots of new processes' maps that are due (seen_pids.h), while a spare worker is free
 * (one that finds none waits for the process's next sample that makes one due). */
static void take_snapshots(struct recorder *r, uint64_t now_ns)
{
	uint32_t pid, gen;
	int memfd, err = 0;

	while (!err && ember_procs_snapshot_due(&r->procs, now_ns, &pid, &gen, &memfd)) {
		struct ember_msg_broker_req req = {.what = EMBER_BROKER_MAPS, .pid = pid};
		struct ember_broker_job job = {.in_fd = -1, .out_fd = -1};
		int fd = ember_broker_open(&r->broker, &req, &job);

		/* Still that process after the open: the descriptor reads its own maps. */
		err = fd < 0 ? fd : ember_procs_check(&r->procs, pid, now_ns, UINT64_MAX);
		if (!err)
			err = ember_pool_snapshot(&r->pool, pid, gen, fd, memfd, now_ns);
		ember_closep(&fd);
		if (err)
			ember_procs_snapshot_done(&r->procs, pid, gen, err, now_ns);
		err = err == -EBUSY;
	}
}

static void on_child_exit(struct recorder *r)
{
	int status = 0;

	if (waitpid(r->child, &status, WNOHANG) <= 0)
		return;
	epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->child_pidfd, NULL);
	r->child = 0;
	/* What it sent before it exited, FLUSHED among it, may still wait in the socket (the
	 * socket reads at most 64 messages a call); its end of the stream comes after. */
	for (int i = 0; i < 64 && ember_peer_connected(&r->peer) && !r->peer.flushed; i++)
		on_peer(r, ember_monotonic_ns());
	if (!(r->stopping && r->peer.flushed && WIFEXITED(status) && !WEXITSTATUS(status))) {
		describe_child_exit(status);
		if (!r->stopping || !r->peer.flushed)
			log_error("the recording ended without complete outputs");
		r->failed = true;
	}
	r->finished = true;
}

static void on_command_exit(struct recorder *r)
{
	if (waitpid(r->command, &r->command_status, WNOHANG) <= 0)
		return;
	epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->opts->command.pidfd, NULL);
	r->command = 0;
	begin_stop(r, "the command exited");
}

/* Daemon: a symbolizer connects. One at a time, and only of the configured uid and gid. */
static void on_listen(struct recorder *r)
{
	struct ember_peer_cred c = {0};
	int fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	/* A peer that hung up just before this one connected must not get it refused:
	 * read the old connection first (epoll may report the two in either order). */
	if (ember_peer_connected(&r->peer))
		on_peer(r, ember_monotonic_ns());
	if (ember_endpoint_peer(fd, &c) || c.uid != r->cfg->symbolizer_uid ||
	    c.gid != r->cfg->symbolizer_gid || ember_peer_connected(&r->peer)) {
		log_warn("refused a symbolizer (pid %d, uid %u, gid %u): %s", (int)c.pid,
		         (unsigned)c.uid, (unsigned)c.gid,
		         ember_peer_connected(&r->peer) ? "another one is connected"
		                                        : "not the configured user and group");
		close(fd);
		return;
	}
	ember_peer_attach(&r->peer, fd, c.pid);
	ember_procs_note(&r->procs, (uint32_t)c.pid, ember_monotonic_ns(), false);
	ember_broker_new_peer(&r->broker);
	if (epoll_add(r->epfd, fd, TAG_PEER))
		ember_peer_detach(&r->peer, &r->drain);
}

/*
 * After loading, the collector keeps only the capabilities it uses:
 *   CAP_SYS_PTRACE       /proc/PID/maps, mem and root of other users' processes
 *   CAP_DAC_READ_SEARCH  mapped and debug files whatever their permissions
 *   CAP_SYSLOG           real addresses in /proc/kallsyms and /proc/modules
 *   CAP_PERFMON          cpu-clock events on CPUs that come online
 *   CAP_CHECKPOINT_RESTORE  /proc/PID/map_files: the very file a process mapped
 *   CAP_KILL             (ember record) stopping its child, which runs as another user
 * CAP_BPF and CAP_SYS_ADMIN go: programs and maps are loaded, and their
 * descriptors need no capability. Then only the system calls of
 * seccomp/collector.policy remain.
 */
static int confine(struct recorder *r)
{
	uint64_t keep = EMBER_CAP(CAP_SYS_PTRACE) | EMBER_CAP(CAP_DAC_READ_SEARCH) |
	                EMBER_CAP(CAP_SYSLOG) | EMBER_CAP(CAP_PERFMON) |
	                EMBER_CAP(CAP_CHECKPOINT_RESTORE) | (r->child ? EMBER_CAP(CAP_KILL) : 0);
	/* Without a command, $command is ember itself: never 0, which would be its process group.
	 */
	struct ember_policy_param params[] = {
	    {"pid", (uint64_t)getpid()},
	    {"child", (uint64_t)r->child},
	    {"command", (uint64_t)(r->command ? r->command : getpid())}};
	int err = ember_caps_limit(keep);

	/* -EPERM: started without CAP_SETPCAP, the bounding set is the service manager's. */
	if (err && err != -EPERM)
		return err;
	return ember_policy_load(&ember_collector_policy,
	                         EMBER_POLICY_BASE |
	                             (r->child ? EMBER_POLICY_RECORD : EMBER_POLICY_DAEMON),
	                         params, ARRAY_SIZE(params));
}

static int setup_signals(struct recorder *r)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return neg_errno();
	signal(SIGPIPE, SIG_IGN);
	r->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return r->sigfd < 0 ? neg_errno() : 0;
}

static int await_symbolizer(struct recorder *r)
{
	uint64_t deadline = ember_monotonic_ns() + HANDSHAKE_TIMEOUT_NS;

	while (!ember_peer_active(&r->peer)) {
		struct pollfd pfd = {.fd = r->peer.sock, .events = POLLIN};
		uint64_t now = ember_monotonic_ns();

		if (now >= deadline || poll(&pfd, 1, (int)((deadline - now) / 1000000) + 1) <= 0 ||
		    ember_peer_on_readable(&r->peer, &r->broker, &r->drain, now)) {
			log_error("the symbolizer did not start; see its messages above");
			return -ETIMEDOUT;
		}
	}
	return 0;
}

/* `ember record`: the symbolizer as a child, connected and past its handshake. */
static int start_child(struct recorder *r)
{
	int sv[2], err;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return neg_errno();
	ember_endpoint_refuse_fds(sv[0]);
	err = ember_spawn_symbolizer(r->cfg, sv[1], &r->child, &r->child_pidfd);
	close(sv[1]);
	if (err) {
		close(sv[0]);
		return err;
	}
	ember_peer_attach(&r->peer, sv[0], r->child);
	/* The symbolizer may read its own maps: it warms its unwind tables with its libraries. */
	ember_procs_note(&r->procs, (uint32_t)r->child, ember_monotonic_ns(), false);
	/* The child has its copies; the collector keeps none of the outputs open. */
	close_passed(r);
	/* Sample only once the symbolizer can take samples: none lost at the start. */
	return await_symbolizer(r);
}

/* Raises the soft limit on open descriptors to the hard one, and returns it (before: the
 * limits it had, which a command gets). */
static rlim_t raise_fd_limit(struct rlimit *before)
{
	struct rlimit nofile = {2 * PROCS_CAPACITY, 2 * PROCS_CAPACITY};

	if (!getrlimit(RLIMIT_NOFILE, &nofile)) {
		*before = nofile;
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	return nofile.rlim_cur;
}

/* What the symbolizer is told at its handshake, and the ring it gets. */
static void peer_config(const struct ember_record_opts *o, struct ember_peer_config *pc)
{
	const struct ember_core_config *c = o->cfg;

	*pc = (struct ember_peer_config){
	    /* Two seconds of the largest samples from every CPU, unless --ring-size. */
	    .ring_size = c->ring_size ? c->ring_size
	                              : ember_ring_bytes_for(
					    EMBER_RECORDS_PER_S(c->sample_hz, c->off_cpu_min_ns),
					    libbpf_num_possible_cpus(), 2, 1u << 20),
	    .welcome = {.sample_hz = c->sample_hz,
	                .off_cpu_min_ns = c->off_cpu_min_ns,
	                .monotonic_to_realtime_ns = ember_monotonic_to_realtime_ns(),
	                .start_time_ns = ember_realtime_ns(),
	                .flags = o->npids > 0 ? EMBER_WELCOME_CHOSEN_PIDS : 0},
	};
	ember_strlcpy(pc->welcome.selection, c->selection, sizeof(pc->welcome.selection));
	ember_strlcpy(pc->welcome.title, c->title, sizeof(pc->welcome.title));
	ember_strlcpy(pc->welcome.service, c->service, sizeof(pc->welcome.service));
}

/* The command (stopped at its gate), the eBPF programs and the unwinder's tables. */
static int start_programs(struct recorder *r)
{
	struct ember_record_opts *o = r->opts;
	struct ember_bpf_opts bo = {
	    .sample_hz = r->cfg->sample_hz,
	    .off_cpu_min_ns = r->cfg->off_cpu_min_ns,
	    .pids = o->pids,
	    .selection = &o->selection,
	    .on_sample = ember_drain_on_sample,
	    .on_proc_event = ember_drain_on_proc_event,
	    .cb_ctx = &r->drain,
	    .peer_ring = r->peer.config.ring_size,
	};
	int err;

	if (o->command.argv) {
		/* Forked before the programs load and the filter goes on: it inherits neither. */
		err = ember_command_start(&o->command);
		if (err)
			return err;
		r->command = o->pids[o->npids++] = o->command.pid;
		bo.follow_forks = true;
		/* No core file of the collector when it dies of the command's signal. */
		prctl(PR_SET_DUMPABLE, 0);
		setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});
	}
	bo.npids = o->npids;
	err = ember_bpf_start(&r->bpf, &bo);
	memcpy(r->drain.proc_map_fds, r->bpf.proc_map_fds, sizeof(r->drain.proc_map_fds));
	r->drain.proc_maps_set = &r->tables.proc_maps_set;
	r->listed = ember_peer_active(&r->peer); /* ember record's symbolizer: listed */
	if (!err)
		err =
		    ember_tables_init(&r->tables, r->bpf.unwind_tables_fd, r->bpf.unwind_blocks_fd,
		                      r->bpf.unwind_files_fd, r->bpf.proc_map_fds, 0);
	if (err)
		return err;
	r->peer.tables = &r->tables;
	r->stop_ns = ember_monotonic_ns() + r->cfg->duration_ms * 1000000ull;
	return 0;
}

/* The next tick, or the end of the duration if sooner: the first tick too (-d 1 is 1 s). A
 * host where nothing exec'd for a quiet tick drains less often: its samples wait for nothing
 * but an interval's end, which asks for them. A new program's snapshots do not wait: once an
 * exec is seen, the tick comes 5 s after the last, even in a quiet wait. What else cannot
 * wait wakes the collector: the eBPF side (a process lacking maps, a perishable sample, a
 * CPU hotplug step, a filling ring) and the symbolizer (DRAIN, its requests). */
static uint64_t next_tick(const struct recorder *r)
{
	bool quiet =
	    r->procs.last_exec_ns + EMBER_COLLECTOR_QUIET_TICK_MS * 1000000ull < r->tick_ns;
	uint64_t next =
	    r->tick_ns +
	    (quiet ? EMBER_COLLECTOR_QUIET_TICK_MS : EMBER_COLLECTOR_TICK_MS) * 1000000ull;

	return r->cfg->duration_ms && !r->stopping && r->stop_ns < next ? r->stop_ns : next;
}

/* Everything the loop waits for, in one epoll set. */
static int watch_events(struct recorder *r)
{
	int err;

	r->tick_ns = ember_monotonic_ns(); /* the tick is epoll_wait's timeout */
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (r->epfd < 0)
		return neg_errno();
	if ((err = epoll_add(r->epfd, ember_bpf_ring_fd(&r->bpf), TAG_BPF)) ||
	    (err = epoll_add(r->epfd, r->sigfd, TAG_SIGNAL)) ||
	    (r->child && ((err = epoll_add(r->epfd, r->peer.sock, TAG_PEER)) ||
	                  (err = epoll_add(r->epfd, r->child_pidfd, TAG_CHILD)))) ||
	    (r->listen_fd >= 0 && (err = epoll_add(r->epfd, r->listen_fd, TAG_LISTEN))) ||
	    (r->command && (err = epoll_add(r->epfd, r->opts->command.pidfd, TAG_COMMAND))))
		return err;
	for (unsigned int i = 0; i < r->pool.nworkers; i++)
		if ((err = epoll_add(r->epfd, r->pool.workers[i].sock, TAG_WORKER | i << 8)))
			return err;
	return 0;
}

static int setup(struct recorder *r)
{
	struct ember_record_opts *o = r->opts;
	struct ember_peer_config pc;
	int err;

	peer_config(o, &pc);
	/* A pidfd per sampled process, but never so many that the broker, a reconnecting
	 * symbolizer or a CPU coming online finds no descriptor left: half the hard limit. */
	err = ember_procs_init(&r->procs,
	                       MIN(PROCS_CAPACITY, raise_fd_limit(&o->command.nofile) / 2));
	if (err)
		return err;
	ember_drain_init(&r->drain, &r->procs);
	ember_broker_init(&r->broker, &r->procs);
	if (r->cfg->debug_dir[0])
		r->broker.debug_root = r->cfg->debug_dir;
	ember_peer_init(&r->peer, &pc);

	err = setup_signals(r);
	if (err)
		return err;
	/* Opens that may wait go to workers, forked before any eBPF object exists. */
	err = ember_pool_start(&r->pool, &r->broker, EMBER_POOL_WORKERS);
	if (err)
		return log_error_errno(err, "cannot start the broker's workers: %m");
	r->peer.pool = &r->pool;
	if (r->daemon) {
		r->listen_fd = ember_endpoint_listen(r->cfg->socket_path, r->cfg->symbolizer_gid);
		if (r->listen_fd < 0)
			return log_error_errno(
			    r->listen_fd,
			    "cannot listen at %s: %m; is another ember-collector running?",
			    r->cfg->socket_path);
	} else if ((err = start_child(r))) {
		return err;
	}
	if ((err = start_programs(r)) || (err = watch_events(r)))
		return err;
	if (r->drain.ring) /* ember record's symbolizer, past its handshake */
		ember_ring_write(r->drain.ring, EMBER_REC_SAMPLING,
		                 &(struct ember_rec_sampling){ember_realtime_ns()},
		                 sizeof(struct ember_rec_sampling));
	err = confine(r);
	if (err)
		return log_error_errno(err, "cannot confine the collector: %m");
	ember_command_release(&o->command, true); /* sampling is ready: run it */
	return 0;
}

static void teardown(struct recorder *r)
{
	/* A command that never passed its gate exits now, unrun; one that did (the recording
	 * failed) is not waited for: it goes on, unprofiled. */
	bool started = r->opts->command.gate < 0;

	ember_command_release(&r->opts->command, false);
	if (r->command > 0 && !started && waitpid(r->command, &r->command_status, 0) > 0)
		r->command = 0;
	else if (r->command > 0)
		log_warn("the command (PID %d) goes on, unprofiled", (int)r->command);
	ember_closep(&r->opts->command.pidfd);
	if (r->child > 0) {
		struct pollfd exited = {.fd = r->child_pidfd, .events = POLLIN};
		int status;

		/* Never for long: a process the kernel cannot kill (waiting in a FUSE request
		 * nobody answers) must not keep ember from ending. */
		kill(r->child, SIGKILL);
		if (r->child_pidfd >= 0 && poll(&exited, 1, 2000) <= 0)
			log_warn("the symbolizer (pid %d) does not exit: it is left behind",
			         (int)r->child);
		else if (waitpid(r->child, &status, WNOHANG) > 0 && WIFEXITED(status))
			r->usage = WEXITSTATUS(status) == EMBER_EXIT_USAGE;
	}
	ember_pool_stop(&r->pool);
	r->peer.tables = NULL; /* not emptied entry by entry: the maps go with the BPF object */
	ember_peer_detach(&r->peer, &r->drain);
	ember_tables_free(&r->tables);
	ember_bpf_destroy(&r->bpf);
	ember_procs_free(&r->procs);
	ember_closep(&r->child_pidfd);
	ember_closep(&r->epfd);
	ember_closep(&r->listen_fd);
	ember_closep(&r->sigfd);
}

static void run_loop(struct recorder *r)
{
	/* With a command, ember lives as long as it does (a duration ends only the recording). */
	while (!r->finished || r->command > 0) {
		struct epoll_event evs[8];
		uint64_t now = ember_monotonic_ns(), tick = next_tick(r);
		int tick_ms = now >= tick ? 0 : (int)((tick - now) / 1000000u) + 1,
		    pool_ms = ember_pool_timeout_ms(&r->pool, now);
		int n = epoll_wait(r->epfd, evs, 8,
		                   pool_ms >= 0 && pool_ms < tick_ms ? pool_ms : tick_ms);

		now = ember_monotonic_ns();

		if (n < 0 && errno != EINTR) {
			log_error_errno(errno, "epoll_wait: %m");
			r->failed = true;
			return;
		}
		for (int i = 0; i < n && (!r->finished || r->command > 0); i++) {
			switch (evs[i].data.u32 & 0xff) {
			case TAG_WORKER:
				on_worker(r, evs[i].data.u32 >> 8, now);
				break;
			case TAG_BPF:
				ember_bpf_drain(&r->bpf);
				hand_over(r);
				break;
			case TAG_SIGNAL:
				on_signal(r);
				break;
			case TAG_PEER:
				on_peer(r, now);
				if (r->peer.drain_asked && !r->stopping && !r->finished)
					drain_now(r); /* an interval ends: its samples, now */
				r->peer.drain_asked = false;
				break;
			case TAG_CHILD:
				on_child_exit(r);
				break;
			case TAG_LISTEN:
				on_listen(r);
				break;
			case TAG_COMMAND:
				on_command_exit(r);
				break;
			}
		}
		if (now >= next_tick(r)) {
			on_tick(r, now);
			r->tick_ns = now;
		}
		if (!r->finished) {
			expire_workers(r, ember_monotonic_ns());
			take_snapshots(r, ember_monotonic_ns());
		}
	}
}

/* `ember record -- COMMAND` ends as its command did: its exit status, or its signal. */
static int exit_as(int status)
{
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	sigset_t set;

	if (!sig)
		return WEXITSTATUS(status);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	return 128 + sig; /* a signal that does not end processes by default */
}

int ember_record_run(struct ember_record_opts *o)
{
	const struct ember_core_config *c = o->cfg;
	struct recorder r = {.opts = o,
	                     .cfg = c,
	                     .daemon = c->mode == EMBER_CORE_DAEMON,
	                     .passed_closed = c->mode != EMBER_CORE_RECORD,
	                     .epfd = -1,
	                     .sigfd = -1,
	                     .child_pidfd = -1,
	                     .listen_fd = -1};
	int err;

	if (c->flags & EMBER_CORE_PROGRESS)
		ember_log_set_before_hook(erase_progress);
	err = setup(&r);
	if (err == -EPERM || err == -EACCES)
		log_error_errno(err, "not permitted (%m): run as root or with CAP_BPF and "
		                     "CAP_PERFMON; see `ember check`");
	else if (err)
		log_debug_errno(err, "setup failed: %m");
	else
		run_loop(&r);
	close_passed(&r); /* the symbolizer has them: open here only if it never started */
	teardown(&r);
	if (err || r.failed) {
		unlink_outputs(c);
		return r.usage ? EMBER_EXIT_USAGE : EMBER_EXIT_FAILURE;
	}
	log_info("%" PRIu64 " samples, %" PRIu64 " lost", r.drain.samples,
	         ember_drain_lost_samples(r.drain.lost));
	for (size_t i = 0; i < c->noutputs; i++)
		log_info("  wrote %s (%s)", c->outputs[i].path, c->outputs[i].format);
	if (r.undelivered) {
		log_error("not every profile reached the OTLP endpoint (see above)");
		return EMBER_EXIT_FAILURE;
	}
	return o->command.argv ? exit_as(r.command_status) : EMBER_EXIT_OK;
}
