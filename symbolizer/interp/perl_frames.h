/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names Perl frames from a process's memory, as Perl's caller() names them:
 * a sub by its CV (what the eBPF walker records, bpf/perl.h) as its
 * package's name, "::" and its own ("Shop::Cart::leaf_a"; an anonymous sub
 * is its package's "__ANON__", "Shop::__ANON__"; a lexical sub, whose CV
 * holds its name itself, is named the same way), with the file it was
 * defined in; an eval by the COP it runs ("(eval)", and the COP's file:
 * "(eval 12)" for a string eval); the main program "main", with its file.
 * Each gives the checksum the walker computed, which tells a CV or COP
 * freed and reused since the sample.
 *
 * Memory comes through a read callback (the process's /proc/PID/mem in the
 * symbolizer, a buffer in tests and fuzzing). Everything read is hostile:
 * an SV's type must be what the structure needs (a CV, a GV with a GP, a
 * stash with a name), names and files are capped (-EBADMSG otherwise);
 * memory that cannot be read is -EFAULT.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PERL_FRAMES_H
#define EMBER_SYMBOLIZER_INTERP_PERL_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/perl_layout.h"

#define EMBER_PERL_MAX_STRING 4096 /* bytes of a name or file */

/* Reads len bytes at addr into buf: 0, or a negative errno. */
typedef int (*ember_perl_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

struct ember_perl_sub {
	uint32_t checksum; /* what the walker computes */
	char *name;
	char *file; /* NULL: none */
};

/*
 * Reads and names the frame of kind (EMBER_PERL_FRAME_*) at addr (a CV or a
 * COP, bpf/perl.h). Returns 0, -EFAULT when memory cannot be read, -EBADMSG
 * when it is not what this layout says, -EINVAL for a kind it does not know,
 * -ENOMEM. On success out owns memory: ember_perl_sub_free.
 */
int ember_perl_read_frame(const struct ember_perl_layout *l, ember_perl_read_fn read, void *ctx,
                          unsigned int kind, uint64_t addr, struct ember_perl_sub *out);
void ember_perl_sub_free(struct ember_perl_sub *s);

/* The NUL-terminated string at addr, at most max (<= EMBER_PERL_MAX_STRING) bytes, in a
 * malloc'd copy: 0, -EFAULT, -EBADMSG (longer), -ENOMEM. */
int ember_perl_read_cstring(ember_perl_read_fn read, void *ctx, uint64_t addr, size_t max,
                            char **out);

/* The HEK (a shared hash key: len, then its bytes) at addr, in a malloc'd C string (each
 * NUL byte as '?'): 0, -EFAULT, -EBADMSG (longer than EMBER_PERL_MAX_STRING), -ENOMEM. */
int ember_perl_read_hek(const struct ember_perl_layout *l, ember_perl_read_fn read, void *ctx,
                        uint64_t addr, char **out);

#endif
