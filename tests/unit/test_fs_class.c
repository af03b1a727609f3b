// SPDX-License-Identifier: Apache-2.0
/*
 * Which file systems can stop answering: local disk and memory file systems
 * are read in line, FUSE, NFS, CIFS, 9p, Ceph and anything unknown only
 * through a bounded path; and what they are called in logs and statistics.
 */
#include <linux/magic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "check_main.h"
#include "shared/fs_class.h"

static uint32_t magic_of(const char *path)
{
	struct statfs st;

	ck_assert_int_eq(statfs(path, &st), 0);
	return (uint32_t)st.f_type;
}

START_TEST(local_and_remote_types)
{
	static const uint32_t local[] = {
	    EXT4_SUPER_MAGIC,      XFS_SUPER_MAGIC, BTRFS_SUPER_MAGIC,    TMPFS_MAGIC,
	    OVERLAYFS_SUPER_MAGIC, SQUASHFS_MAGIC,  EROFS_SUPER_MAGIC_V1, PROC_SUPER_MAGIC};
	static const uint32_t remote[] = {FUSE_SUPER_MAGIC, NFS_SUPER_MAGIC,  SMB2_SUPER_MAGIC,
	                                  CIFS_SUPER_MAGIC, V9FS_MAGIC,       CEPH_SUPER_MAGIC,
	                                  AFS_SUPER_MAGIC,  CODA_SUPER_MAGIC, ECRYPTFS_SUPER_MAGIC};

	for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++)
		ck_assert_msg(ember_fs_is_local(local[i]), "0x%x counts as remote", local[i]);
	for (size_t i = 0; i < sizeof(remote) / sizeof(remote[0]); i++)
		ck_assert_msg(!ember_fs_is_local(remote[i]), "0x%x counts as local", remote[i]);
	/* Unknown types, and none at all, count as remote: a detour, never a hang. */
	ck_assert(!ember_fs_is_local(0x12345678));
	ck_assert(!ember_fs_is_local(0));
}
END_TEST

START_TEST(names)
{
	char buf[16];

	ck_assert_str_eq(ember_fs_name(EXT4_SUPER_MAGIC, buf), "ext4");
	ck_assert_str_eq(ember_fs_name(FUSE_SUPER_MAGIC, buf), "fuse");
	ck_assert_str_eq(ember_fs_name(NFS_SUPER_MAGIC, buf), "nfs");
	ck_assert_str_eq(ember_fs_name(OVERLAYFS_SUPER_MAGIC, buf), "overlay");
	ck_assert_str_eq(ember_fs_name(0, buf), "unknown");
	ck_assert_str_eq(ember_fs_name(0xabcd1234, buf), "0xabcd1234");
}
END_TEST

/* The file systems of this machine: /proc, a memfd (shmem), the root. */
START_TEST(this_machine)
{
	char path[64];
	int fd = memfd_create("fs-class", MFD_CLOEXEC);

	ck_assert_uint_eq(magic_of("/proc"), PROC_SUPER_MAGIC);
	ck_assert(ember_fs_is_local(magic_of("/proc")));
	ck_assert_int_ge(fd, 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ck_assert_uint_eq(magic_of(path), TMPFS_MAGIC);
	ck_assert(ember_fs_is_local(magic_of(path)));
	close(fd);
	/* Whatever this machine's root is, it is known: a test host's root is local. */
	ck_assert_msg(ember_fs_is_local(magic_of("/")), "/ is of type 0x%x", magic_of("/"));
}
END_TEST

static Suite *fs_class_suite(void)
{
	Suite *s = suite_create("fs_class");
	TCase *t = tcase_create("fs_class");

	tcase_add_test(t, local_and_remote_types);
	tcase_add_test(t, names);
	tcase_add_test(t, this_machine);
	suite_add_tcase(s, t);
	return s;
}

EMBER_CHECK_MAIN(fs_class_suite)
