/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a runtime's reader learned from each file processes map, read once
 * per file (by device and inode) through the broker's descriptor of the
 * mapped file and kept in a bounded cache: full, it starts over, and files
 * are read again as processes need them. A file that could not be opened is
 * tried again after retry_ns.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_INTERP_FILES_H
#define EMBER_SYMBOLIZER_INTERP_INTERP_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "shared/slots.h"
#include "symbolizer/client/broker_client.h"
#include "symbolizer/process/maps_parser.h"

/* Reads the facts (facts_size bytes at facts) of the file open at fd, mapped as path. */
typedef int (*ember_interp_file_fn)(int fd, const char *path, void *facts);

struct ember_interp_files {
	struct ember_slots slots;
	size_t facts_size;
	ember_interp_file_fn read;
	uint64_t retry_ns;
	uint64_t files_read, file_errors;
};

int ember_interp_files_init(struct ember_interp_files *f, size_t facts_size, uint32_t max,
                            ember_interp_file_fn read, uint64_t retry_ns);
void ember_interp_files_free(struct ember_interp_files *f);

/* The facts of the file mapped at e in pid's maps, read if not known; NULL if it cannot be
 * read (the facts are zero then too) or the cache has no room. Valid until the next call. */
const void *ember_interp_files_get(struct ember_interp_files *f, struct ember_broker_client *broker,
                                   uint32_t pid, const struct ember_maps *maps,
                                   const struct ember_map_entry *e, uint64_t now_ns);

#endif
