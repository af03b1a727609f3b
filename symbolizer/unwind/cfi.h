/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Turns DWARF call frame information (.eh_frame, .debug_frame) into compact
 * unwind rows (bpf/unwind_table.h) for x86-64. Every byte of the sections is
 * hostile: every read is bounds-checked, counts are capped, and CFI that a
 * row cannot express becomes an INVALID row, where the unwinder stops.
 */
#ifndef EMBER_SYMBOLIZER_UNWIND_CFI_H
#define EMBER_SYMBOLIZER_UNWIND_CFI_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind_table.h"

#define EMBER_CFI_MAX_SECTION (256u << 20)

enum ember_cfi_section {
	EMBER_CFI_EH_FRAME = 0,
	EMBER_CFI_DEBUG_FRAME = 1,
};

/* Rows of one FDE, before the table is assembled. */
struct ember_cfi_fde {
	uint64_t start, end;
	size_t first_row, nrows; /* in the builder's raw rows */
};

struct ember_cfi_raw_row {
	uint64_t pc;
	struct ember_unwind_row row; /* row.pc unused here */
};

struct ember_cfi_builder {
	struct ember_cfi_fde *fdes;
	size_t nfdes, fdes_cap;
	struct ember_cfi_raw_row *raw;
	size_t nraw, raw_cap;
	size_t max_rows;
	/* What the parse met, for statistics and tests. */
	uint64_t cies, bad_entries, invalid_rows, signal_fdes, plt_rows;
};

/* A finished table: rows sorted by pc, ending with a GAP row past the last FDE. */
struct ember_unwind_rows {
	struct ember_unwind_row *rows;
	size_t count;
};

/* Memory a build may hold per row: a raw row (16 bytes) in an array grown by
 * doubling, then the finished row (8). */
#define EMBER_CFI_BUILD_BYTES_PER_ROW 40

void ember_cfi_builder_init(struct ember_cfi_builder *b, size_t max_rows);
void ember_cfi_builder_free(struct ember_cfi_builder *b);

/*
 * Parses one section: data holds its len bytes, loaded at section_vaddr.
 * Entries that cannot be parsed are skipped and counted. Returns 0, or
 * -ENOMEM, or -E2BIG when the rows would exceed max_rows.
 */
int ember_cfi_parse(struct ember_cfi_builder *b, const uint8_t *data, size_t len,
                    uint64_t section_vaddr, enum ember_cfi_section kind);

/*
 * Assembles the table: FDEs sorted by address (the first parsed wins where
 * two overlap), GAP rows between them, equal neighbours merged. Addresses
 * must fit in 32 bits; FDEs beyond are dropped. Returns 0 or -ENOMEM.
 */
int ember_cfi_finish(struct ember_cfi_builder *b, struct ember_unwind_rows *out);

void ember_unwind_rows_free(struct ember_unwind_rows *r);

/* The row covering addr (the last with pc <= addr), or NULL. */
const struct ember_unwind_row *ember_unwind_rows_find(const struct ember_unwind_rows *r,
                                                      uint64_t addr);

/*
 * Builds the table of an ELF image in memory (.eh_frame, then .debug_frame
 * for what it does not cover), of at most max_rows rows (0:
 * EMBER_UNWIND_MAX_TABLE_ROWS; building takes up to EMBER_CFI_BUILD_BYTES_PER_ROW
 * bytes a row). Returns 0, -ENOEXEC (not an x86-64 ELF), -ENOENT (no CFI),
 * -E2BIG (more rows) or another negative errno.
 */
int ember_cfi_from_elf(const void *image, size_t len, size_t max_rows,
                       struct ember_unwind_rows *out);
/* Same, for the ELF file open at fd. */
int ember_cfi_from_fd(int fd, size_t max_rows, struct ember_unwind_rows *out);

#endif
