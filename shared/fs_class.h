/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which file systems can stop answering. A file on a local file system
 * (ext4, xfs, btrfs, tmpfs, overlayfs, squashfs, erofs, ...) is read from a
 * disk or from memory; one on FUSE (the fuse-overlayfs of rootless
 * containers too), NFS, CIFS/SMB, 9p, Ceph, ... waits for a daemon or a
 * server that may never answer, and a process that waits for it may not even
 * be killable. Both processes ask this table, by the statfs f_type magic
 * number, whether a descriptor may be read in line or only through a
 * bounded path, and what to call the file system in logs and statistics.
 * Unknown types count as remote: a new local file system costs a detour, a
 * new remote one never a hang.
 */
#ifndef EMBER_SHARED_FS_CLASS_H
#define EMBER_SHARED_FS_CLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True for the file systems that answer from a local disk or memory. */
bool ember_fs_is_local(uint32_t magic);

/* A short name ("ext4", "fuse", "nfs", ...); "unknown" for 0 (never learnt); "0x%x" otherwise. */
const char *ember_fs_name(uint32_t magic, char buf[16]);

/*
 * What stalled, for logs: "the file system on device 0:52 (fuse)" with a device (major or
 * minor not 0), else "process 123 (a lock on its memory map)". Returns buf.
 */
const char *ember_stall_name(uint32_t pid, uint32_t major, uint32_t minor, uint32_t magic,
                             char *buf, size_t size);

#endif
