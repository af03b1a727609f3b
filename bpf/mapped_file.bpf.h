/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The file of a mapping as /proc/PID/maps names it, for the unwinder
 * (unwind.bpf.h: its table by file, and the mappings it reports to user
 * space): the symbolizer keys files by the device and inode maps show, so
 * the kernel's side must name them the same way.
 *
 * Since 6.6 a file that overlayfs (or FUSE passthrough) maps is a backing
 * file: its inode is the layer's, while maps shows the one the process
 * opened, kept beside it (the user path). Which files are backing files a
 * flag says whose bit moved between versions; a backing file is told by its
 * user path's file system instead. Reads past a file that is no backing file
 * are checked: they fail, or find no such file system.
 */
#ifndef EMBER_BPF_MAPPED_FILE_BPF_H
#define EMBER_BPF_MAPPED_FILE_BPF_H

#include "records.h"

#define VM_EXEC_FLAG 0x4 /* VM_EXEC in include/linux/mm.h: an executable mapping */

#define OVERLAYFS_MAGIC 0x794c7630
#define FUSE_MAGIC      0x65735546

struct path___ember {
	struct dentry *dentry;
} __attribute__((preserve_access_index));

struct backing_file___ember {
	struct path___ember user_path;
} __attribute__((preserve_access_index));

/* The dentry maps names for file (and its inode: d_inode). */
static __always_inline struct dentry *maps_dentry(struct file *file)
{
	struct backing_file___ember *bf = (void *)file; /* a backing file's first member */
	struct dentry *user;
	unsigned long magic;

	if (bpf_core_type_exists(struct backing_file___ember)) {
		user = BPF_CORE_READ(bf, user_path.dentry);
		magic = user ? BPF_CORE_READ(user, d_sb, s_magic) : 0;
		if (magic == OVERLAYFS_MAGIC || magic == FUSE_MAGIC)
			return user;
	}
	return BPF_CORE_READ(file, f_path.dentry);
}

/*
 * Fills the file of an EMBER_EV_MMAP event (records.h): its device and inode as
 * maps shows them, and its path within its mount, the file's name first.
 */
static __always_inline void mapped_file_event(struct ember_proc_event *ev, struct file *file)
{
	struct dentry *d = maps_dentry(file), *parent;
	struct inode *inode = BPF_CORE_READ(d, d_inode);

	ev->ino = BPF_CORE_READ(inode, i_ino);
	ev->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	for (int i = 0; i < EMBER_MMAP_DEPTH; i++) {
		parent = BPF_CORE_READ(d, d_parent);
		if (!parent || parent == d)
			break;
		bpf_probe_read_kernel_str(ev->name[i], EMBER_MMAP_NAME_LEN,
		                          BPF_CORE_READ(d, d_name.name));
		ev->depth = i + 1;
		d = parent;
	}
}

#endif
