/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Reads the sampled thread's OpenTelemetry thread context (thread_ctx.h)
 * into the sample: its trace and span ids, when the process has a row in
 * tctx_procs and the thread runs a span; in a Go program, where its
 * goroutine's labels are. One hash lookup per sample; a
 * process with a row pays two reads (LE) to six (GD: slot, vector, its
 * head, block, pointer, record). Every read is bpf_probe_read_user, which
 * fails on a page that is not there instead of waiting for it.
 */
#ifndef EMBER_BPF_THREAD_CTX_BPF_H
#define EMBER_BPF_THREAD_CTX_BPF_H

#include "scratch.bpf.h"
#include "thread_ctx.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_INTERP_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct ember_tctx_proc);
} tctx_procs SEC(".maps");

/*
 * The block of TLS module modid in the thread whose thread pointer is tp, or 0: the vector
 * must hold modid (its length is the word before entry 0, a thread's vector can be older
 * than the module: reading past its end reads the heap) and be of generation gen or later
 * (a TLS descriptor's: the module was loaded since), and the block must be allocated.
 */
static __always_inline __u64 tctx_dtv_block(__u64 tp, const struct ember_tctx_proc *p, __u64 modid,
                                            __u64 gen)
{
	__u64 dtv = 0, head[3] = {0}, block = 0;

	if (!modid || modid >= EMBER_TCTX_MAX_MODID ||
	    bpf_probe_read_user(&dtv, sizeof(dtv), (const void *)(tp + p->dtv_offset)) || !dtv ||
	    bpf_probe_read_user(head, sizeof(head), (const void *)(dtv - 16)) || modid > head[0] ||
	    head[2] < gen ||
	    bpf_probe_read_user(&block, sizeof(block),
	                        (const void *)(dtv + (modid << (p->dtv_shift & 7)))) ||
	    !block || block == ~0ull)
		return 0;
	return block;
}

static __always_inline bool tctx_static(__s64 off)
{
	return off < 0 && off > -EMBER_TCTX_MAX_STATIC;
}

/* The address of the thread's otel_thread_ctx_v1 (the pointer to its record), or 0. */
static __always_inline __u64 tctx_variable(const struct ember_tctx_proc *p, __u64 tp)
{
	__u64 w[3] = {0}, block;

	if (p->offset <= -EMBER_TCTX_MAX_OFFSET || p->offset >= EMBER_TCTX_MAX_OFFSET)
		return 0;
	switch (p->mode) {
	case EMBER_TCTX_LE:
		return tctx_static(p->offset) ? tp + p->offset : 0;
	case EMBER_TCTX_IE:
		if (bpf_probe_read_user(w, 8, (const void *)p->slot) || !tctx_static((__s64)w[0]))
			return 0;
		return tp + (__s64)w[0] + p->offset;
	case EMBER_TCTX_DESC:
		if (bpf_probe_read_user(w, 16, (const void *)p->slot))
			return 0;
		if (tctx_static((__s64)w[1]))
			return tp + (__s64)w[1] + p->offset;
		/* Dynamic: the argument points at {module id, offset, generation}. */
		if ((__s64)w[1] <= 0 || bpf_probe_read_user(w, 24, (const void *)w[1]))
			return 0;
		break;
	case EMBER_TCTX_GD:
		if (bpf_probe_read_user(w, 16, (const void *)p->slot))
			return 0;
		w[2] = 0;
		break;
	default:
		return 0;
	}
	if (w[1] >= EMBER_TCTX_MAX_OFFSET || !(block = tctx_dtv_block(tp, p, w[0], w[2])))
		return 0;
	return block + w[1] + p->offset;
}

/* The address of the label set of the goroutine the thread runs, or 0 (none, or g0's). */
static __always_inline __u64 tctx_go_labels(const struct ember_tctx_proc *p, __u64 tp)
{
	__u64 g = 0, m = 0, curg = 0, labels = 0;

	if (!tctx_static(p->offset) || p->go_m >= EMBER_TCTX_GO_MAX_FIELD ||
	    p->go_curg >= EMBER_TCTX_GO_MAX_FIELD || p->go_labels >= EMBER_TCTX_GO_MAX_FIELD ||
	    bpf_probe_read_user(&g, sizeof(g), (const void *)(tp + p->offset)) || !g ||
	    bpf_probe_read_user(&m, sizeof(m), (const void *)(g + p->go_m)) || !m ||
	    bpf_probe_read_user(&curg, sizeof(curg), (const void *)(m + p->go_curg)) || !curg ||
	    bpf_probe_read_user(&labels, sizeof(labels), (const void *)(curg + p->go_labels)))
		return 0;
	return labels;
}

/*
 * Fills in the trace and span ids of the sample in scratch slot `slot` when thread tgid's
 * process publishes thread contexts and the current thread runs a span: returns
 * EMBER_STACK_TRACE_CTX then; in a Go program, the address of the goroutine's labels and
 * EMBER_STACK_GO_LABELS; else 0 (the ids stay 0). A global function: the verifier checks
 * it once, on its own.
 */
__attribute__((noinline)) __u32 ember_tctx_read(__u32 tgid, __u32 slot)
{
	const struct ember_tctx_proc *row = bpf_map_lookup_elem(&tctx_procs, &tgid);
	struct sample_scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	struct task_struct *task = bpf_get_current_task_btf();
	struct ember_tctx_record rec;
	struct ember_tctx_proc p;
	__u64 var, ptr = 0;

	if (!row || !s)
		return 0;
	p = *row; /* the map's entry can change under us */
	if (p.mode == EMBER_TCTX_GO) {
		s->hdr.go_labels = tctx_go_labels(&p, BPF_CORE_READ(task, thread.fsbase));
		if (!s->hdr.go_labels ||
		    bpf_probe_read_user(s->hdr.go_labels_head, sizeof(s->hdr.go_labels_head),
		                        (const void *)s->hdr.go_labels))
			return 0;
		return EMBER_STACK_GO_LABELS;
	}
	var = tctx_variable(&p, BPF_CORE_READ(task, thread.fsbase));
	if (!var || bpf_probe_read_user(&ptr, sizeof(ptr), (const void *)var) || !ptr ||
	    bpf_probe_read_user(&rec, sizeof(rec), (const void *)ptr) || rec.valid != 1)
		return 0;
	__builtin_memcpy(s->hdr.trace_id, rec.trace_id, sizeof(rec.trace_id));
	__builtin_memcpy(s->hdr.span_id, rec.span_id, sizeof(rec.span_id));
	s->hdr.ctx_record = rec.attrs_data_size ? ptr : 0;
	return EMBER_STACK_TRACE_CTX;
}

#endif
