/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A live HotSpot VM for the JVM reader's unit tests: a JDK's java started
 * on a program of the test's own (Java source written to a temporary
 * directory, compiled with the JDK's javac when asked), its first line of
 * output awaited, its libjvm found in its maps, its memory read through
 * /proc/PID/mem, its description read as the reader reads it.
 */
#ifndef EMBER_TESTS_UNIT_LIVE_JVM_H
#define EMBER_TESTS_UNIT_LIVE_JVM_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symbolizer/interp/jvm_layout.h"

#define DEBIAN_JDK "/usr/lib/jvm/java-17-openjdk-amd64"

struct live_jvm {
	pid_t pid;
	int mem;
	uint64_t bias;
	struct ember_jvm_elf elf;
	char dir[32];   /* the program's directory */
	char line[256]; /* its first line of output */
};

static inline int live_jvm_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct live_jvm *j = ctx;

	return pread(j->mem, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EFAULT;
}

/* Runs argv (NULL-terminated) to its end: its exit status. */
static inline int live_jvm_run(char *const *argv)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		execv(argv[0], argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Writes source (the public class main) to a temporary directory, compiles it with jdk's
 * javac -g when compile is set (else java runs the source file itself), starts jdk's java
 * with the options opts (at most two, split at a space) and waits for its first line.
 */
static inline void live_jvm_start(struct live_jvm *j, const char *jdk, const char *main,
                                  const char *source, bool compile, const char *opts)
{
	char src[PATH_MAX], java[PATH_MAX];
	int out[2];
	FILE *f;

	memset(j, 0, sizeof(*j));
	j->mem = -1;
	strcpy(j->dir, "/tmp/ember-jvm-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(j->dir));
	snprintf(src, sizeof(src), "%s/%s.java", j->dir, main);
	f = fopen(src, "w");
	ck_assert_ptr_nonnull(f);
	fputs(source, f);
	fclose(f);
	if (compile) {
		char javac[PATH_MAX];

		snprintf(javac, sizeof(javac), "%s/bin/javac", jdk);
		ck_assert_int_eq(
		    live_jvm_run((char *const[]){javac, "-g", "-d", j->dir, src, NULL}), 0);
	}
	snprintf(java, sizeof(java), "%s/bin/java", jdk);
	ck_assert_int_eq(pipe(out), 0);
	j->pid = fork();
	ck_assert_int_ge(j->pid, 0);
	if (!j->pid) {
		char o[2][96] = {"-Xmx64m", "-Xmx64m"};

		sscanf(opts, "%95s %95s", o[0], o[1]);
		dup2(out[1], 1);
		if (compile)
			execl(java, java, o[0], o[1], "-cp", j->dir, main, (char *)NULL);
		else
			execl(java, java, o[0], o[1], src, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	ck_assert_msg(fgets(j->line, sizeof(j->line), f) != NULL, "%s did not start", java);
	fclose(f);
}

static inline void live_jvm_stop(struct live_jvm *j)
{
	char cmd[64];

	kill(j->pid, SIGKILL);
	waitpid(j->pid, NULL, 0);
	if (j->mem >= 0)
		close(j->mem);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", j->dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Runs check on every JDK under /usr/lib/jvm that has bin/TOOL, once per real directory,
 * but Debian's (its own test runs that one, and fails under CI without it). */
static inline void live_jvm_other_jdks(const char *tool, void (*check)(const char *jdk))
{
	char debian[PATH_MAX] = "";
	DIR *d = opendir("/usr/lib/jvm");
	struct dirent *e;

	if (!realpath(DEBIAN_JDK, debian))
		debian[0] = '\0';
	while (d && (e = readdir(d))) {
		char path[PATH_MAX], real[PATH_MAX], exe[PATH_MAX + 32];

		snprintf(path, sizeof(path), "/usr/lib/jvm/%s", e->d_name);
		snprintf(exe, sizeof(exe), "%s/bin/%s", path, tool);
		if (e->d_name[0] == '.' || e->d_type == DT_LNK || !realpath(path, real) ||
		    !strcmp(real, debian) || access(exe, X_OK))
			continue;
		check(path);
	}
	if (d)
		closedir(d);
}

/* libjvm's facts and bias, from its file and the process's maps; its memory opened. */
static inline void live_jvm_find_libjvm(struct live_jvm *j)
{
	char path[64], line[1024];
	FILE *maps;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)j->pid);
	maps = fopen(path, "r");
	ck_assert_ptr_nonnull(maps);
	while (!found && fgets(line, sizeof(line), maps)) {
		unsigned long long start, end, offset;
		char file[512] = "";
		int fd;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %511s", &start, &end, &offset, file) <
		        3 ||
		    !strstr(file, "/libjvm.so") || (fd = open(file, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		ck_assert_int_eq(ember_jvm_elf_read(fd, &j->elf), 0);
		close(fd);
		ck_assert_uint_eq(j->elf.kind, EMBER_JVM_ELF_HOTSPOT);
		found = ember_elf_bias(j->elf.segs, j->elf.nsegs, offset, start, &j->bias);
	}
	fclose(maps);
	ck_assert_msg(found, "no libjvm.so mapping in pid %d", (int)j->pid);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)j->pid);
	j->mem = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(j->mem, 0);
}

/* The VM's description, read again while it is still starting. */
static inline int live_jvm_read_vm(struct live_jvm *j, struct ember_jvm_vm *vm, char *why)
{
	int err = -EAGAIN;

	for (int i = 0; i < 100 && err == -EAGAIN; i++) {
		err = ember_jvm_vm_read(&j->elf, j->bias, live_jvm_read, j, vm, why);
		if (err == -EAGAIN)
			nanosleep(&(struct timespec){0, 100000000}, NULL);
	}
	return err;
}

#endif
