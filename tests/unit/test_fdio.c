// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check_main.h"
#include "shared/fdio.h"
#include "shared/proc_number.h"

/* A memfd holding n bytes of a repeating pattern, at offset `at`. */
static int file_of(size_t n, off_t at)
{
	int fd = memfd_create("fdio", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	for (size_t i = 0; i < n; i++) {
		char c = (char)('a' + i % 26);

		ck_assert_int_eq(write(fd, &c, 1), 1);
	}
	lseek(fd, at, SEEK_SET);
	return fd;
}

START_TEST(reads_a_file_whole_from_offset_0)
{
	int fd = file_of(200000, 1234);
	char *buf;
	long len = ember_read_whole_fd(fd, 1 << 20, &buf);

	ck_assert_int_eq(len, 200000);
	ck_assert_int_eq(buf[0], 'a');
	ck_assert_int_eq(buf[199999], 'a' + 199999 % 26);
	free(buf);
	/* Again, from the same descriptor. */
	len = ember_read_whole_fd(fd, 1 << 20, &buf);
	ck_assert_int_eq(len, 200000);
	free(buf);
	close(fd);
}
END_TEST

START_TEST(cap_is_exact)
{
	int fd = file_of(1000, 0);
	char *buf = (char *)1;

	ck_assert_int_eq(ember_read_whole_fd(fd, 1000, &buf), 1000);
	free(buf);
	ck_assert_int_eq(ember_read_whole_fd(fd, 999, &buf), -EFBIG);
	ck_assert_ptr_null(buf);
	close(fd);
}
END_TEST

START_TEST(proc_files_that_say_size_0)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	char *buf;
	long len;

	ck_assert_int_ge(fd, 0);
	len = ember_read_whole_fd(fd, 1 << 24, &buf);
	ck_assert_int_gt(len, 100);
	ck_assert_ptr_nonnull(memmem(buf, (size_t)len, "[stack]", 7));
	free(buf);
	/* Over the cap while growing. */
	ck_assert_int_eq(ember_read_whole_fd(fd, 50, &buf), -EFBIG);
	close(fd);
}
END_TEST

START_TEST(pipes_from_where_they_stand)
{
	int p[2];
	char *buf;
	long len;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(write(p[1], "a;b 3\n", 6), 6);
	close(p[1]);
	len = ember_read_whole_fd(p[0], 100, &buf);
	ck_assert_int_eq(len, 6);
	ck_assert(!memcmp(buf, "a;b 3\n", 6));
	free(buf);
	close(p[0]);
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(write(p[1], "0123456789", 10), 10);
	close(p[1]);
	ck_assert_int_eq(ember_read_whole_fd(p[0], 9, &buf), -EFBIG);
	close(p[0]);
	ck_assert_int_eq(ember_read_whole_fd(-1, 9, &buf), -EBADF);
}
END_TEST

/* A number after a key, past others, or none: what /proc/self/statm and fdinfo give. */
START_TEST(numbers_of_small_kernel_files)
{
	char path[] = "/tmp/ember-test-num-XXXXXX";
	static const char text[] = "pos:\t0\nflags:\t02\nmemlock:\t-12 34\n";
	int fd = mkstemp(path);
	long long v;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fd);
	ck_assert_int_eq(ember_read_proc_number(path, "memlock:", 0, &v), 0);
	ck_assert_int_eq(v, -12);
	ck_assert_int_eq(ember_read_proc_number(path, "memlock:", 1, &v), 0);
	ck_assert_int_eq(v, 34);
	ck_assert_int_eq(ember_read_proc_number(path, "memlock:", 2, &v), -EBADMSG);
	ck_assert_int_eq(ember_read_proc_number(path, "map_id:", 0, &v), -ENOENT);
	ck_assert_int_eq(ember_read_proc_number(path, NULL, 0, &v), -EBADMSG); /* "pos:" */
	unlink(path);
	ck_assert_int_eq(ember_read_proc_number(path, NULL, 0, &v), -ENOENT);
	/* This process: resident, and no memlock for a descriptor that is no BPF map. */
	ck_assert_uint_gt(ember_self_rss_bytes(), 4096);
	ck_assert_uint_lt(ember_self_rss_bytes(), 1ull << 32);
	ck_assert_uint_eq(ember_fd_memlock(STDERR_FILENO), 0);
	ck_assert_uint_eq(ember_fd_memlock(-1), 0);
}
END_TEST

/* CPU lists as the kernel writes them, and lists no kernel writes. */
START_TEST(cpu_lists)
{
	static const struct {
		const char *text;
		int err;
		const char *want; /* one character a CPU of 8 */
	} cases[] = {
	    {"0-3,5,7\n", 0, "11110101"}, {"0\n", 0, "10000000"},   {"6-9\n", 0, "00000011"},
	    {"\n", 0, "00000000"},        {"3-1\n", -EINVAL, NULL}, {"1,,2\n", -EINVAL, NULL},
	    {"-1\n", -EINVAL, NULL},      {"1-\n", -EINVAL, NULL},  {"0 1\n", -EINVAL, NULL},
	    {"1,1-2\n", 0, "01100000"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[] = "/tmp/ember-test-cpus-XXXXXX";
		int fd = mkstemp(path);
		bool online[8];

		ck_assert_int_ge(fd, 0);
		unlink(path);
		ck_assert_int_eq(write(fd, cases[i].text, strlen(cases[i].text)),
		                 (ssize_t)strlen(cases[i].text));
		int got = ember_read_cpu_list(fd, online, 8), set = 0;

		for (int c = 0; cases[i].want && c < 8; c++) {
			ck_assert_msg(online[c] == (cases[i].want[c] == '1'), "%s: CPU %d",
			              cases[i].text, c);
			set += cases[i].want[c] == '1';
		}
		/* The CPUs it set, or the error. */
		ck_assert_msg(got == (cases[i].want ? set : cases[i].err), "%s: %d", cases[i].text,
		              got);
		close(fd);
	}
}
END_TEST

static Suite *fdio_suite(void)
{
	Suite *s = suite_create("fdio");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, reads_a_file_whole_from_offset_0);
	tcase_add_test(tc, cap_is_exact);
	tcase_add_test(tc, proc_files_that_say_size_0);
	tcase_add_test(tc, pipes_from_where_they_stand);
	tcase_add_test(tc, numbers_of_small_kernel_files);
	tcase_add_test(tc, cpu_lists);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(fdio_suite)
