/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unwinds a user stack from a copy of its top, taken by the sampler when the
 * process's tables were not loaded yet (bpf/records.h, struct
 * ember_stack_copy): the same rows (bpf/unwind_table.h, built by cfi.c) and
 * the same steps as the eBPF unwinder (bpf/unwind.bpf.h), over bytes instead
 * of the live process, x86-64.
 *
 * Hostile input: the copied bytes and the registers come from the profiled
 * process, the rows from files it maps. Every read is checked against the
 * copy's bounds, every step must move the stack pointer up (or leave through
 * a signal frame), and a walk takes at most `max` steps: a hostile copy
 * yields a wrong stack, never a fault, an out-of-range read or a long walk.
 */
#ifndef EMBER_SYMBOLIZER_UNWIND_STACK_UNWIND_H
#define EMBER_SYMBOLIZER_UNWIND_STACK_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/records.h"
#include "bpf/unwind_table.h"

/* The registers of the frame a copy starts at; the copy holds [sp, sp + len). */
struct ember_stack_regs {
	uint64_t pc, sp, fp;
	bool exact;  /* pc is where execution stopped, not a return address */
	bool has_di; /* di is the frame's rdi (its return address may be there: RA_DI rows) */
	bool has_bx; /* bx is the frame's rbx (the CFA of CFA_BX rows) */
	uint64_t di, bx;
};

/*
 * The row covering a pc (a return address already moved back into its
 * call). Returns 0 and the row (GAP where no CFI covers the pc or the
 * mapping has no table: frame pointers), -ENOENT when no mapping holds the
 * pc, -ENODATA when its mapping's table cannot be had.
 */
typedef int (*ember_row_lookup_fn)(void *ctx, uint64_t pc, struct ember_unwind_row *row);

struct ember_stack_walk {
	uint64_t *frames; /* the callers found, innermost first; regs.pc is not repeated */
	uint32_t max;     /* room in frames: the walk takes at most max + 1 steps */
	uint32_t n;
	uint32_t stop; /* enum ember_unwind_stop; EMBER_UNWIND_COMPLETE at the outermost frame */
	bool used_fp;  /* a frame was found through the frame pointer */
};

/*
 * The stack a copy stands for (bpf/records.h, struct ember_stack_copy:
 * words of stack, of which the len bytes carry the kept ones and two
 * bitmaps): written to out, each word not kept as 0 or, where it was not
 * zero, EMBER_COPY_DROPPED_WORD. Returns the bytes of stack written (8 *
 * words), or -EBADMSG when words, len and the bitmaps disagree (or out has
 * less room than the stack).
 */
int ember_stack_copy_expand(uint32_t words, const uint8_t *bytes, size_t len, uint8_t *out,
                            size_t room);

/*
 * Walks from regs over the len bytes of stack (which start at regs->sp) and
 * appends each caller's pc to w->frames. Sets w->n and w->stop.
 */
void ember_stack_unwind(const struct ember_stack_regs *regs, const uint8_t *stack, size_t len,
                        ember_row_lookup_fn lookup, void *ctx, struct ember_stack_walk *w);

#endif
