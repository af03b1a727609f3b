/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel symbols from /proc/kallsyms text: text symbols sorted by address,
 * each with the module it belongs to ("" for vmlinux). When the kernel hides
 * addresses (kptr_restrict) every address reads 0 and nothing resolves.
 * What a table holds is charged to the "kallsyms" owner
 * (symbolizer/memory/mem_owners.h).
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_KALLSYMS_H
#define EMBER_SYMBOLIZER_SYMBOLS_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/strtab.h"
#include "shared/stat_sink.h"

#define EMBER_KALLSYMS_MAX_BYTES   (128u << 20)
#define EMBER_KALLSYMS_MAX_SYMBOLS (4u << 20)

struct ember_ksym {
	uint64_t addr;
	uint32_t name;   /* offset into names */
	uint32_t module; /* offset into names; points at "" for the kernel image */
};

struct ember_kallsyms {
	struct ember_ksym *syms;
	size_t nsyms;
	struct ember_strtab names;
	bool addresses_hidden; /* every address was 0 */
	size_t bad_lines;
};

int ember_kallsyms_parse(const char *text, size_t len, struct ember_kallsyms *out);
/* Reads and parses a kallsyms file from fd. */
int ember_kallsyms_load_fd(int fd, struct ember_kallsyms *out);
void ember_kallsyms_free(struct ember_kallsyms *k);

/* The notes of /sys/kernel/notes are at most this long (a few notes of the kernel image). */
#define EMBER_KERNEL_NOTES_MAX_BYTES 4096
/*
 * The running kernel's GNU build id from the raw ELF notes of /sys/kernel/notes (Elf64_Nhdr
 * records: sizes, type, name and description each padded to 4 bytes), as lowercase hex into
 * hex. Returns 0, -ENOENT (no NT_GNU_BUILD_ID note named "GNU"), or -EINVAL for notes that
 * run past len or an id of more than 64 bytes (the hex must fit hex_size).
 */
int ember_kernel_build_id(const void *notes, size_t len, char *hex, size_t hex_size);

/* kallsyms.* statistics into p. */
void ember_kallsyms_report_stats(const struct ember_kallsyms *k,
                                 const struct ember_stat_sink *sink);

/* The symbol containing addr, or NULL. */
const struct ember_ksym *ember_kallsyms_lookup(const struct ember_kallsyms *k, uint64_t addr);
/* Whether an address in s lies between two symbols of the kernel image, which a later read
 * gives again: not in a module or BPF program, which come and go, nor in a gap next to them. */
bool ember_kallsyms_settled(const struct ember_kallsyms *k, const struct ember_ksym *s);

static inline const char *ember_ksym_name(const struct ember_kallsyms *k,
                                          const struct ember_ksym *s)
{
	return ember_strtab_at(&k->names, s->name);
}
static inline const char *ember_ksym_module(const struct ember_kallsyms *k,
                                            const struct ember_ksym *s)
{
	return ember_strtab_at(&k->names, s->module);
}

#endif
