// SPDX-License-Identifier: Apache-2.0
#include "shared/fs_class.h"

#include <linux/magic.h>
#include <stddef.h>
#include <stdio.h>

/* f_type values: linux/magic.h, and the file systems' own sources for the numbers it lacks. */
static const struct {
	uint32_t magic;
	const char *name;
	bool local;
} types[] = {
    {EXT4_SUPER_MAGIC, "ext4", true}, /* ext2, ext3 and ext4 share it */
    {XFS_SUPER_MAGIC, "xfs", true},
    {BTRFS_SUPER_MAGIC, "btrfs", true},
    {TMPFS_MAGIC, "tmpfs", true},
    {RAMFS_MAGIC, "ramfs", true},
    {HUGETLBFS_MAGIC, "hugetlbfs", true},
    {OVERLAYFS_SUPER_MAGIC, "overlay", true}, /* maps name the layer's own file (and its device) */
    {SQUASHFS_MAGIC, "squashfs", true},
    {EROFS_SUPER_MAGIC_V1, "erofs", true},
    {CRAMFS_MAGIC, "cramfs", true},
    {F2FS_SUPER_MAGIC, "f2fs", true},
    {MSDOS_SUPER_MAGIC, "vfat", true},
    {EXFAT_SUPER_MAGIC, "exfat", true},
    {0x5346544e, "ntfs", true},
    {ISOFS_SUPER_MAGIC, "iso9660", true},
    {UDF_SUPER_MAGIC, "udf", true},
    {0x2fc12fc1, "zfs", true},
    {0xca451a4e, "bcachefs", true},
    {0x3153464a, "jfs", true},
    {REISERFS_SUPER_MAGIC, "reiserfs", true},
    {NILFS_SUPER_MAGIC, "nilfs2", true},
    {PROC_SUPER_MAGIC, "proc", true},
    {SYSFS_MAGIC, "sysfs", true},
    {FUSE_SUPER_MAGIC, "fuse", false}, /* also virtiofs and fuse-overlayfs */
    {NFS_SUPER_MAGIC, "nfs", false},
    {SMB2_SUPER_MAGIC, "smb2", false},
    {CIFS_SUPER_MAGIC, "cifs", false},
    {SMB_SUPER_MAGIC, "smb", false},
    {V9FS_MAGIC, "9p", false},
    {CEPH_SUPER_MAGIC, "ceph", false},
    {AFS_FS_MAGIC, "afs", false},
    {AFS_SUPER_MAGIC, "afs", false},
    {CODA_SUPER_MAGIC, "coda", false},
    {0x7461636f, "ocfs2", false},
    {0x01161970, "gfs2", false},
    {0x0BD00BD0, "lustre", false},
    {0x47504653, "gpfs", false},
    {0x20030528, "orangefs", false},
    {0x786f4256, "vboxsf", false},
    {ECRYPTFS_SUPER_MAGIC, "ecryptfs", false}, /* stacked: its lower file system may be remote */
};

static int find(uint32_t magic)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].magic == magic)
			return (int)i;
	return -1;
}

bool ember_fs_is_local(uint32_t magic)
{
	int i = find(magic);

	return i >= 0 && types[i].local;
}

const char *ember_fs_name(uint32_t magic, char buf[16])
{
	int i = find(magic);

	if (i >= 0)
		return types[i].name;
	if (!magic)
		return "unknown";
	snprintf(buf, 16, "0x%x", magic);
	return buf;
}

const char *ember_stall_name(uint32_t pid, uint32_t major, uint32_t minor, uint32_t magic,
                             char *buf, size_t size)
{
	char type[16];

	if (major || minor)
		snprintf(buf, size, "the file system on device %u:%u (%s)", major, minor,
		         ember_fs_name(magic, type));
	else
		snprintf(buf, size, "process %u (a lock on its memory map)", pid);
	return buf;
}
