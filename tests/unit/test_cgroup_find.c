// SPDX-License-Identifier: Apache-2.0
/*
 * Finding a cgroup by name (--unit, --container, --pod) in hand-made trees
 * laid out as each runtime and the kubelet make them: docker (systemd and
 * cgroupfs drivers), containerd/CRI, CRI-O, podman, pods of each QoS class,
 * a unit of the host's systemd and one of a container's systemd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "frontend/cgroup_find.h"

#define ID1   "3f2a9c1b7e6d5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a09"
#define ID2   "3f2a000000000000000000000000000000000000000000000000000000000002"
#define ID3   "77aa9c1b7e6d5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a03"
#define ID4   "88bb9c1b7e6d5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a04"
#define ID5   "99cc9c1b7e6d5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a05"
#define ID6   "aadd9c1b7e6d5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a06"
#define UID1  "0e2ba0d4-cb6c-4c5e-9bbb-1d2f0e5a6b7c"
#define UID1_ "0e2ba0d4_cb6c_4c5e_9bbb_1d2f0e5a6b7c"
#define UID2  "6a1e7c9e-3b8f-4d0e-9a55-1f7c3e2b9d10"
#define UID3  "c0ffee00-1111-2222-3333-444455556666"
#define UID3_ "c0ffee00_1111_2222_3333_444455556666"

static char root[64];
static int rootfd = -1;

/* mkdir -p ROOT/rel */
static void make(const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		ck_assert(!mkdir(path, 0755) || errno == EEXIST);
		*p = '/';
	}
	ck_assert(!mkdir(path, 0755) || errno == EEXIST);
}

static void setup(void)
{
	strcpy(root, "/tmp/ember-cgfind-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	/* The host's systemd, docker under systemd and under cgroupfs, podman. */
	make("/init.scope");
	make("/system.slice/nginx.service");
	make("/system.slice/docker-" ID1 ".scope");
	make("/system.slice/containerd.service");
	make("/docker/" ID2);
	make("/machine.slice/libpod-" ID3 ".scope/container");
	make("/machine.slice/libpod-conmon-" ID3 ".scope");
	make("/user.slice/user-1000.slice/user@1000.service/app.slice/editor.service");
	/* A machine booted with systemd-nspawn: its own systemd's units below. */
	make("/machine.slice/systemd-nspawn@box.service/payload/system.slice/worker.service");
	make("/machine.slice/systemd-nspawn@box.service/payload/system.slice/nginx.service");
	/* The kubelet, systemd driver: containerd and CRI-O pods of each QoS class. */
	make("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID1_
	     ".slice/cri-containerd-" ID4 ".scope");
	make("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID1_
	     ".slice/cri-containerd-" ID1 ".scope"); /* the same id deeper: docker's wins */
	make("/kubepods.slice/kubepods-pod" UID3_ ".slice/crio-" ID5 ".scope");
	make("/kubepods.slice/kubepods-pod" UID3_ ".slice/crio-conmon-" ID5 ".scope");
	/* The kubelet, cgroupfs driver. */
	make("/kubepods/burstable/pod" UID2 "/" ID6);
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(rootfd, 0);
}

static void teardown(void)
{
	char cmd[128];

	close(rootfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}

static struct ember_cgroup_found found;

static int find(const char *kind, const char *arg)
{
	return ember_cgroup_find(rootfd, kind, arg, &found);
}

START_TEST(finds_each_runtimes_container)
{
	ck_assert_int_eq(find("container", ID1), 0);
	ck_assert_str_eq(found.path, "/system.slice/docker-" ID1 ".scope");
	ck_assert_int_eq(find("container", ID2), 0);
	ck_assert_str_eq(found.path, "/docker/" ID2);
	ck_assert_int_eq(find("container", ID3), 0); /* the scope, not conmon's, not its child */
	ck_assert_str_eq(found.path, "/machine.slice/libpod-" ID3 ".scope");
	ck_assert_int_eq(find("container", ID4), 0);
	ck_assert_str_eq(found.path,
	                 "/kubepods.slice/kubepods-burstable.slice/"
	                 "kubepods-burstable-pod" UID1_ ".slice/cri-containerd-" ID4 ".scope");
	ck_assert_int_eq(find("container", ID5), 0); /* CRI-O: crio-ID, not crio-conmon-ID */
	ck_assert_str_eq(found.path,
	                 "/kubepods.slice/kubepods-pod" UID3_ ".slice/crio-" ID5 ".scope");
	ck_assert_int_eq(find("container", ID6), 0);
	ck_assert_str_eq(found.path, "/kubepods/burstable/pod" UID2 "/" ID6);
}
END_TEST

START_TEST(a_unique_prefix_is_enough_a_shared_one_is_refused)
{
	ck_assert_int_eq(find("container", "77aa"), 0);
	ck_assert_str_eq(found.path, "/machine.slice/libpod-" ID3 ".scope");
	ck_assert_int_eq(find("container", "aadd9c1b7e6d"), 0);
	ck_assert_str_eq(found.path, "/kubepods/burstable/pod" UID2 "/" ID6);
	/* ID1 (docker's scope) and ID2 (cgroupfs) share "3f2a" at the same depth. */
	ck_assert_int_eq(find("container", "3f2a"), -EEXIST);
	ck_assert_int_eq(found.count, 2);
	ck_assert(strstr(found.path, ID1) || strstr(found.other, ID1));
	ck_assert(strstr(found.path, ID2) || strstr(found.other, ID2));
	ck_assert_int_eq(find("container", "3f2a9"), 0); /* one digit more: only ID1 */
	ck_assert_str_eq(found.path, "/system.slice/docker-" ID1 ".scope");
	ck_assert_int_eq(find("container", "1234"), -ENOENT);
	/* Not a prefix of the form: too short, too long, upper case, not hex. */
	ck_assert_int_eq(find("container", "3f2"), -EINVAL);
	ck_assert_int_eq(find("container", ID1 "0"), -EINVAL);
	ck_assert_int_eq(find("container", "3F2A"), -EINVAL);
	ck_assert_int_eq(find("container", "docker-3f2a"), -EINVAL);
}
END_TEST

START_TEST(finds_pods_of_both_drivers)
{
	ck_assert_int_eq(find("pod", UID1), 0); /* systemd: '_' for '-' */
	ck_assert_str_eq(found.path, "/kubepods.slice/kubepods-burstable.slice/"
	                             "kubepods-burstable-pod" UID1_ ".slice");
	ck_assert_int_eq(find("pod", UID2), 0); /* cgroupfs */
	ck_assert_str_eq(found.path, "/kubepods/burstable/pod" UID2);
	ck_assert_int_eq(find("pod", UID3), 0); /* guaranteed: no QoS slice */
	ck_assert_str_eq(found.path, "/kubepods.slice/kubepods-pod" UID3_ ".slice");
	ck_assert_int_eq(find("pod", "00000000-1111-2222-3333-444455556666"), -ENOENT);
	ck_assert_int_eq(find("pod", UID1_), -EINVAL);
	ck_assert_int_eq(find("pod", "0e2ba0d4"), -EINVAL);
	ck_assert_int_eq(find("pod", "../../../../../etc/passwd/aaaaaaaaaaa"), -EINVAL);
}
END_TEST

START_TEST(finds_units_the_shallowest_first)
{
	ck_assert_int_eq(find("unit", "nginx"), 0); /* the host's, not the machine's */
	ck_assert_str_eq(found.path, "/system.slice/nginx.service");
	ck_assert_int_eq(find("unit", "worker.service"), 0); /* only in the machine */
	ck_assert_str_eq(
	    found.path,
	    "/machine.slice/systemd-nspawn@box.service/payload/system.slice/worker.service");
	ck_assert_int_eq(find("unit", "editor"), 0); /* a user's service */
	ck_assert_str_eq(found.path,
	                 "/user.slice/user-1000.slice/user@1000.service/app.slice/editor.service");
	ck_assert_int_eq(find("unit", "system.slice"), 0);
	ck_assert_str_eq(found.path, "/system.slice");
	ck_assert_int_eq(find("unit", "postgresql"), -ENOENT);
	ck_assert_int_eq(find("unit", "a/b"), -EINVAL);
	ck_assert_int_eq(find("unit", ".."), -EINVAL);
	ck_assert_int_eq(find("unit", ""), -EINVAL);
	ck_assert_int_eq(find("volume", "nginx"), -EINVAL);
	/* Two at the same depth: refused, both named. */
	make("/other.slice/nginx.service");
	ck_assert_int_eq(find("unit", "nginx"), -EEXIST);
	ck_assert(!strcmp(found.path, "/system.slice/nginx.service") ||
	          !strcmp(found.other, "/system.slice/nginx.service"));
}
END_TEST

START_TEST(hostile_trees_are_bounded)
{
	char deep[4096] = "", name[200];

	/* A symbolic link to a matching directory is not followed, nor named. */
	make("/links");
	ck_assert_int_eq(symlinkat("../system.slice", rootfd, "links/lnk-" ID6 ".scope"), 0);
	ck_assert_int_eq(find("container", ID6), 0);
	ck_assert_str_eq(found.path, "/kubepods/burstable/pod" UID2 "/" ID6);
	/* A newline in a name would cut the printed path short: such a subtree is skipped. */
	make("/evil\n/system.slice/hidden.service");
	ck_assert_int_eq(find("unit", "hidden"), -ENOENT);
	/* Deeper than the walk goes (24 levels), or longer than a path may be: not found. */
	for (int i = 0; i < 30; i++)
		strcat(deep, "/d");
	strcat(deep, "/deep.service");
	make(deep);
	ck_assert_int_eq(find("unit", "deep"), -ENOENT);
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(deep, sizeof(deep), "/%s/%.60s/long.service", name, name);
	make(deep);
	ck_assert_int_eq(find("unit", "long"), -ENOENT);
	/* rootfd is read through a description of its own: a second search sees it all. */
	ck_assert_int_eq(find("unit", "nginx"), 0);
	ck_assert_int_eq(find("unit", "nginx"), 0);
	ck_assert_int_eq(ember_cgroup_find(-1, "unit", "nginx", &found), -EBADF);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cgroup_find");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, finds_each_runtimes_container);
	tcase_add_test(tc, a_unique_prefix_is_enough_a_shared_one_is_refused);
	tcase_add_test(tc, finds_pods_of_both_drivers);
	tcase_add_test(tc, finds_units_the_shallowest_first);
	tcase_add_test(tc, hostile_trees_are_bounded);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
