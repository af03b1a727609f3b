// SPDX-License-Identifier: Apache-2.0
/*
 * bench/overhead's observer: reads a tool's process tree from /proc while the tool records
 * the host, and writes what it read to stdout for run.py to add up after the run.
 *
 * It is a process on the host being recorded, so it is small C: the Python thread that did
 * this before was sampled too, and its first sample cost ember a parse of libpython's symbols
 * (about 40 ms) and each later one a read of the interpreter's frames, landing in the steady
 * window when it came there. perf record pays neither while it records.
 *
 *   observe SETTLE_S DURATION_S < ROOT_PID
 *
 * It is started before the tool and reads the tool's pid from its input, so that it is one of
 * the processes already running when the tool starts (a new one would be one more program for
 * ember to name, and would keep its collector's tick short for 30 s); its clock starts then.
 *
 * Every 100 ms (every second from SETTLE_S to a second before DURATION_S):
 *   T seconds rss_kib pss_kib cpu_s           the tree's totals
 *   P pid                                     each process of the tree, once
 * In that window also, per process:
 *   W pid comm user_s system_s on_cpu_s context_switches reads_and_writes
 * and at the window's start and 1.5 s before DURATION_S, each BPF program the tree holds:
 *   B 0|1 prog_id name run_time_ns run_cnt   (names from the kernel: no bpftool process)
 * It exits when ROOT_PID has exited (a zombie counts as exited).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_PIDS 256

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The whole of a small /proc file into buf (NUL-terminated); its length, or -1. */
static ssize_t read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (ssize_t)n;
}

/* The number after `key` at the start of a line of /proc/PID/NAME (missing: 0, or gone). */
static long long field_or(int pid, const char *name, const char *key, long long missing)
{
	char path[64], buf[8192], *p;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return missing;
	for (p = buf; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, strlen(key)))
			return strtoll(p + strlen(key), NULL, 10);
	return missing;
}

static long long field(int pid, const char *name, const char *key)
{
	return field_or(pid, name, key, 0);
}

/* pid and its descendants, into pids; their count. */
static int tree(int root, int *pids)
{
	int n = 0, next = 0;

	pids[n++] = root;
	while (next < n) {
		char path[64], buf[4096], *p = buf, *end;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pids[next], pids[next]);
		next++;
		if (read_file(path, buf, sizeof(buf)) < 0)
			continue;
		for (long c; n < MAX_PIDS && (c = strtol(p, &end, 10)) > 0; p = end)
			pids[n++] = (int)c;
	}
	return n;
}

struct stat_fields {
	char comm[32];
	char state;
	long long utime, stime, cutime, cstime; /* clock ticks */
};

static bool read_stat(int pid, struct stat_fields *st)
{
	char path[64], buf[1024], *open, *close;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_file(path, buf, sizeof(buf)) < 0 || !(open = strchr(buf, '(')) ||
	    !(close = strrchr(buf, ')')))
		return false;
	snprintf(st->comm, sizeof(st->comm), "%.*s", (int)(close - open - 1), open + 1);
	return sscanf(close + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld %lld %lld",
	              &st->state, &st->utime, &st->stime, &st->cutime, &st->cstime) == 5;
}

/* Its threads' time on a CPU (schedstat, ns) and context switches. */
static void threads(int pid, long long *on_cpu_ns, long long *switches)
{
	char path[64];
	DIR *d;
	struct dirent *e;

	*on_cpu_ns = *switches = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (!(d = opendir(path)))
		return;
	while ((e = readdir(d))) {
		char file[300], buf[256];
		int tid = atoi(e->d_name);

		if (tid <= 0)
			continue;
		snprintf(file, sizeof(file), "/proc/%d/task/%d/schedstat", pid, tid);
		if (read_file(file, buf, sizeof(buf)) > 0)
			*on_cpu_ns += strtoll(buf, NULL, 10);
		snprintf(file, sizeof(file), "task/%d/status", tid);
		*switches += field(pid, file, "voluntary_ctxt_switches:") +
		             field(pid, file, "nonvoluntary_ctxt_switches:");
	}
	closedir(d);
}

/* A BPF program's name, from its id. */
static void prog_name(long long id, char *name, size_t size)
{
	struct bpf_prog_info info = {0};
	union bpf_attr attr = {0};
	int fd;

	snprintf(name, size, "?");
	attr.prog_id = (__u32)id;
	fd = (int)syscall(SYS_bpf, BPF_PROG_GET_FD_BY_ID, &attr, sizeof(attr));
	if (fd < 0)
		return;
	memset(&attr, 0, sizeof(attr));
	attr.info.bpf_fd = (__u32)fd;
	attr.info.info_len = sizeof(info);
	attr.info.info = (__u64)(unsigned long)&info;
	if (!syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &attr, sizeof(attr)) && info.name[0])
		snprintf(name, size, "%.*s", (int)sizeof(info.name), info.name);
	close(fd);
}

/* The run time and count of every BPF program pid holds a descriptor of. */
static void bpf_programs(int pid, int end)
{
	char path[64];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", pid);
	if (!(d = opendir(path)))
		return;
	while ((e = readdir(d))) {
		char name[300];
		long long id, t, n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(name, sizeof(name), "fdinfo/%s", e->d_name);
		/* A program's own descriptor: a link's names the program but has no counters. */
		if ((id = field(pid, name, "prog_id:")) <= 0 ||
		    (n = field_or(pid, name, "run_cnt:", -1)) < 0)
			continue;
		t = field(pid, name, "run_time_ns:");
		prog_name(id, name, sizeof(name));
		printf("B %d %lld %s %lld %lld\n", end, id, name, t, n);
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	static bool seen[1 << 22];
	double t0, settle, duration, bpf_end;
	long tick = sysconf(_SC_CLK_TCK);
	int root, pids[MAX_PIDS], bpf_done = 0;

	if (argc != 3 || scanf("%d", &root) != 1)
		return 2;
	t0 = now_s();
	settle = atof(argv[1]);
	duration = atof(argv[2]);
	bpf_end = duration - 1.5;
	for (;;) {
		struct stat_fields st;
		long long rss = 0, pss = 0;
		double cpu = 0, t = now_s() - t0;
		bool steady = settle <= t && t <= duration - 1;
		int n;

		if (!read_stat(root, &st) || st.state == 'Z')
			break;
		n = tree(root, pids);
		for (int i = 0; i < n; i++) {
			long long on_cpu, switches;

			if (!read_stat(pids[i], &st))
				continue;
			if (pids[i] < (int)(sizeof(seen) / sizeof(seen[0])) && !seen[pids[i]]) {
				seen[pids[i]] = true;
				printf("P %d\n", pids[i]);
			}
			rss += field(pids[i], "status", "VmRSS:");
			pss += field(pids[i], "smaps_rollup", "Pss:");
			threads(pids[i], &on_cpu, &switches);
			cpu += (double)on_cpu / 1e9 + (double)(st.cutime + st.cstime) / (double)tick;
			if (steady)
				printf("W %d %s %.6f %.6f %.9f %lld %lld\n", pids[i], st.comm,
				       (double)st.utime / (double)tick, (double)st.stime / (double)tick,
				       (double)on_cpu / 1e9, switches,
				       field(pids[i], "io", "syscr:") + field(pids[i], "io", "syscw:"));
			if (steady && (bpf_done == 0 || (bpf_done == 1 && t >= bpf_end)))
				bpf_programs(pids[i], bpf_done);
		}
		if (steady && (bpf_done == 0 || (bpf_done == 1 && t >= bpf_end)))
			bpf_done++;
		printf("T %.3f %lld %lld %.9f\n", t, rss, pss, cpu);
		fflush(stdout);
		/* Start-up and the final write, where memory peaks, every 100 ms; the window
		 * every second, where this process is part of the load being measured. */
		usleep(steady && t + 1.0 < duration - 1 ? 1000000 : 100000);
	}
	return 0;
}
