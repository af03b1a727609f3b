/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DWARF sections a lookup reads, inflated into one in-memory ELF image for libdw.
 *
 * Opened on a file whose debug sections are compressed (SHF_COMPRESSED, as Debian's and
 * Fedora's debug packages ship them), libdw inflates every one of them with zlib at once:
 * location lists and macros too, which no lookup of a function, an inline chain or a
 * line reads (libc's: 10 MB, 70 ms on a 2-CPU host, at the first sample in libc). The
 * image holds only what lookups read, inflated by libdeflate where the build has it
 * (a third of zlib's time), else by zlib.
 *
 * The file is hostile: every size is checked against what the file holds and against
 * max_bytes, and a section that does not inflate to the size its header gives is refused.
 */
#ifndef EMBER_SYMBOLS_DEBUG_IMAGE_H
#define EMBER_SYMBOLS_DEBUG_IMAGE_H

#include <stddef.h>

typedef struct Elf Elf;

struct ember_debug_image {
	Elf *elf;   /* over data; NULL when no image was made */
	void *data; /* owned */
	size_t len;
};

/*
 * Makes the image of elf's debug sections into out. Returns 0; -ENOENT when none of
 * them is compressed (elf serves as it is); -ENOTSUP for a file this does not rewrite
 * (not a 64-bit little-endian ET_EXEC or ET_DYN file, a compression other than zlib,
 * .zdebug_ sections: libdw reads them as they are); -E2BIG past max_bytes; -EINVAL for
 * a section that does not inflate to its size; -ENOMEM.
 */
int ember_debug_image_open(Elf *elf, size_t max_bytes, struct ember_debug_image *out);
void ember_debug_image_close(struct ember_debug_image *img);

#endif
