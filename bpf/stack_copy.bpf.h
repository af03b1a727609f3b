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
 * (EMBER_STACK_COPY_BURST_PER_HZ): about ten seconds of samples' bytes, so
 * that the loan is repaid early in a run at any frequency (a fixed burst
 * outweighed a minute of 19 Hz samples). Whether a sample may copy does not depend
 * on its copy's size (the bucket may go into debt by one copy): deep stacks
 * are not passed over for shallow ones, which would skew the profile. A
 * sample that finds the budget spent says so, and frame pointers take over.
 *
 * Copies go to the CPU sampler's slot of the `scratch` map (scratch.bpf.h),
 * into the `copy` room after the frames (off-CPU samples take no copies).
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

/*
 * Writes a struct ember_stack_copy for the frame (pc, sp, fp) and the stack
 * above sp into the sample being built, after its first nframes frames.
 * Returns the bytes added to the record, COPY_ERR_BUDGET or COPY_ERR_READ.
 */
/* Reading the stack a page at a time: up to this many reads. */
#define COPY_PAGE       4096
#define COPY_MAX_CHUNKS (EMBER_MAX_STACK_COPY / COPY_PAGE + 1)

/*
 * A global function: the verifier checks it once, on its own, rather than
 * along every path of the unwinder that leads to it.
 */
__attribute__((noinline)) long ember_copy_user_stack(__u32 nframes, __u64 pc, __u64 sp, __u64 fp,
                                                     __u32 exact)
{
	struct copy_budget_state *budget;
	struct ember_stack_copy *c;
	struct sample_scratch *s;
	__u64 len = stack_copy_len(sp), at, got = 0, chunk;
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
	c = (struct ember_stack_copy *)((void *)s + at);
	bytes = (void *)(c + 1);
	/*
	 * A read fails as a whole when a page of it cannot be read (never touched,
	 * or past the end of the stack's mapping where its top was a guess): then
	 * keep what can be read from sp up, a page at a time.
	 */
	if (bpf_probe_read_user(bytes, len, (const void *)sp)) {
		for (int i = 0; i < COPY_MAX_CHUNKS; i++) {
			chunk = COPY_PAGE - ((sp + got) & (COPY_PAGE - 1));
			if (chunk > len - got)
				chunk = len - got;
			if (!chunk || got > EMBER_MAX_STACK_COPY || chunk > COPY_PAGE ||
			    bpf_probe_read_user(bytes + got, chunk, (const void *)(sp + got)))
				break;
			got += chunk;
		}
		len = got & ~7ull;
		if (len < 8)
			return COPY_ERR_READ;
	}
	c->pc = pc;
	c->sp = sp;
	c->fp = fp;
	c->len = len;
	c->flags = exact ? EMBER_COPY_EXACT_PC : 0;
	budget->left -= (__s64)(len + sizeof(*c));
	return len + sizeof(*c);
}

#endif
