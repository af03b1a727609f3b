// SPDX-License-Identifier: Apache-2.0
#include "collector/bpf_loader.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/param.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "sampler.skel.h"
#include "shared/cleanup.h"
#include "shared/clock.h"
#include "shared/err.h"
#include "shared/log.h"
#include "shared/proc_number.h"

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];

	if (strstr(fmt, " LOAD LOG --")) /* the verifier's log: whole, and for a report only */
		return ember_log_get_level() < EMBER_LOG_DEBUG ? 0 : vfprintf(stderr, fmt, ap);
	if (level == LIBBPF_DEBUG && ember_log_get_level() < EMBER_LOG_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	ember_log(level == LIBBPF_WARN ? EMBER_LOG_WARN : EMBER_LOG_DEBUG, "%s", line);
	return 0;
}

static int open_cpu_clock(int cpu, unsigned int hz)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_SOFTWARE,
	    .size = sizeof(attr),
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .freq = 1,
	    .sample_freq = hz,
	};
	int fd = (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? neg_errno() : fd;
}

/* The link owns its perf event: destroying it closes the event too. */
static void close_cpu(struct ember_bpf *b, int cpu)
{
	if (!b->links[cpu])
		return;
	bpf_link__destroy(b->links[cpu]);
	b->links[cpu] = NULL;
	b->attached_cpus--;
}

static int attach_cpu(struct ember_bpf *b, int cpu)
{
	_cleanup_close_ int fd = open_cpu_clock(cpu, b->sample_hz);

	if (fd < 0)
		return fd;
	b->links[cpu] = bpf_program__attach_perf_event(b->sampler->progs.ember_sample, fd);
	/* Until the link takes the event (it closes it: close_cpu), closed on the way out. */
	if (!b->links[cpu])
		return neg_errno();
	fd = -1;
	b->attached_cpus++;
	return 0;
}

/*
 * A CPU's timer keeps the phase of the moment its event was opened. Opened back to
 * back, every CPU samples within microseconds of the others, and a task that a sample
 * wakes (the collector, woken for a process's maps) runs on another CPU just as that
 * CPU samples: it takes that CPU's sample from the task it preempted, on and on (75
 * of a bystander's 970 samples in test_stall's lock case). SPREAD (at start, before
 * the seccomp filter) opens n CPUs one period/n apart.
 */
static int refresh_cpus(struct ember_bpf *b, bool spread)
{
	uint64_t steps = __atomic_load_n(&b->sampler->bss->cpu_hotplug_steps, __ATOMIC_ACQUIRE);
	_cleanup_free_ bool *online = calloc((size_t)b->ncpus, sizeof(*online));
	int err, count = online ? ember_read_cpu_list(b->online_fd, online, b->ncpus) : -ENOMEM;
	bool replug = steps != b->hotplug_steps;
	uint64_t start_ns = ember_monotonic_ns(), period_ns = 1000000000ull / b->sample_hz, nth = 0;

	if (count < 0)
		return count;
	b->hotplug_steps = steps;
	for (int cpu = 0; cpu < b->ncpus && b->enabled; cpu++) {
		/* An event on a CPU that went offline does not come back by itself:
		 * closed, and a fresh one opened when the CPU returns (or returned). */
		if (!online[cpu] || replug)
			close_cpu(b, cpu);
		if (!online[cpu] || b->links[cpu])
			continue;
		if (spread)
			ember_sleep_until_ns(start_ns + period_ns * nth++ / (uint64_t)count);
		err = attach_cpu(b, cpu);
		if (err && err != -ENODEV)
			log_warn_errno(err, "cannot sample CPU %d: %m", cpu);
	}
	return b->attached_cpus > 0 ? 0 : -ENODEV;
}

uint64_t ember_ring_bytes_for(unsigned int hz, int ncpus, unsigned int seconds, uint64_t min)
{
	/* The largest samples (stack copies add no more than real ones carry) and a burst. */
	uint64_t want = (uint64_t)ncpus * ((uint64_t)hz * seconds * EMBER_MAX_SAMPLE_BYTES +
	                                   EMBER_STACK_COPY_BURST_MAX);
	uint64_t size = min;

	while (size < want && size < (64u << 20))
		size <<= 1;
	return size;
}

static int load_sampler(struct ember_bpf *b, const struct ember_bpf_opts *o)
{
	bool off_cpu = o->off_cpu_min_ns != EMBER_OFF_CPU_OFF;
	uint64_t ring;
	int err;

	b->sampler = sampler_bpf__open();
	if (!b->sampler)
		return neg_errno();
	b->sampler->rodata->filter_pids = o->npids > 0;
	b->sampler->rodata->filter_cgroups = o->selection && o->selection->ncgroups > 0;
	b->sampler->rodata->off_cpu_min_ns = o->off_cpu_min_ns;
	b->sampler->rodata->copy_burst = EMBER_STACK_COPY_BURST(o->sample_hz);
	bpf_program__set_autoload(b->sampler->progs.ember_off_cpu_switch, off_cpu);
	bpf_program__set_autoload(b->sampler->progs.ember_off_cpu_resume, off_cpu);
	bpf_program__set_autoload(b->sampler->progs.ember_fork, o->follow_forks);
	bpf_program__set_autoload(b->sampler->progs.ember_cgroup_mkdir,
	                          b->sampler->rodata->filter_cgroups);
	/* Its table of waiting threads is preallocated (5.8 MiB): not without off-CPU samples. */
	bpf_map__set_max_entries(b->sampler->maps.off_cpu_waits, off_cpu ? EMBER_OFF_CPU_TASKS : 1);
	/* A second of the largest samples from every CPU; the collector drains it every tick. */
	ring = ember_ring_bytes_for(EMBER_RECORDS_PER_S(o->sample_hz, o->off_cpu_min_ns), b->ncpus,
	                            1, 512u << 10);
	b->sampler->rodata->wakeup_bytes = MIN(ring / 8, o->peer_ring ? o->peer_ring / 4 : ring);
	err = bpf_map__set_max_entries(b->sampler->maps.samples, (__u32)ring);
	if (!err)
		err = sampler_bpf__load(b->sampler);
	if (err)
		return err;
	/* The drop counters are read every tick from this mapping, with no system call. */
	b->drops = mmap(NULL, EMBER_DROP_MAX * sizeof(*b->drops), PROT_READ, MAP_SHARED,
	                bpf_map__fd(b->sampler->maps.drops), 0);
	if (b->drops == MAP_FAILED) {
		b->drops = NULL;
		return neg_errno();
	}
	b->unwind_tables_fd = bpf_map__fd(b->sampler->maps.unwind_tables);
	b->unwind_blocks_fd = bpf_map__fd(b->sampler->maps.unwind_blocks);
	b->unwind_files_fd = bpf_map__fd(b->sampler->maps.unwind_files);
	b->proc_map_fds[0] = bpf_map__fd(b->sampler->maps.unwind_procs);
	b->proc_map_fds[1] = bpf_map__fd(b->sampler->maps.interp_procs);
	for (int rt = 1; rt < EMBER_ROW_KINDS; rt++) /* by the name in the kind's entry */
		b->proc_map_fds[1 + rt] = bpf_object__find_map_fd_by_name(
		    b->sampler->obj, ember_interp_rows[rt].size ? ember_interp_rows[rt].map : "");
	return 0;
}

/* Puts key in one of the sets select.bpf.h reads (a map whose values are the byte 1). */
static int set_add(struct bpf_map *set, const void *key, size_t key_size)
{
	static const __u8 one = 1;

	return bpf_map__update_elem(set, key, key_size, &one, sizeof(one), BPF_ANY);
}

/* The chosen cgroups' ids, for select.bpf.h; a verdict kept for one (judged in between) goes. */
static int fill_cgroups(struct ember_bpf *b, struct ember_selection *s)
{
	int err = 0;

	for (size_t i = 0; s && i < s->ncgroups && !err; i++) {
		if (!ember_select_id(s, i))
			continue;
		err = set_add(b->sampler->maps.cgroup_filter, &s->ids[i], sizeof(s->ids[i]));
		bpf_map__delete_elem(b->sampler->maps.cgroup_verdicts, &s->ids[i],
		                     sizeof(s->ids[i]), 0);
	}
	return err;
}

/* Fills the maps select.bpf.h and ember_cgroup_mkdir read, before any program that reads them
 * runs: a cgroup judged before its id is in cgroup_filter would keep its verdict. */
static int fill_selection(struct ember_bpf *b, const struct ember_bpf_opts *o)
{
	struct ember_selection *s = o->selection;
	int err = 0;

	for (size_t i = 0; i < o->npids && !err; i++)
		err = set_add(b->sampler->maps.pid_filter, &(__u32){(__u32)o->pids[i]},
		              sizeof(__u32));
	for (size_t i = 0; s && i < s->ncgroups && !err; i++)
		err = set_add(b->sampler->maps.cgroup_paths, &s->paths[i], sizeof(s->paths[i]));
	return err ? err : fill_cgroups(b, s);
}

/* A chosen process that ended before ember_exit was attached left no exit to take its PID out of
 * the filter: were the PID reused, another process would be sampled and brokered. */
static void forget_ended(struct ember_bpf *b, const struct ember_bpf_opts *o)
{
	for (size_t i = 0; i < o->npids; i++) {
		struct pollfd ended = {(int)syscall(SYS_pidfd_open, o->pids[i], 0), POLLIN, 0};
		__u32 pid = (__u32)o->pids[i];

		if (ended.fd < 0 || poll(&ended, 1, 0) > 0) /* readable once it has exited */
			bpf_map__delete_elem(b->sampler->maps.pid_filter, &pid, sizeof(pid), 0);
		ember_closep(&ended.fd);
	}
}

int ember_bpf_start(struct ember_bpf *b, const struct ember_bpf_opts *o)
{
	int err;

	memset(b, 0, sizeof(*b));
	libbpf_set_print(libbpf_log);
	b->sample_hz = o->sample_hz;
	b->ncpus = libbpf_num_possible_cpus();
	if (b->ncpus <= 0)
		return b->ncpus ? b->ncpus : -ENODEV;
	b->links = calloc((size_t)b->ncpus, sizeof(*b->links));
	if (!b->links)
		return -ENOMEM;
	b->online_fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	err = load_sampler(b, o);
	if (err) {
		log_error_errno(err, "cannot load the sampler eBPF program: %m; run `ember check` "
		                     "to see what the kernel or your privileges lack");
		goto fail;
	}
	/* The process events and off-CPU programs attach by name (the sampler, per CPU). */
	if (!(err = fill_selection(b, o)) && !(err = sampler_bpf__attach(b->sampler)))
		forget_ended(b, o);
	/* A chosen cgroup made before ember_cgroup_mkdir was attached: found now. */
	if (!err)
		err = fill_cgroups(b, o->selection);
	if (err) {
		log_error_errno(err, o->off_cpu_min_ns != EMBER_OFF_CPU_OFF
		                         ? "cannot attach the eBPF programs: %m; --off-cpu needs the "
		                           "sched_exit_tp tracepoint (Linux 6.16 or later)"
		                         : "cannot attach the process-event eBPF programs: %m; run "
		                           "`ember check`");
		goto fail;
	}
	/* Process events first in each drain: a process's exec and mappings before its samples. */
	b->rings = ring_buffer__new(bpf_map__fd(b->sampler->maps.proc_events), o->on_proc_event,
	                            o->cb_ctx, NULL);
	err = !b->rings ? neg_errno()
	                : ring_buffer__add(b->rings, bpf_map__fd(b->sampler->maps.samples),
	                                   o->on_sample, o->cb_ctx);
	if (err)
		goto fail;

	/* The processes already running, for their tables: before the first sample. */
	ember_bpf_list_running(b, o->on_proc_event, o->cb_ctx);
	b->enabled = true;
	err = refresh_cpus(b, true);
	if (err) {
		log_error("cannot open a cpu-clock perf event on any CPU; check "
		          "/proc/sys/kernel/perf_event_paranoid and CAP_PERFMON (`ember check`)");
		goto fail;
	}
	log_info("sampling %d CPUs at %u Hz", b->attached_cpus, b->sample_hz);
	return 0;
fail:
	ember_bpf_destroy(b);
	return err;
}

int ember_bpf_check_load(void)
{
	struct sampler_bpf *skel;

	libbpf_set_print(libbpf_log);
	skel = sampler_bpf__open_and_load();
	if (!skel)
		return neg_errno();
	sampler_bpf__destroy(skel);
	return 0;
}

void ember_bpf_stop_sampling(struct ember_bpf *b)
{
	for (int cpu = 0; cpu < b->ncpus; cpu++)
		close_cpu(b, cpu);
	b->enabled = false;
}

void ember_bpf_destroy(struct ember_bpf *b)
{
	if (b->links)
		ember_bpf_stop_sampling(b);
	if (b->links && b->online_fd >= 0)
		close(b->online_fd);
	ring_buffer__free(b->rings);
	sampler_bpf__destroy(b->sampler);
	if (b->drops)
		munmap((void *)b->drops, EMBER_DROP_MAX * sizeof(*b->drops));
	free(b->links);
	memset(b, 0, sizeof(*b));
}

int ember_bpf_ring_fd(const struct ember_bpf *b)
{
	return ring_buffer__epoll_fd(b->rings);
}

/* A CPU hotplug step woke the collector (the eBPF program's count changed): events anew. */
int ember_bpf_drain(struct ember_bpf *b)
{
	if (__atomic_load_n(&b->sampler->bss->cpu_hotplug_steps, __ATOMIC_ACQUIRE) !=
	    b->hotplug_steps)
		refresh_cpus(b, false);
	return ring_buffer__consume(b->rings);
}

void ember_bpf_list_running(struct ember_bpf *b, ring_buffer_sample_fn fn, void *ctx)
{
	struct ember_proc_event ev[64];
	int fd = bpf_iter_create(bpf_link__fd(b->sampler->links.ember_running));
	ssize_t n = -1;

	/* A read returns whole records: it asks for a whole number of them. */
	while (fd >= 0 && (n = read(fd, ev, sizeof(ev))) > 0)
		for (size_t i = 0; i < (size_t)n / sizeof(*ev); i++)
			fn(ctx, &ev[i], sizeof(ev[i]));
	/* Not fatal: then each process's first samples carry stack copies instead. */
	if (n < 0)
		log_warn("cannot list the running processes: %s", strerror(errno));
	close(fd); /* -1 when bpf_iter_create failed: EBADF, harmless */
}

int ember_bpf_read_drops(const struct ember_bpf *b, uint64_t out[EMBER_DROP_MAX])
{
	if (!b->drops)
		return -EBADF;
	for (__u32 i = 0; i < EMBER_DROP_MAX; i++)
		out[i] = __atomic_load_n(&b->drops[i], __ATOMIC_RELAXED);
	return 0;
}

uint64_t ember_bpf_map_bytes(const struct ember_bpf *b)
{
	uint64_t total = 0;
	struct bpf_map *m;

	bpf_object__for_each_map(m, b->sampler->obj) total += ember_fd_memlock(bpf_map__fd(m));
	return total;
}
