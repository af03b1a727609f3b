// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/perl_elf.h"

#include <errno.h>
#include <libelf.h>
#include <string.h>

#define STUB_BYTES 64 /* bytes of pthread_getspecific decoded */

enum wanted { W_RUNOPS, W_THR_KEY, W_REVISION, W_VERSION, W_SUBVERSION, W_GETSPECIFIC, W_COUNT };

static const char *const wanted_names[W_COUNT] = {
    [W_RUNOPS] = "Perl_runops_standard", [W_THR_KEY] = "PL_thr_key",
    [W_REVISION] = "PL_revision",        [W_VERSION] = "PL_version",
    [W_SUBVERSION] = "PL_subversion",    [W_GETSPECIFIC] = "pthread_getspecific",
};

/* The three version bytes (each a one-byte object): 0 or -ENOENT. */
static int read_version(const struct ember_elf_image *f, const struct ember_elf_sym *syms,
                        unsigned int v[3])
{
	for (int i = 0; i < 3; i++) {
		const struct ember_elf_sym *s = &syms[W_REVISION + i];
		uint8_t b;

		if (s->type != STT_OBJECT || s->size != 1 ||
		    ember_elf_image_read(f, s->addr, &b, 1))
			return -ENOENT;
		v[i] = b;
	}
	return v[0] == 5 ? 0 : -ENOENT;
}

static void perl_facts(const struct ember_elf_image *f, const struct ember_elf_sym *syms,
                       struct ember_perl_elf *out)
{
	const struct ember_elf_sym *run = &syms[W_RUNOPS], *key = &syms[W_THR_KEY];

	out->kind = EMBER_PERL_ELF_UNSUPPORTED;
	if (read_version(f, syms, out->version)) {
		out->why = "its version cannot be found (PL_revision, PL_version, PL_subversion)";
		return;
	}
	if (ember_perl_layout_for(out->version[1], &out->layout)) {
		out->why = "a Perl version ember has no layout for (ember reads Perl 5.36)";
		return;
	}
	if (!key->addr || key->type != STT_OBJECT || key->size != 4 ||
	    !ember_elf_image_in_segment(f, key->addr, PF_W)) {
		out->why = "a build without threads (no PL_thr_key; ember reads threaded builds)";
		return;
	}
	out->thr_key = key->addr;
	if (ember_elf_function_range(f, run, EMBER_PERL_MAX_LOOP, out->loop)) {
		out->why = "its interpreter loop (Perl_runops_standard) cannot be found";
		return;
	}
	out->kind = EMBER_PERL_ELF_PERL;
}

static int read_elf(Elf *elf, void *facts)
{
	struct ember_perl_elf *out = facts;
	struct ember_elf_image f;
	struct ember_elf_sym syms[W_COUNT];
	uint8_t code[STUB_BYTES];
	int err;

	memset(out, 0, sizeof(*out));
	err = ember_elf_image_start(elf, &f, out->segs, &out->nsegs, wanted_names, W_COUNT, syms);
	if (err)
		return err;
	/* The interpreter's loop is what makes a file Perl's; the rest says whether ember can
	 * walk it. */
	if (syms[W_RUNOPS].addr)
		perl_facts(&f, syms, out);
	if (syms[W_GETSPECIFIC].addr && syms[W_GETSPECIFIC].type == STT_FUNC)
		out->has_tsd =
		    !ember_elf_image_read(&f, syms[W_GETSPECIFIC].addr, code, sizeof(code)) &&
		    !ember_elf_glibc_tsd(code, sizeof(code), &out->tsd_offset);
	return 0;
}

int ember_perl_elf_read(int fd, struct ember_perl_elf *out)
{
	return ember_elf_read_fd(fd, read_elf, out);
}

int ember_perl_elf_read_mem(const void *image, size_t len, struct ember_perl_elf *out)
{
	return ember_elf_read_memory(image, len, read_elf, out);
}
