/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parser for /proc/PID/maps text. The text comes from the kernel, but the
 * path names in it are chosen by the profiled process, so every line is
 * bounds-checked and a malformed line is skipped and counted.
 */
#ifndef EMBER_SYMBOLIZER_PROCESS_MAPS_PARSER_H
#define EMBER_SYMBOLIZER_PROCESS_MAPS_PARSER_H

#include <stddef.h>
#include <stdint.h>

#include "shared/strtab.h"

#define EMBER_MAPS_MAX_ENTRIES 65536
#define EMBER_MAPS_MAX_BYTES   (16u << 20)

enum ember_map_kind {
	EMBER_MAP_FILE = 0, /* a path: a binary, a library, a data file */
	EMBER_MAP_ANON,
	EMBER_MAP_VDSO,
	EMBER_MAP_VSYSCALL,
	EMBER_MAP_OTHER, /* [heap], [stack], memfd:..., etc. */
};

#define EMBER_MAP_R 0x1
#define EMBER_MAP_W 0x2
#define EMBER_MAP_X 0x4
#define EMBER_MAP_P 0x8 /* private */

struct ember_map_entry {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint8_t perms;
	uint8_t kind;    /* enum ember_map_kind */
	uint8_t deleted; /* the path ended in " (deleted)" (stripped) */
	uint8_t reserved;
	uint32_t path_off; /* offset of the NUL-terminated path in paths */
};

struct ember_maps {
	struct ember_map_entry *entries; /* sorted by start, non-overlapping */
	size_t count;
	struct ember_strtab paths;
	size_t bad_lines; /* lines that could not be parsed */
	/* Where the process publishes its context (OTEP 4719: a readable mapping named OTEL_CTX,
	 * the header at its start), kept when the rest goes; 0: none. */
	uint64_t context_addr;
};

/* Parses len bytes of maps text. Returns 0 or a negative errno; on success out owns memory. */
int ember_maps_parse(const char *text, size_t len, struct ember_maps *out);
void ember_maps_free(struct ember_maps *m);

/*
 * Keeps only the executable mappings (the only ones a frame can be in), in
 * arrays of exactly their size. Returns 0 or -ENOMEM (m is then unchanged).
 */
int ember_maps_keep_executable(struct ember_maps *m);
/* Bytes the entries and paths take (at least; the arrays may have room to spare). */
size_t ember_maps_bytes(const struct ember_maps *m);

/* The entry containing addr, or NULL. */
const struct ember_map_entry *ember_maps_find(const struct ember_maps *m, uint64_t addr);
const char *ember_maps_path(const struct ember_maps *m, const struct ember_map_entry *e);

/* Reads a whole maps file from fd (from offset 0), at most EMBER_MAPS_MAX_BYTES.
 * Returns the length and a malloc'd buffer in *out, or a negative errno. */
long ember_maps_read_fd(int fd, char **out);

#endif
