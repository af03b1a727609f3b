/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Whether a file's table (struct ember_file_entry, bpf/unwind_table.h)
 * serves the file the kernel found behind a pc, and the bias (pc - table
 * address) of the mapping it is in. Plain C, no helpers: the eBPF unwinder
 * (unwind.bpf.h) and the unit tests run the same lines.
 */
#ifndef EMBER_BPF_UNWIND_FILE_H
#define EMBER_BPF_UNWIND_FILE_H

#include "unwind_table.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

enum ember_file_fit {
	EMBER_FILE_FITS = 0,
	/* Not the file the table was built from: rewritten in place, or a new file that was
	 * given the inode number (its modification time or size differ). */
	EMBER_FILE_CHANGED,
	EMBER_FILE_NO_SEGMENT, /* the pc's file offset is in no executable segment */
};

/* What the kernel says of the file now (the vDSO: its image's size, no time). */
struct ember_file_seen {
	__s64 mtime_sec;
	__u32 mtime_nsec;
	__u64 size;
};

static __always_inline int ember_file_same(const struct ember_file_entry *f,
                                           const struct ember_file_seen *seen)
{
	return f->mtime_sec == seen->mtime_sec && f->mtime_nsec == seen->mtime_nsec &&
	       f->size == seen->size;
}

/*
 * A pc of the process's executable, whose code starts at start_code, or of
 * the vDSO at its base: the bias, from the address the table gives that start.
 */
static __always_inline int ember_file_base_bias(const struct ember_file_entry *f,
                                                const struct ember_file_seen *seen, __u64 base,
                                                __u64 *bias)
{
	if (!ember_file_same(f, seen))
		return EMBER_FILE_CHANGED;
	*bias = base - f->exe_start;
	return EMBER_FILE_FITS;
}

/*
 * A pc of a mapping of the file at vm_start, whose first byte is the file's byte
 * `offset` (the mapping's page offset times the page size): the bias, from the
 * executable segment that holds the pc's file offset. The mapping's other pcs lie
 * in the same segment: the kernel maps each segment on its own.
 */
static __always_inline int ember_file_mapping_bias(const struct ember_file_entry *f,
                                                   const struct ember_file_seen *seen,
                                                   __u64 vm_start, __u64 offset, __u64 pc,
                                                   __u64 *bias)
{
	__u64 at = pc - vm_start + offset;

	if (!ember_file_same(f, seen))
		return EMBER_FILE_CHANGED;
	for (int i = 0; i < EMBER_UNWIND_FILE_SEGS; i++) {
		if (i >= (int)f->nsegs)
			break;
		if (at >= f->segs[i].start && at < f->segs[i].end) {
			*bias = pc - (at + (__u64)f->segs[i].delta);
			return EMBER_FILE_FITS;
		}
	}
	return EMBER_FILE_NO_SEGMENT;
}

#endif
