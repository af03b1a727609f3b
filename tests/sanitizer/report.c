// SPDX-License-Identifier: Apache-2.0
/*
 * Sanitized builds only (EMBER_SANITIZERS), linked into ember, ember-collector and
 * ember-symbolizer: where the sanitizers' reports go, so that a report in any process a
 * test starts, a sandboxed one too, fails that test instead of being printed to a pipe
 * the test reads and drops.
 *
 * With EMBER_SANITIZER_LOG naming a file (tests/integration/emberlib.py makes one for each
 * test script, writable by every user), each program opens it for appending before main,
 * while it still may (the symbolizer's sandbox opens nothing later), and the runtime writes
 * its reports there instead of to stderr.
 * A process forked without exec writes its reports to the same descriptor; the broker's
 * workers and the symbolizer's readers (shared/helper_proc.c), which close it, point their
 * stderr at it in a sanitized build, where they would point it at /dev/null, and report there.
 *
 * The programs also write no coverage profile at exit (a coverage build links clang's
 * profile runtime into everything): none of their sandboxes may create a file, and the
 * coverage scripts/fuzz-coverage.sh measures is the fuzz targets'.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#include <stdlib.h>
#include <unistd.h>

/* Defined here, the profile runtime's initializer (which writes the profile at exit) is
 * not linked in: clang's way of opting a program out. */
int __llvm_profile_runtime;

/*
 * The runtimes' defaults for these programs (ASAN_OPTIONS and UBSAN_OPTIONS come after):
 * a finding ends the process (SIGABRT), and two things their filters rightly forbid stay
 * off: LeakSanitizer's check at exit (it stops the world with a tracer it clones and
 * ptraces) and symbolizing a report inside the process (it forks llvm-symbolizer); a
 * report names each frame's module and offset, for llvm-symbolizer afterwards.
 */
const char *__asan_default_options(void)
{
	return "abort_on_error=1:detect_leaks=0:symbolize=0";
}

const char *__ubsan_default_options(void)
{
	return "print_stacktrace=1:halt_on_error=1:symbolize=0";
}

/* The log's descriptor, -1 without one; shared/helper_proc.c points its helpers' stderr at it. */
int ember_sanitizer_report_fd = -1;

/* The runtime takes a report descriptor set by another process (the parent) for one to close
 * and reopen by name, and there is no name: a forked child sets it again, so that its reports
 * reach the log too (the front end's cgroup search, a child before its exec). */
static void reports_in_child(void)
{
	__sanitizer_set_report_fd((void *)(long)ember_sanitizer_report_fd);
}

/* For the helpers (shared/helper_proc.c), which close every descriptor but their socket and
 * stdio, the log's own too, once their stderr is the log. */
void ember_sanitizer_reports_to_stderr(void)
{
	__sanitizer_set_report_fd((void *)(long)STDERR_FILENO);
}

__attribute__((constructor)) static void open_report_log(void)
{
	const char *path = getenv("EMBER_SANITIZER_LOG");
	int fd, high;

	if (!path || !*path)
		return;
	/* No O_CREAT: the test made the file, writable by every user. */
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return; /* reports stay on stderr */
	/* Out of the way of the descriptors a program is handed from 3 on. */
	high = fcntl(fd, F_DUPFD_CLOEXEC, 100);
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	ember_sanitizer_report_fd = fd;
	__sanitizer_set_report_fd((void *)(long)fd);
	pthread_atfork(NULL, NULL, reports_in_child);
}
