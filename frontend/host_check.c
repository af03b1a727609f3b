// SPDX-License-Identifier: Apache-2.0
#include "frontend/commands.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "seccomp/caps.h"
#include "shared/err.h"
#include "shared/log.h"
#include "shared/proc_number.h"

#define MIN_KERNEL_MAJOR 5
#define MIN_KERNEL_MINOR 17 /* bpf_loop, for the user-stack unwinder */

enum verdict { OK, WARN, FAIL };

struct report {
	int failures;
	int warnings;
};

static void line(struct report *r, const char *what, const char *value, enum verdict v,
                 const char *advice)
{
	static const char *const names[] = {"ok", "warning", "FAIL"};

	printf("  %-22s %-26s %-8s%s%s\n", what, value, names[v], advice ? "  " : "",
	       advice ? advice : "");
	if (v == FAIL)
		r->failures++;
	else if (v == WARN)
		r->warnings++;
}

static void check_kernel(struct report *r)
{
	struct utsname u;
	int major = 0, minor = 0;

	uname(&u);
	sscanf(u.release, "%d.%d", &major, &minor);
	if (major > MIN_KERNEL_MAJOR || (major == MIN_KERNEL_MAJOR && minor >= MIN_KERNEL_MINOR))
		line(r, "kernel", u.release, OK, NULL);
	else
		line(r, "kernel", u.release, FAIL,
		     "ember needs Linux 5.17 or later (bpf_loop, for unwinding user stacks)");
}

static void check_btf(struct report *r)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		line(r, "BTF", "/sys/kernel/btf/vmlinux", OK, NULL);
	else
		line(r, "BTF", "missing", FAIL,
		     "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (every major distribution's "
		     "is)");
}

static void check_caps(struct report *r, uint64_t caps)
{
	static const struct {
		int cap;
		const char *name;
		bool required;
		const char *why;
	} wanted[] = {
	    {CAP_BPF, "CAP_BPF", true, "load eBPF programs"},
	    {CAP_PERFMON, "CAP_PERFMON", true, "open system-wide perf events"},
	    {CAP_SYS_PTRACE, "CAP_SYS_PTRACE", false, "read other processes' mappings"},
	    {CAP_SYSLOG, "CAP_SYSLOG", false, "read kernel symbol addresses"},
	    {CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH", false, "open mapped binaries"},
	    {CAP_CHECKPOINT_RESTORE, "CAP_CHECKPOINT_RESTORE", false,
	     "open the file a process mapped (map_files)"},
	};
	bool admin = ember_caps_has(caps, CAP_SYS_ADMIN);
	char advice[160];

	for (size_t i = 0; i < ARRAY_SIZE(wanted); i++) {
		bool have = ember_caps_has(caps, wanted[i].cap) ||
		            (admin && (wanted[i].cap == CAP_BPF || wanted[i].cap == CAP_PERFMON));

		snprintf(advice, sizeof(advice), "needed to %s: run as root (sudo)", wanted[i].why);
		line(r, wanted[i].name, have ? "present" : "missing",
		     have ? OK : (wanted[i].required ? FAIL : WARN), have ? NULL : advice);
	}
}

static void check_sysctls(struct report *r, uint64_t caps)
{
	char value[32];
	long long v;

	if (ember_read_proc_number("/proc/sys/kernel/perf_event_paranoid", NULL, 0, &v) == 0) {
		bool priv =
		    ember_caps_has(caps, CAP_PERFMON) || ember_caps_has(caps, CAP_SYS_ADMIN);

		snprintf(value, sizeof(value), "%lld", v);
		line(r, "perf_event_paranoid", value, priv || v <= 0 ? OK : FAIL,
		     priv || v <= 0 ? NULL
		                    : "run as root, or: sysctl kernel.perf_event_paranoid=0");
	}
	if (ember_read_proc_number("/proc/sys/kernel/kptr_restrict", NULL, 0, &v) == 0) {
		bool syslog = ember_caps_has(caps, CAP_SYSLOG);

		snprintf(value, sizeof(value), "%lld", v);
		if (v == 0 || (v == 1 && syslog))
			line(r, "kptr_restrict", value, OK, NULL);
		else
			line(r, "kptr_restrict", value, WARN,
			     v >= 2 ? "kernel frames will show as addresses: sysctl "
			              "kernel.kptr_restrict=1 and run as root"
			            : "kernel frames will show as addresses: run as root");
	}
	if (ember_read_proc_number("/proc/sys/kernel/yama/ptrace_scope", NULL, 0, &v) == 0) {
		snprintf(value, sizeof(value), "%lld", v);
		line(r, "ptrace_scope", value, v >= 3 ? WARN : OK,
		     v >= 3 ? "interpreter stacks need /proc/PID/mem: sysctl "
		              "kernel.yama.ptrace_scope=2 (needs a reboot when 3)"
		            : NULL);
	} else {
		line(r, "ptrace_scope", "no Yama", OK, NULL);
	}
	if (ember_read_proc_number("/proc/sys/kernel/perf_event_max_sample_rate", NULL, 0, &v) ==
	    0) {
		snprintf(value, sizeof(value), "%lld Hz", v);
		line(r, "max sample rate", value, v >= 100 ? OK : WARN,
		     v >= 100 ? NULL : "the kernel throttled sampling; -F above this is refused");
	}
}

/* Whether the verifier takes the sampler: ember-collector loads it once (its check mode). */
static void check_load(struct report *r, unsigned int log_level)
{
	static struct ember_core_config cfg = {
	    .hdr = {EMBER_CONFIG_MAGIC, EMBER_CORE_CONFIG_VERSION, sizeof(cfg), EMBER_CONFIG_CORE},
	    .mode = EMBER_CORE_CHECK,
	    .log_level = EMBER_LOG_ERROR,
	    .sample_hz = 1,
	    .off_cpu_min_ns = EMBER_OFF_CPU_OFF,
	    .symbolizer_uid = 65534, /* none runs: only never 0 */
	    .symbolizer_gid = 65534,
	};
	struct ember_fdlist none = {.base = EMBER_CONFIG_FIRST_FD};
	int exe = ember_program_open("ember-collector"), memfd, status = 0;
	pid_t pid = -1;

	cfg.log_level = log_level;
	memfd = exe < 0 ? exe : ember_config_memfd(&cfg, sizeof(cfg));
	fflush(NULL);
	if (memfd >= 0 && (pid = fork()) == 0)
		_exit(ember_exec(exe, "ember-collector", memfd, &none) < 0 ? 127 : 127);
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (pid > 0 && WIFEXITED(status) && !WEXITSTATUS(status))
		line(r, "eBPF programs", "load", OK, NULL);
	else
		line(r, "eBPF programs",
		     pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) < 127
		         ? strerror(WEXITSTATUS(status))
		         : "cannot run ember-collector",
		     FAIL,
		     "the verifier refused the sampler: run with --log-level debug and report it");
	if (exe >= 0)
		close(exe);
	if (memfd >= 0)
		close(memfd);
}

static int check_all(unsigned int log_level)
{
	struct report r = {0};
	uint64_t caps = ember_caps_effective();

	printf("ember %s: can this host record?\n", EMBER_VERSION);
	check_kernel(&r);
	check_btf(&r);
	check_caps(&r, caps);
	check_sysctls(&r, caps);
	if (ember_caps_has(caps, CAP_BPF) || ember_caps_has(caps, CAP_SYS_ADMIN))
		check_load(&r, log_level);
	if (r.failures)
		printf("%d problem%s: `ember record` will not work until %s fixed.\n", r.failures,
		       r.failures == 1 ? "" : "s", r.failures == 1 ? "it is" : "they are");
	else if (r.warnings)
		printf("ready, with %d warning%s above.\n", r.warnings, r.warnings == 1 ? "" : "s");
	else
		printf("ready.\n");
	return r.failures ? EMBER_EXIT_FAILURE : EMBER_EXIT_OK;
}

int ember_cmd_check(struct ember_cli *c)
{
	return check_all(c->log_level == EMBER_LOG_INFO ? EMBER_LOG_ERROR : c->log_level);
}
