// SPDX-License-Identifier: Apache-2.0
/*
 * The symbolizer's sandbox, entered in a child process: its credentials,
 * capabilities, limits and filter as /proc shows them, Landlock keeping
 * output files beneath the output directory, and the rotation of interval
 * outputs it writes there.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "seccomp/landlock.h"
#include "symbolizer/profile/profile.h"
#include "symbolizer/formats/rotate.h"
#include "seccomp/caps.h"
#include "symbolizer/sandbox.h"

#define NOBODY 65534

/* The value of a "Name:\t..." line of /proc/PID/status. */
static void status_field(pid_t pid, const char *name, char *out, size_t size)
{
	char path[64], line[256];
	size_t len = strlen(name);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	out[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ':') {
			snprintf(out, size, "%s", line + len + 1 + strspn(line + len + 1, " \t"));
			out[strcspn(out, "\n")] = '\0';
			break;
		}
	fclose(f);
}

static bool limit_is(pid_t pid, const char *name, const char *value)
{
	char path[64], line[256], want[128];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	snprintf(want, sizeof(want), "%s", name);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		char soft[32], hard[32];

		if (strncmp(line, want, strlen(want)))
			continue;
		if (sscanf(line + 26, "%31s %31s", soft, hard) == 2)
			found = !strcmp(soft, value) && !strcmp(hard, value);
	}
	fclose(f);
	return found;
}

/* The symbolizer is started as its user (the front end or the collector changes it): so
 * are these children, when the test runs as root. */
static void become_nobody(void)
{
	if (getuid() == 0 && ember_caps_become(NOBODY, NOBODY))
		_exit(6);
}

START_TEST(status_shows_the_sandbox)
{
	int ready[2], hold[2];
	char buf[128], c;
	pid_t pid;
	int status;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(hold), 0);
	pid = fork();
	if (pid == 0) {
		struct ember_sandbox_opts o = {.die_with_parent = true};

		become_nobody();
		if (ember_sandbox_enter(&o))
			_exit(3);
		if (write(ready[1], "r", 1) != 1)
			_exit(4);
		if (read(hold[0], &c, 1) < 0)
			_exit(5);
		_exit(0);
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	status_field(pid, "Uid", buf, sizeof(buf));
	if (getuid() == 0)
		ck_assert_str_eq(buf, "65534\t65534\t65534\t65534");
	else
		ck_assert_msg(strncmp(buf, "0\t", 2) != 0, "uid %s", buf);
	status_field(pid, "Groups", buf, sizeof(buf));
	if (getuid() == 0)
		ck_assert_str_eq(buf, "");
	status_field(pid, "CapEff", buf, sizeof(buf));
	ck_assert_str_eq(buf, "0000000000000000");
	status_field(pid, "CapPrm", buf, sizeof(buf));
	ck_assert_str_eq(buf, "0000000000000000");
	if (getuid() == 0) {
		status_field(pid, "CapBnd", buf, sizeof(buf));
		ck_assert_str_eq(buf, "0000000000000000");
	}
	status_field(pid, "NoNewPrivs", buf, sizeof(buf));
	ck_assert_str_eq(buf, "1");
	status_field(pid, "Seccomp", buf, sizeof(buf));
	ck_assert_str_eq(buf, "2");
	ck_assert(limit_is(pid, "Max core file size", "0"));
	ck_assert(limit_is(pid, "Max processes", "0"));
	ck_assert(limit_is(pid, "Max open files", "1024"));
	ck_assert(limit_is(pid, "Max file size", "1073741824"));
	ck_assert_int_eq(write(hold[1], "x", 1), 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

START_TEST(root_is_refused)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		struct ember_sandbox_opts o = {0};

		/* Root is refused, whatever else the options say; another user enters. */
		_exit(getuid() == 0 ? (ember_sandbox_enter(&o) == -EPERM ? 0 : 1)
		                    : (ember_sandbox_enter(&o) == 0 ? 0 : 2));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

/* In a child: enter the sandbox with dir_fd as the output directory and try
 * to create `name` relative to it; reports errno (0 for success). */
static int create_in_sandbox(int dir_fd, const char *name)
{
	int res[2], err = -1, status;
	pid_t pid;

	ck_assert_int_eq(pipe(res), 0);
	pid = fork();
	if (pid == 0) {
		struct ember_sandbox_opts o = {.output_dir_fd = dir_fd};
		int fd, e = 0;

		become_nobody();
		if (ember_sandbox_enter(&o))
			_exit(3);
		fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		            0600);
		e = fd < 0 ? errno : 0;
		if (write(res[1], &e, sizeof(e)) != sizeof(e))
			_exit(4);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
	ck_assert_int_eq(read(res[0], &err, sizeof(err)), sizeof(err));
	close(res[0]);
	close(res[1]);
	return err;
}

START_TEST(landlock_keeps_outputs_in_their_directory)
{
	char dir[] = "/tmp/ember-sandbox-XXXXXX", sub[64], outside[64];
	int dir_fd;

	/* Without Landlock, seccomp alone bounds the symbolizer (see test_policy): this
	 * needs a kernel with Landlock enabled (lsm=...,landlock). */
	if (ember_landlock_abi() == 0)
		EMBER_SKIP("the kernel has no Landlock (or it is not enabled)");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/out", dir);
	ck_assert_int_eq(mkdir(sub, 0777), 0);
	ck_assert_int_eq(chmod(sub, 0777), 0);
	ck_assert_int_eq(chmod(dir, 0777), 0);
	dir_fd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dir_fd, 0);
	ck_assert_int_eq(create_in_sandbox(dir_fd, "profile.tmp"), 0);
	/* Beside the directory, by climbing out or by an absolute path: the
	 * system-call filter lets openat through (its dirfd is right), Landlock
	 * refuses the path. */
	ck_assert_int_eq(create_in_sandbox(dir_fd, "../escaped"), EACCES);
	snprintf(outside, sizeof(outside), "%s/escaped-abs", dir);
	ck_assert_int_eq(create_in_sandbox(dir_fd, outside), EACCES);
	ck_assert_int_ne(access(outside, F_OK), 0);
	close(dir_fd);
	snprintf(outside, sizeof(outside), "rm -rf %s", dir);
	ck_assert_int_eq(system(outside), 0);
}
END_TEST

START_TEST(rotation_names_are_utc_and_sortable)
{
	char name[64];

	ck_assert_int_eq(ember_rotation_name(0, ".folded", name, sizeof(name)), 0);
	ck_assert_str_eq(name, "ember-19700101T000000Z.folded");
	ck_assert_int_eq(
	    ember_rotation_name(951782400ull * 1000000000ull + 999, ".pb.gz", name, sizeof(name)),
	    0);
	ck_assert_str_eq(name, "ember-20000229T000000Z.pb.gz");
	ck_assert_int_eq(ember_rotation_name(4102444799ull * 1000000000ull, "", name, sizeof(name)),
	                 0);
	ck_assert_str_eq(name, "ember-20991231T235959Z");
	ck_assert_int_eq(ember_rotation_name(1700000000ull * 1000000000ull, "", name, sizeof(name)),
	                 0);
	ck_assert_str_eq(name, "ember-20231114T221320Z");
	ck_assert_int_eq(ember_rotation_name(0, ".folded", name, 8), -ENAMETOOLONG);
}
END_TEST

static int count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += strstr(e->d_name, suffix) != NULL && e->d_name[0] != '.';
	closedir(d);
	return n;
}

START_TEST(rotation_keeps_the_newest)
{
	char dir[] = "/tmp/ember-rotate-XXXXXX", cmd[128];
	struct ember_rotation r = {
	    .formats = {EMBER_FORMAT_FOLDED, EMBER_FORMAT_PPROF}, .nformats = 2, .keep = 3};
	struct ember_profile p;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "touch %s/unrelated.folded", dir);
	ck_assert_int_eq(system(cmd), 0);
	r.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(r.dir_fd, 0);
	ck_assert_int_eq(ember_profile_init(&p), 0);
	p.sample_hz = 19;
	p.period_ns = 1000000000ull / 19;
	for (int i = 0; i < 5; i++) {
		p.start_ns = (1700000000ull + 60ull * i) * 1000000000ull;
		p.end_ns = p.start_ns + 60ull * 1000000000ull;
		ck_assert_int_eq(ember_rotation_write(&r, &p), 0);
	}
	/* Two intervals within one second: the second gets a number. */
	ck_assert_int_eq(ember_rotation_write(&r, &p), 0);
	ck_assert_uint_eq(r.files_written, 12);
	ck_assert_int_eq(count_files(dir, ".folded"), 3 + 1);
	ck_assert_int_eq(count_files(dir, ".pb.gz"), 3);
	snprintf(cmd, sizeof(cmd), "test -f %s/ember-20231114T221720Z-1.folded", dir);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "test ! -e %s/ember-20231114T221320Z.folded", dir);
	ck_assert_int_eq(system(cmd), 0);
	/* Not ours: left alone. */
	snprintf(cmd, sizeof(cmd), "test -f %s/unrelated.folded", dir);
	ck_assert_int_eq(system(cmd), 0);
	ember_profile_free(&p);
	close(r.dir_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *sandbox_suite(void)
{
	Suite *s = suite_create("sandbox");
	TCase *t = tcase_create("sandbox");

	tcase_add_test(t, status_shows_the_sandbox);
	tcase_add_test(t, root_is_refused);
	tcase_add_test(t, landlock_keeps_outputs_in_their_directory);
	tcase_add_test(t, rotation_names_are_utc_and_sortable);
	tcase_add_test(t, rotation_keeps_the_newest);
	suite_add_tcase(s, t);
	return s;
}

EMBER_CHECK_MAIN(sandbox_suite)
