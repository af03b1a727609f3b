// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/ruby_elf.h"

#include <errno.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#define STUB_BYTES      128         /* of rb_id2str and its target */
#define MAX_LOOP_BYTES  (64u << 10) /* of rb_vm_exec scanned for calls */
#define MIN_CORE_BYTES  4096        /* vm_exec_core is tens of KiB: nothing it calls comes close */
#define R_DTPMOD64      16 /* R_X86_64_DTPMOD64 */
#define R_DTPOFF64      17 /* R_X86_64_DTPOFF64 */

enum wanted { W_API_VERSION, W_VM_EXEC, W_CURRENT_EC, W_ID2STR, W_TLS_GET_ADDR, W_COUNT };

static const char *const wanted_names[W_COUNT] = {
    [W_API_VERSION] = "ruby_api_version", [W_VM_EXEC] = "rb_vm_exec",
    [W_CURRENT_EC] = "ruby_current_ec",   [W_ID2STR] = "rb_id2str",
    [W_TLS_GET_ADDR] = "__tls_get_addr",
};

int ember_rb_decode_symbols(const uint8_t *code, size_t len, uint64_t vaddr, uint16_t ids_offset,
                            uint64_t *symbols)
{
	uint64_t base = 0;

	for (size_t i = 0; i + 7 <= len; i++) {
		const uint8_t *p = code + i;

		/* cmp r32, disp(%rip): the id against the table's last id, its first field */
		if (!base && p[0] == 0x39 && (p[1] & 0xc7) == 0x05)
			base = vaddr + i + 6 + (int64_t)ember_elf_disp32(p + 2);
		/* mov disp(%rip), r64: the table's ids */
		else if (base && (p[0] & 0xfb) == 0x48 && p[1] == 0x8b && (p[2] & 0xc7) == 0x05)
			return vaddr + i + 7 + (int64_t)ember_elf_disp32(p + 3) == base + ids_offset
			           ? (*symbols = base, 0)
			           : -ENOENT;
	}
	return -ENOENT;
}

struct tls_pair {
	uint64_t slot, offset;
	bool have_slot, have_offset;
};

/* The first DTPMOD64 (the module id's slot) and DTPOFF64 (the offset in the block). */
static int take_tls_pair(void *ctx, uint32_t type, uint64_t offset, uint64_t value)
{
	struct tls_pair *p = ctx;

	if (type == R_DTPMOD64 && !p->have_slot) {
		p->slot = offset;
		p->have_slot = true;
	} else if (type == R_DTPOFF64 && !p->have_offset) {
		p->offset = value;
		p->have_offset = true;
	}
	return p->have_slot && p->have_offset;
}

/* The DTPMOD64 slot and the offset (DTPOFF64) of the TLS symbol sym, from the relocations. */
static int find_tls(const struct ember_elf_image *f, const char *sym, uint64_t *slot,
                    uint64_t *offset)
{
	struct tls_pair p = {0};

	if (!ember_elf_relocations(f, sym, take_tls_pair, &p))
		return -ENOENT;
	*slot = p.slot;
	*offset = p.offset;
	return 0;
}

/* vm_exec_core: of the functions rb_vm_exec calls directly, the largest in .eh_frame. */
static int find_core(const struct ember_elf_image *f, const struct ember_elf_sym *exec,
                     uint64_t core[2])
{
	size_t len = exec->size < MAX_LOOP_BYTES ? exec->size : MAX_LOOP_BYTES;
	uint8_t *code = len > 5 ? malloc(len) : NULL;
	uint64_t best = 0;

	if (!code || ember_elf_image_read(f, exec->addr, code, len)) {
		free(code);
		return -ENOENT;
	}
	for (size_t i = 0; i + 5 <= len; i++) {
		uint64_t target = exec->addr + i + 5 + (int64_t)ember_elf_disp32(code + i + 1), s,
			 e;

		if (code[i] == 0xe8 && ember_elf_image_in_segment(f, target, PF_X) &&
		    (target < exec->addr || target >= exec->addr + exec->size) &&
		    !ember_elf_fde_bounds(f, target, &s, &e) && s == target &&
		    e - s >= MIN_CORE_BYTES && e - s > best && e - s <= EMBER_RB_MAX_LOOP) {
			core[0] = s;
			core[1] = e;
			best = e - s;
		}
	}
	free(code);
	return best ? 0 : -ENOENT;
}

/* ruby_global_symbols, from rb_id2str or the function it jumps to. */
static uint64_t find_symbols(const struct ember_elf_image *f, const struct ember_rb_elf *out,
                             uint64_t id2str)
{
	uint8_t code[STUB_BYTES];
	uint64_t symbols = 0, at = id2str;

	for (int hop = 0; hop < 2; hop++) {
		if (ember_elf_image_read(f, at, code, sizeof(code)))
			return 0;
		if (!ember_rb_decode_symbols(code, sizeof(code), at, out->layout.symbols_ids,
		                             &symbols) &&
		    ember_elf_image_in_segment(f, symbols, PF_W))
			return symbols;
		for (size_t i = 0; i + 5 <= 32; i++) /* a tail call near the start */
			if (code[i] == 0xe9) {
				at = at + i + 5 + (int64_t)ember_elf_disp32(code + i + 1);
				break;
			}
	}
	return 0;
}

static void ruby_facts(const struct ember_elf_image *f, const struct ember_elf_sym *syms,
                       struct ember_rb_elf *out)
{
	uint32_t api[3];
	uint64_t slot = 0, offset = 0;

	out->kind = EMBER_RB_ELF_UNSUPPORTED;
	if (ember_elf_image_read(f, syms[W_API_VERSION].addr, api, sizeof(api))) {
		out->why = "its ruby_api_version cannot be read";
		return;
	}
	if (ember_rb_layout_for(api[0], api[1], &out->layout)) {
		out->why = "a Ruby version ember has no layout for (ember reads Ruby 3.1)";
		return;
	}
	out->teeny = api[2];
	if (syms[W_CURRENT_EC].type != STT_TLS ||
	    find_tls(f, wanted_names[W_CURRENT_EC], &slot, &offset) ||
	    offset > EMBER_RB_MAX_TLS - 8 || !ember_elf_image_in_segment(f, slot, PF_W)) {
		out->why = "its execution context is not reached through glibc's dynamic TLS "
			   "(a static Ruby, or TLS descriptors)";
		return;
	}
	out->modid_slot = slot;
	out->tls_offset = (uint16_t)offset;
	out->loop[1][0] = syms[W_VM_EXEC].addr;
	out->loop[1][1] = syms[W_VM_EXEC].addr + syms[W_VM_EXEC].size;
	if (!syms[W_VM_EXEC].size || syms[W_VM_EXEC].size > EMBER_RB_MAX_LOOP ||
	    find_core(f, &syms[W_VM_EXEC], out->loop[0])) {
		out->why = "its interpreter loop (vm_exec_core) cannot be found";
		return;
	}
	if (syms[W_ID2STR].addr)
		out->global_symbols = find_symbols(f, out, syms[W_ID2STR].addr);
	out->kind = EMBER_RB_ELF_RUBY;
}

static int read_elf(Elf *elf, void *facts)
{
	struct ember_rb_elf *out = facts;
	struct ember_elf_image f;
	struct ember_elf_sym syms[W_COUNT];
	int err;

	memset(out, 0, sizeof(*out));
	err = ember_elf_image_start(elf, &f, out->segs, &out->nsegs, wanted_names, W_COUNT, syms);
	if (err)
		return err;
	out->has_dtv =
	    ember_elf_image_dtv(&f, &syms[W_TLS_GET_ADDR], &out->dtv_offset, &out->dtv_shift);
	if (syms[W_API_VERSION].addr && syms[W_VM_EXEC].addr)
		ruby_facts(&f, syms, out);
	return 0;
}

int ember_rb_elf_read(int fd, struct ember_rb_elf *out)
{
	return ember_elf_read_fd(fd, read_elf, out);
}

int ember_rb_elf_read_mem(const void *image, size_t len, struct ember_rb_elf *out)
{
	return ember_elf_read_memory(image, len, read_elf, out);
}
