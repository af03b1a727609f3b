/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Stack copies for unwind.bpf.h (x86-64): where the unwinder meets a frame
 * whose process or mapping has no table loaded yet, the sample carries the
 * user stack above that frame (struct ember_stack_copy, records.h) and the
 * symbolizer unwinds it with the same tables. Copies are bounded three ways:
 * only samples that miss tables take one; a copy ends at the top of the
 * thread's stack when that is near (at most EMBER_MAX_STACK_COPY bytes); and
 * each CPU has a byte budget for them, a bucket that every sample fills with
 * its own size and every copy empties, holding at most copy_burst bytes. It
 * starts full, but the burst is a loan: the first copy_burst bytes a CPU's
 * samples carry repay it and fill nothing. So a CPU's copies add at most
 * max(the bytes of its samples, copy_burst) plus one copy: a run whose
 * samples carry more than the burst stays within twice the bytes of its
 * stacks alone, however short, and the first moments, when the running
 * processes' tables are not loaded yet, still get the burst at once. The
 * collector sets the burst from the sampling frequency
 * (EMBER_STACK_COPY_BURST_PER_HZ): a second of samples each with a copy,
 * about fifteen seconds of samples' bytes, so that the loan is repaid early
 * in a run at any frequency (a fixed burst outweighed a minute of 19 Hz
 * samples). Whether a sample may copy does not depend
 * on its copy's size (the bucket may go into debt by one copy): deep stacks
 * are not passed over for shallow ones, which would skew the profile. A
 * sample that finds the budget spent says so, and frame pointers take over.
 *
 * Copies go to the CPU sampler's slot of the `scratch` map (scratch.bpf.h),
 * into the `copy` room after the frames (off-CPU samples take no copies),
 * and keep only the words that could be addresses (records.h, struct
 * ember_stack_copy): the budget pays for what is sent.
 */
#ifndef EMBER_BPF_STACK_COPY_BPF_H
#define EMBER_BPF_STACK_COPY_BPF_H

#include "records.h"
#include "scratch.bpf.h"

/* The most a CPU's copy budget holds, and its loan at the start (set by the collector). */
const volatile __u64 copy_burst = EMBER_STACK_COPY_BURST(19);

struct copy_budget_state {
	__s64 left; /* bytes of copies this CPU may take now; one copy may take it below 0 */
	__u64 owed; /* of the burst: samples' bytes that fill nothing until repaid */
	__u64 started;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct copy_budget_state);
} copy_budgets SEC(".maps");

#define COPY_ERR_BUDGET (-1)
#define COPY_ERR_READ   (-2)

/* A CPU's budget starts full, owing what it holds. */
static __always_inline void copy_budget_start(struct copy_budget_state *b)
{
	if (!b->started) {
		b->started = 1;
		b->left = copy_burst;
		b->owed = copy_burst;
	}
}

/* Every sample earns copies as many bytes as it carries itself, once the burst is repaid. */
static __always_inline void copy_budget_earn(__u64 bytes)
{
	__u32 zero = 0;
	struct copy_budget_state *b = bpf_map_lookup_elem(&copy_budgets, &zero);
	__u64 repay;

	if (!b)
		return;
	copy_budget_start(b);
	repay = bytes < b->owed ? bytes : b->owed;
	b->owed -= repay;
	bytes -= repay;
	b->left =
	    b->left + (__s64)bytes < (__s64)copy_burst ? b->left + (__s64)bytes : (__s64)copy_burst;
}

/*
 * How much stack above sp a copy needs. The main thread's stack ends at
 * mm->start_stack (argc: the outermost frames lie just below); a glibc
 * thread's ends at its thread pointer (struct pthread sits at the top of the
 * thread's stack mapping). Elsewhere (a signal stack, a coroutine): as much as
 * a copy may hold.
 */
static __always_inline __u64 stack_copy_len(__u64 sp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 start = BPF_CORE_READ(task, mm, start_stack);
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase);
	__u64 top;

	if (sp < start && start - sp <= EMBER_MAX_STACK_COPY)
		top = start;
	else if (sp < fsbase && fsbase - sp <= EMBER_MAX_STACK_COPY)
		top = fsbase;
	else
		return EMBER_MAX_STACK_COPY;
	return (top - sp + 7) & ~7ull;
}

/* Reading the stack a page at a time: up to this many reads. */
#define COPY_PAGE       4096
#define COPY_MAX_CHUNKS (EMBER_MAX_STACK_COPY / COPY_PAGE + 1)
#define COPY_WORDS      (EMBER_MAX_STACK_COPY / 8)
#define COPY_BITMAP_MAX (EMBER_STACK_COPY_BITMAP_BYTES(COPY_WORDS) / 8)
/* Where a copy's stack bytes start in a scratch slot, at most: after the most frames. */
#define COPY_AT_MAX                                                                                \
	(sizeof(struct ember_sample_event) + 8 * (EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS) +     \
	 sizeof(struct ember_stack_copy))

/* Sorting a copy's words (struct ember_stack_copy): those kept move down, in order. */
struct copy_sort {
	__u64 at;     /* offset of the copy's stack bytes in the CPU sampler's scratch slot */
	__u64 lo, hi; /* the values kept: [lo, hi) */
	__u64 words;  /* copied */
	__u64 unread; /* bit j: page j from sp's was not there (its words unknown) */
	__u64 sp_off; /* sp's offset in its page */
	__u64 maps;   /* words of each bitmap */
};

static long copy_sort_step(__u64 i, void *ctx)
{
	struct copy_sort *cs = ctx;
	__u32 slot = SCRATCH_CPU;
	struct sample_scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	__u64 at = cs->at, k, w;

	if (!s)
		return 1;
	k = s->copy_kept_words;
	if (i >= cs->words || i >= COPY_WORDS || k >= COPY_WORDS || at > COPY_AT_MAX)
		return 1;
	if (!(i & 63)) {
		s->copy_kept[i >> 6] = 0;
		s->copy_nonzero[i >> 6] = 0;
	}
	w = *(__u64 *)((void *)s + at + 8 * i);
	if ((cs->unread >> (((cs->sp_off + 8 * i) / COPY_PAGE) & 7)) & 1) {
		s->copy_nonzero[i >> 6] |= 1ull << (i & 63); /* a walk that reads one stops */
	} else if (w >= cs->lo && w < cs->hi) {
		*(__u64 *)((void *)s + at + 8 * k) =
		    w; /* k <= i: a word not yet read is never hit */
		s->copy_kept[i >> 6] |= 1ull << (i & 63);
		s->copy_kept_words = k + 1;
	} else if (w) {
		s->copy_nonzero[i >> 6] |= 1ull << (i & 63);
	}
	return 0;
}

/* Appends bitmap word j of each map after the kept words. */
static long copy_maps_step(__u64 j, void *ctx)
{
	struct copy_sort *cs = ctx;
	__u32 slot = SCRATCH_CPU;
	struct sample_scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	__u64 at = cs->at, k, maps = cs->maps;

	if (!s)
		return 1;
	k = s->copy_kept_words;
	if (j >= maps || maps > COPY_BITMAP_MAX || k > COPY_WORDS || at > COPY_AT_MAX)
		return 1;
	*(__u64 *)((void *)s + at + 8 * (k + j)) = s->copy_kept[j];
	*(__u64 *)((void *)s + at + 8 * (k + maps + j)) = s->copy_nonzero[j];
	return 0;
}

/*
 * Keeps the words of the len bytes copied at offset at of the CPU sampler's
 * scratch slot that could be user addresses and appends the bitmaps (struct
 * ember_stack_copy). Returns the bytes the copy then holds.
 */
static __always_inline __u64 copy_sort(struct sample_scratch *s, __u64 at, __u64 len, __u64 sp,
                                       __u64 unread)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct copy_sort cs = {.at = at,
	                       .lo = EMBER_COPY_MIN_ADDR,
	                       .words = len / 8,
	                       .unread = unread,
	                       .sp_off = sp & (COPY_PAGE - 1)};

	cs.maps = EMBER_STACK_COPY_BITMAP_BYTES(cs.words) / 8;
	cs.hi = BPF_CORE_READ(task, mm, task_size);
	if (!cs.hi)
		cs.hi = 1ull << 56; /* the most a user address space has (5-level paging) */
	s->copy_kept_words = 0;
	bpf_loop(COPY_WORDS, copy_sort_step, &cs, 0);
	bpf_loop(COPY_BITMAP_MAX, copy_maps_step, &cs, 0);
	return 8 * (s->copy_kept_words + 2 * cs.maps);
}

/*
 * Writes a struct ember_stack_copy for the frame (pc, sp, fp) and the stack
 * above sp into the sample being built, after its first nframes frames.
 * Returns the bytes added to the record, COPY_ERR_BUDGET or COPY_ERR_READ.
 *
 * A global function: the verifier checks it once, on its own, rather than
 * along every path of the unwinder that leads to it.
 */
__attribute__((noinline)) long ember_copy_user_stack(__u32 nframes, __u64 pc, __u64 sp, __u64 fp,
                                                     __u32 exact)
{
	struct copy_budget_state *budget;
	struct ember_stack_copy *c;
	struct sample_scratch *s;
	__u64 len = stack_copy_len(sp), at, got = 0, end = 0, unread = 0, chunk, sent;
	__u32 zero = 0, slot = SCRATCH_CPU;
	void *bytes;

	s = bpf_map_lookup_elem(&scratch, &slot);
	budget = bpf_map_lookup_elem(&copy_budgets, &zero);
	if (!s || !budget)
		return COPY_ERR_READ;
	copy_budget_start(budget);
	if (budget->left <= 0)
		return COPY_ERR_BUDGET;
	if (len > EMBER_MAX_STACK_COPY)
		len = EMBER_MAX_STACK_COPY;
	/* After the frames: at most EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS of them. */
	if (nframes > EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS)
		return COPY_ERR_READ;
	at = sizeof(s->hdr) + 8 * (__u64)nframes;
	/* Checked again as the verifier sees it: the compiler may have let the check above
	 * bound another register than the one the copy's address is made from. */
	barrier_var(at);
	if (at > COPY_AT_MAX - sizeof(*c))
		return COPY_ERR_READ;
	c = (struct ember_stack_copy *)((void *)s + at);
	bytes = (void *)(c + 1);
	/*
	 * A read fails as a whole when a page of it cannot be read: then read it a
	 * page at a time. A page that is not there yet below one that is (a sample
	 * taken while the kernel faults in a stack page the program just moved
	 * into) holds nothing a walk needs, which was all written: its words go as
	 * unknown. Pages that fail at the end are past the stack mapping's end
	 * (its top was a guess): the copy ends before them.
	 */
	if (bpf_probe_read_user(bytes, len, (const void *)sp)) {
		for (int i = 0; i < COPY_MAX_CHUNKS; i++) {
			chunk = COPY_PAGE - ((sp + got) & (COPY_PAGE - 1));
			if (chunk > len - got)
				chunk = len - got;
			if (!chunk || got > EMBER_MAX_STACK_COPY || chunk > COPY_PAGE)
				break;
			if (bpf_probe_read_user(bytes + got, chunk, (const void *)(sp + got)))
				unread |= 1ull << i;
			else
				end = got + chunk;
			got += chunk;
		}
		len = end & ~7ull;
		if (len < 8)
			return COPY_ERR_READ;
	}
	sent = copy_sort(s, at + sizeof(*c), len, sp, unread);
	c->pc = pc;
	c->sp = sp;
	c->fp = fp;
	c->len = sent;
	c->flags = (exact ? EMBER_COPY_EXACT_PC : 0) | (s->copy_di_ok ? EMBER_COPY_DI : 0) |
	           (s->copy_bx_ok ? EMBER_COPY_BX : 0);
	c->di = s->copy_di_ok ? s->copy_di : 0;
	c->bx = s->copy_bx_ok ? s->copy_bx : 0;
	c->words = len / 8;
	budget->left -= (__s64)(sent + sizeof(*c));
	return sent + sizeof(*c);
}

#endif
