// SPDX-License-Identifier: Apache-2.0
/*
 * ember-collector's configuration: the sealed memfd it is handed (size, seals, header) and
 * the check of every field, each bound tried on a configuration that is otherwise good.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check_main.h"
#include "ipc/config_fd.h"
#include "ipc/core_config.h"

static struct ember_core_config good, c;
static int fds[4];

/* A descriptor the configuration may name: above EMBER_CONFIG_FD, open. */
static int passable_fd(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC), high;

	ck_assert_int_ge(fd, 0);
	high = fcntl(fd, F_DUPFD_CLOEXEC, 20);
	close(fd);
	return high;
}

static void setup(void)
{
	for (size_t i = 0; i < 4; i++)
		fds[i] = passable_fd();
	memset(&good, 0, sizeof(good));
	good.hdr = (struct ember_config_hdr){EMBER_CONFIG_MAGIC, EMBER_CORE_CONFIG_VERSION,
	                                     sizeof(good), EMBER_CONFIG_CORE};
	good.mode = EMBER_CORE_RECORD;
	good.log_level = 2;
	good.sample_hz = 19;
	good.off_cpu_min_ns = EMBER_OFF_CPU_OFF;
	good.duration_ms = 5000;
	good.npids = 1;
	good.pids[0] = 1;
	good.ncgroups = 1;
	strcpy(good.cgroup_root, "/sys/fs/cgroup");
	strcpy(good.cgroups[0].path, "/system.slice/x.service");
	strcpy(good.selection, "pid 1");
	good.symbolizer_uid = good.symbolizer_gid = 65534;
	good.symbolizer_exe_fd = fds[0];
	good.symbolizer_config_fd = fds[1];
	good.npassed = 1;
	good.passed_fds[0] = fds[2];
	good.noutputs = 1;
	good.outputs[0].fd = fds[2];
	strcpy(good.outputs[0].format, "html");
	strcpy(good.outputs[0].path, "profile.html");
	good.command.argc = 2;
	memcpy(good.command.argv,
	       "sleep\0"
	       "1\0",
	       8);
	good.command.argv_bytes = 8;
	c = good;
}

static void teardown(void)
{
	for (size_t i = 0; i < 4; i++)
		close(fds[i]);
}

static bool refused(const char *field)
{
	const char *why = NULL;
	int err = ember_core_config_check(&c, &why);

	c = good;
	ck_assert_ptr_nonnull(why);
	if (err != -EINVAL)
		return false;
	ck_assert_msg(strstr(why, field), "refused for '%s', not '%s'", why, field);
	return true;
}

START_TEST(a_good_configuration_passes)
{
	const char *why;

	ck_assert_int_eq(ember_core_config_check(&c, &why), 0);
	c.mode = EMBER_CORE_DAEMON;
	c.duration_ms = 0;
	c.symbolizer_exe_fd = c.symbolizer_config_fd = -1;
	c.npassed = c.noutputs = 0;
	c.command = (struct ember_core_command){0};
	strcpy(c.socket_path, "/run/ember/collector.sock");
	ck_assert_int_eq(ember_core_config_check(&c, &why), 0);
}
END_TEST

START_TEST(every_number_has_its_range)
{
	c.mode = 0;
	ck_assert(refused("mode"));
	c.mode = EMBER_CORE_MODE_MAX;
	ck_assert(refused("mode"));
	c.log_level = 4;
	ck_assert(refused("log_level"));
	c.flags = 0x100;
	ck_assert(refused("flags"));
	c.sample_hz = 0;
	ck_assert(refused("sample_hz"));
	c.sample_hz = EMBER_MAX_HZ + 1;
	ck_assert(refused("sample_hz"));
	c.off_cpu_min_ns = 3601ull * 1000000000ull;
	ck_assert(refused("off_cpu_min_ns"));
	c.duration_ms = 400ull * 24 * 3600 * 1000;
	ck_assert(refused("duration_ms"));
	c.ring_size = 100;
	ck_assert(refused("ring_size"));
	c.npids = EMBER_MAX_PIDS + 1;
	ck_assert(refused("npids"));
	c.pids[0] = 0;
	ck_assert(refused("pids"));
	c.pids[0] = (int32_t)EMBER_CORE_MAX_PID + 1;
	ck_assert(refused("pids"));
	c.ncgroups = EMBER_SELECT_MAX_CGROUPS + 1;
	ck_assert(refused("ncgroups"));
}
END_TEST

START_TEST(every_string_ends_inside_its_array)
{
	memset(c.cgroups[0].path, 'a', sizeof(c.cgroups[0].path));
	c.cgroups[0].path[0] = '/';
	ck_assert(refused("cgroups"));
	memset(c.selection, 'a', sizeof(c.selection));
	ck_assert(refused("selection"));
	memset(c.outputs[0].path, 'a', sizeof(c.outputs[0].path));
	ck_assert(refused("outputs"));
	memset(c.command.user, 'a', sizeof(c.command.user));
	ck_assert(refused("command user"));
	memset(c.cgroup_root, 'a', sizeof(c.cgroup_root));
	ck_assert(refused("cgroup_root"));
	strcpy(c.cgroups[0].path, "/a/../../etc");
	ck_assert(refused("cgroups"));
	strcpy(c.cgroups[0].path, "relative");
	ck_assert(refused("cgroups"));
	strcpy(c.debug_dir, "relative/debug");
	ck_assert(refused("debug_dir"));
}
END_TEST

START_TEST(the_symbolizer_is_never_root)
{
	c.symbolizer_uid = 0;
	ck_assert(refused("symbolizer_uid"));
	c.symbolizer_uid = UINT32_MAX;
	ck_assert(refused("symbolizer_uid"));
	c.symbolizer_gid = UINT32_MAX;
	ck_assert(refused("symbolizer_uid"));
}
END_TEST

START_TEST(descriptors_must_be_open_and_passed)
{
	c.symbolizer_exe_fd = 2; /* below the passed range: stderr */
	ck_assert(refused("symbolizer_exe_fd"));
	c.symbolizer_config_fd = 1000;
	ck_assert(refused("symbolizer_config_fd"));
	c.passed_fds[0] = 999;
	ck_assert(refused("passed_fds"));
	c.outputs[0].fd = fds[3]; /* open, but not handed to the symbolizer */
	ck_assert(refused("outputs"));
	c.npassed = EMBER_CORE_MAX_PASSED + 1;
	ck_assert(refused("npassed"));
	c.noutputs = EMBER_MAX_OUTPUTS + 1;
	ck_assert(refused("noutputs"));
}
END_TEST

START_TEST(each_mode_has_what_it_needs_and_nothing_else)
{
	/* A daemon: a socket, no child's descriptors, no command, no duration. */
	c.mode = EMBER_CORE_DAEMON;
	ck_assert(refused("symbolizer_exe_fd"));
	c.mode = EMBER_CORE_DAEMON;
	c.symbolizer_exe_fd = c.symbolizer_config_fd = -1;
	c.npassed = c.noutputs = 0;
	c.command = (struct ember_core_command){0};
	ck_assert(refused("socket_path"));
	c.mode = EMBER_CORE_DAEMON;
	c.symbolizer_exe_fd = c.symbolizer_config_fd = -1;
	c.npassed = c.noutputs = 0;
	c.command = (struct ember_core_command){0};
	strcpy(c.socket_path, "/run/ember/collector.sock");
	ck_assert(refused("duration_ms"));
	/* A recording has no socket path. */
	strcpy(c.socket_path, "/run/ember/collector.sock");
	ck_assert(refused("socket_path"));
	c.mode = EMBER_CORE_CHECK;
	ck_assert(refused("symbolizer_exe_fd"));
}
END_TEST

START_TEST(the_command_is_argc_strings)
{
	c.command.argc = 3; /* two strings in the bytes */
	ck_assert(refused("command.argv"));
	c.command.argv[7] = 'x'; /* the last string does not end */
	ck_assert(refused("command.argv"));
	c.command.argv_bytes = sizeof(c.command.argv) + 1;
	ck_assert(refused("command"));
	c.command.argc = 0;
	ck_assert(refused("command.argv"));
	memcpy(c.command.argv,
	       "\0"
	       "1\0",
	       3); /* an empty program name */
	c.command.argv_bytes = 3;
	ck_assert(refused("command.argv"));
	c.command.set_user = 1; /* without a name and a home */
	ck_assert(refused("command user"));
	c.command.ngroups = EMBER_CORE_MAX_GROUPS + 1;
	ck_assert(refused("command user"));
}
END_TEST

/* ---- the memfd ------------------------------------------------------------------------------ */

static int read_back(int fd)
{
	static struct ember_core_config out;

	return ember_config_fd_read(fd, EMBER_CONFIG_CORE, EMBER_CORE_CONFIG_VERSION, &out,
	                            sizeof(out));
}

START_TEST(the_sealed_memfd_reads_back_whole)
{
	static struct ember_core_config out;
	int fd = ember_config_fd_create(&good, sizeof(good));

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ember_config_fd_read(fd, EMBER_CONFIG_CORE, EMBER_CORE_CONFIG_VERSION,
	                                      &out, sizeof(out)),
	                 0);
	ck_assert_mem_eq(&out, &good, sizeof(good));
	/* Nobody can change it any more: not its size, not its bytes. */
	ck_assert_int_lt(ftruncate(fd, 16), 0);
	ck_assert_int_lt(pwrite(fd, "x", 1, 0), 0);
	close(fd);
}
END_TEST

START_TEST(truncated_oversized_unsealed_and_foreign_memfds_are_refused)
{
	static char big[sizeof(struct ember_core_config) + 64];
	int fd;

	fd = ember_config_fd_create(&good, sizeof(good) - 8);
	ck_assert_int_eq(read_back(fd), -EMSGSIZE);
	close(fd);
	memcpy(big, &good, sizeof(good));
	fd = ember_config_fd_create(big, sizeof(big));
	ck_assert_int_eq(read_back(fd), -EMSGSIZE);
	close(fd);
	/* Unsealed: its writer could change it after the check. */
	fd = memfd_create("unsealed", MFD_CLOEXEC);
	ck_assert_int_eq(write(fd, &good, sizeof(good)), (ssize_t)sizeof(good));
	ck_assert_int_eq(read_back(fd), -EPERM);
	close(fd);
	/* Another kind, version or magic. */
	c.hdr.kind = EMBER_CONFIG_SYMBOLIZER;
	fd = ember_config_fd_create(&c, sizeof(c));
	ck_assert_int_eq(read_back(fd), -EPROTO);
	close(fd);
	c.hdr = good.hdr;
	c.hdr.version++;
	fd = ember_config_fd_create(&c, sizeof(c));
	ck_assert_int_eq(read_back(fd), -EPROTO);
	close(fd);
	c.hdr = good.hdr;
	c.hdr.size = 8;
	fd = ember_config_fd_create(&c, sizeof(c));
	ck_assert_int_eq(read_back(fd), -EMSGSIZE);
	close(fd);
	/* A device, and no descriptor at all. */
	ck_assert_int_eq(read_back(fds[0]), -EPERM);
	ck_assert_int_eq(read_back(1000), -EBADF);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("core_config");
	TCase *tc = tcase_create("core_config");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_good_configuration_passes);
	tcase_add_test(tc, every_number_has_its_range);
	tcase_add_test(tc, every_string_ends_inside_its_array);
	tcase_add_test(tc, the_symbolizer_is_never_root);
	tcase_add_test(tc, descriptors_must_be_open_and_passed);
	tcase_add_test(tc, each_mode_has_what_it_needs_and_nothing_else);
	tcase_add_test(tc, the_command_is_argc_strings);
	tcase_add_test(tc, the_sealed_memfd_reads_back_whole);
	tcase_add_test(tc, truncated_oversized_unsealed_and_foreign_memfds_are_refused);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
