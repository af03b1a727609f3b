/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names for the entries of a file's procedure linkage tables (.plt,
 * .plt.sec, .plt.got): "target@plt", as objdump and perf print them. Each
 * entry's instructions are decoded to find the GOT slot it jumps through
 * (x86-64: jmp *slot(%rip), or the relocation index it pushes; AArch64:
 * adrp/ldr), and the dynamic relocation of that slot names the target. An
 * entry that cannot be decoded (the PLT header, an unknown layout or
 * machine) is named "[plt]". The file is hostile: sections, relocations and
 * entries are bounds-checked and counted against caps.
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_PLT_H
#define EMBER_SYMBOLIZER_SYMBOLS_PLT_H

#include <stddef.h>
#include <stdint.h>

#define EMBER_PLT_MAX_RELOCS  (1u << 20) /* jump-slot and GOT relocations kept */
#define EMBER_PLT_MAX_ENTRIES (1u << 20) /* PLT entries named, over all PLT sections */
#define EMBER_PLT_UNKNOWN     "[plt]"

typedef struct Elf Elf;

struct ember_plt_sink {
	void *ctx;
	/* One entry [addr, addr+size) and its name; returns 0 or a negative errno (stops). */
	int (*add)(void *ctx, uint64_t addr, uint64_t size, const char *name);
	/* The name of the function at addr (an IRELATIVE target), or NULL. May be NULL.
	 * The name may live in storage that the next add moves: it is copied first. */
	const char *(*name_at)(void *ctx, uint64_t addr);
};

/*
 * Reports every PLT entry of elf (e_machine machine) to sink. Returns 0 (also
 * when the file has no PLT) or the first error sink->add returned.
 */
int ember_plt_entries(Elf *elf, uint16_t machine, const struct ember_plt_sink *sink);

#endif
