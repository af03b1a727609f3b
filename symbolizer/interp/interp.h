/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registry of interpreted runtimes: each enabled runtime's reader
 * (interp_ops.h) and its state. The rest of the symbolizer knows runtimes
 * only through it: it passes process events on to every enabled reader and
 * names an interpreted frame or marker by the runtime its tag gives
 * (bpf/interp.h). A frame of a runtime not enabled stays an unnamed frame of
 * its kind.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_INTERP_H
#define EMBER_SYMBOLIZER_INTERP_INTERP_H

#include <stdint.h>

#include "symbolizer/interp/interp_ops.h"
#include "symbolizer/interp/runtimes.h"

struct ember_interps {
	uint32_t enabled; /* 1u << kind: a runtime's frames are read, a row kind's rows */
	void *state[EMBER_ROW_KINDS]; /* each enabled reader's */
};

/* Starts the reader of each runtime or row kind in enabled (bits 1u << kind, bpf/interp.h),
 * naming as flags (EMBER_INTERP_*) say. */
int ember_interps_init(struct ember_interps *r, uint32_t enabled, uint32_t flags,
                       struct ember_broker_client *broker);
void ember_interps_free(struct ember_interps *r);

/* Process events, passed on to every enabled reader (interp_ops.h says when each comes). */
void ember_interps_on_maps(struct ember_interps *r, uint32_t pid, const struct ember_maps *maps,
                           uint64_t now_ns);
void ember_interps_on_exit_ahead(struct ember_interps *r, uint32_t pid);
void ember_interps_on_exec(struct ember_interps *r, uint32_t pid);
void ember_interps_on_exit(struct ember_interps *r, uint32_t pid);

/* The n user words of a sample with EMBER_STACK_INTERP, seen ahead of symbolization: each
 * interpreted frame goes to its reader now, while pid lives. */
void ember_interps_warm(struct ember_interps *r, uint32_t pid, const uint64_t *words, uint32_t n,
                        uint64_t now_ns);

/*
 * Names the frame or marker whose two words are w0 (ember_interp_word_runtime(w0) not 0)
 * and w1, of a sample of pid. r may be NULL (no runtime enabled).
 */
void ember_interps_frame(struct ember_interps *r, uint32_t pid, uint64_t w0, uint64_t w1,
                         uint64_t now_ns, struct ember_interp_frame *out);

/* The labels of the goroutine label set at addr a sample of Go program pid found, as
 * "key=value\n" lines (thread_ctx.h's ember_tctx_go_labels); NULL: none read. */
const char *ember_interps_go_labels(struct ember_interps *r, uint32_t pid, uint64_t addr,
                                    const uint64_t head[2], uint64_t now_ns);

/* The attributes of the span a sample of pid ran, from its thread-context record (with its
 * trace and span ids), as "name=value\n" lines (thread_ctx.h's ember_tctx_attrs); NULL. */
const char *ember_interps_span_attrs(struct ember_interps *r, uint32_t pid, uint64_t record,
                                     const uint8_t trace_id[16], const uint8_t span_id[8],
                                     uint64_t now_ns);

/* Each enabled reader's statistics. */
void ember_interps_stats(const struct ember_interps *r, const struct ember_stat_sink *sink);

#endif
