// SPDX-License-Identifier: Apache-2.0
/* Container ids from /proc/PID/cgroup text, as the runtimes in use write it. */
#include <string.h>

#include "check_main.h"
#include "symbolizer/process/container.h"

#define ID "3f2a9c1b7e6d5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a09"

static const char *id_of(const char *text)
{
	static char out[EMBER_CONTAINER_ID_LEN + 1];

	ember_container_id_from_cgroup(text, strlen(text), out);
	return out;
}

START_TEST(finds_the_id_of_each_runtime)
{
	ck_assert_str_eq(id_of("0::/system.slice/docker-" ID ".scope\n"), ID);
	ck_assert_str_eq(id_of("12:pids:/docker/" ID "\n11:cpu,cpuacct:/docker/" ID "\n"), ID);
	ck_assert_str_eq(id_of("0::/kubepods.slice/kubepods-burstable.slice/"
	                       "kubepods-burstable-pod0e2ba0d4_cb6c_4c5e_9bbb_1d2f0e5a6b7c.slice/"
	                       "cri-containerd-" ID ".scope\n"),
	                 ID);
	ck_assert_str_eq(
	    id_of("0::/kubepods/besteffort/pod6a1e7c9e-3b8f-4d0e-9a55-1f7c3e2b9d10/" ID "\n"), ID);
	ck_assert_str_eq(id_of("0::/machine.slice/libpod-" ID ".scope/container\n"), ID);
	ck_assert_str_eq(id_of("0::/crio-" ID ".scope"), ID);
}
END_TEST

START_TEST(no_container_gives_nothing)
{
	char out[EMBER_CONTAINER_ID_LEN + 1] = "x";

	ck_assert_int_eq(ember_container_id_from_cgroup(
			     "0::/user.slice/user-1000.slice/session-2.scope\n", 47, out),
	                 0);
	ck_assert_str_eq(out, "");
	ck_assert_str_eq(id_of("0::/\n"), "");
	ck_assert_str_eq(id_of(""), "");
	/* Too short, too long, upper case, or glued to other text: not an id. */
	ck_assert_str_eq(id_of("0::/docker/"
	                       "3f2a9c1b7e6d5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0\n"),
	                 "");
	ck_assert_str_eq(id_of("0::/docker/" ID "0\n"), "");
	ck_assert_str_eq(
	    id_of("0::/docker/"
	          "3F2A9C1B7E6D5A4F3E2D1C0B9A8F7E6D5C4B3A2F1E0D9C8B7A6F5E4D3C2B1A09\n"),
	    "");
	ck_assert_str_eq(id_of("0::/dockerx" ID "\n"), "");
	/* An id in the controller list, not the path, does not count. */
	ck_assert_str_eq(id_of("0:" ID ":/\n"), "");
	/* Lines without two colons are skipped. */
	ck_assert_str_eq(id_of("/docker/" ID "\n"), "");
}
END_TEST

START_TEST(bounded_by_the_length_not_by_a_nul)
{
	char text[] = "0::/docker/" ID "\n";
	char out[EMBER_CONTAINER_ID_LEN + 1];

	/* Cut inside the id: no id. */
	ck_assert_int_eq(ember_container_id_from_cgroup(text, strlen(text) - 10, out), 0);
	text[5] = '\0'; /* NUL bytes inside are just bytes */
	ck_assert_int_eq(ember_container_id_from_cgroup(text, strlen(ID) + 12, out), 1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("container");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, finds_the_id_of_each_runtime);
	tcase_add_test(tc, no_container_gives_nothing);
	tcase_add_test(tc, bounded_by_the_length_not_by_a_nul);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
