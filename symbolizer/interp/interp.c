// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/interp.h"

#include <string.h>

#include "symbolizer/interp/jvm.h"
#include "symbolizer/interp/perl.h"
#include "symbolizer/interp/python.h"
#include "symbolizer/interp/php.h"
#include "symbolizer/interp/ruby.h"
#include "symbolizer/interp/thread_ctx.h"
#include "symbolizer/interp/v8.h"

/* Each runtime's reader, by its number (bpf/interp.h), one line each; then the readers of
 * the other row kinds, which name no frames. */
static const struct ember_interp_ops *const readers[EMBER_ROW_KINDS] = {
    [EMBER_RUNTIME_PYTHON] = &ember_python_ops,     [EMBER_RUNTIME_RUBY] = &ember_ruby_ops,
    [EMBER_RUNTIME_PHP] = &ember_php_ops,           [EMBER_RUNTIME_PERL] = &ember_perl_ops,
    [EMBER_RUNTIME_JVM] = &ember_jvm_ops,           [EMBER_RUNTIME_V8] = &ember_v8_ops,
    [EMBER_ROW_THREAD_CTX] = &ember_thread_ctx_ops,
};

/* A marker of a runtime not enabled (or of a reason its reader does not know). */
#define RUNTIME_STOPPED(id, number, name, kind) [number] = "[" name " frames stopped]",
static const char *const stopped[EMBER_RUNTIME_MAX] = {EMBER_RUNTIMES(RUNTIME_STOPPED)};
#undef RUNTIME_STOPPED

/* The reader of runtime rt if it is enabled, else NULL. */
static const struct ember_interp_ops *reader(const struct ember_interps *r, uint32_t rt)
{
	return r && rt < EMBER_ROW_KINDS && (r->enabled & 1u << rt) ? readers[rt] : NULL;
}

int ember_interps_init(struct ember_interps *r, uint32_t enabled, uint32_t flags,
                       struct ember_broker_client *broker)
{
	int err = 0;

	memset(r, 0, sizeof(*r));
	for (uint32_t rt = 1; rt < EMBER_ROW_KINDS && !err; rt++)
		if ((enabled & 1u << rt) && readers[rt]) {
			err = readers[rt]->init(&r->state[rt], flags, broker);
			if (!err)
				r->enabled |= 1u << rt;
		}
	return err;
}

void ember_interps_free(struct ember_interps *r)
{
	for (uint32_t rt = 1; rt < EMBER_ROW_KINDS; rt++)
		if (reader(r, rt))
			readers[rt]->free(r->state[rt]);
	memset(r, 0, sizeof(*r));
}

void ember_interps_on_maps(struct ember_interps *r, uint32_t pid, const struct ember_maps *maps,
                           uint64_t now_ns)
{
	for (uint32_t rt = 1; rt < EMBER_ROW_KINDS; rt++)
		if (reader(r, rt))
			readers[rt]->on_maps(r->state[rt], pid, maps, now_ns);
}

void ember_interps_on_exit_ahead(struct ember_interps *r, uint32_t pid)
{
	for (uint32_t rt = 1; rt < EMBER_ROW_KINDS; rt++)
		if (reader(r, rt))
			readers[rt]->on_exit_ahead(r->state[rt], pid);
}

void ember_interps_on_exec(struct ember_interps *r, uint32_t pid)
{
	for (uint32_t rt = 1; rt < EMBER_ROW_KINDS; rt++)
		if (reader(r, rt))
			readers[rt]->on_exec(r->state[rt], pid);
}

void ember_interps_on_exit(struct ember_interps *r, uint32_t pid)
{
	for (uint32_t rt = 1; rt < EMBER_ROW_KINDS; rt++)
		if (reader(r, rt))
			readers[rt]->on_exit(r->state[rt], pid);
}

void ember_interps_warm(struct ember_interps *r, uint32_t pid, const uint64_t *words, uint32_t n,
                        uint64_t now_ns)
{
	for (uint32_t i = 0; i + 1 < n; i++) {
		uint32_t rt = ember_interp_word_runtime(words[i]);

		if (!rt)
			continue;
		if (!ember_interp_word_is_marker(words[i]) && reader(r, rt))
			readers[rt]->warm(r->state[rt], pid, words[i], words[i + 1], now_ns);
		i++; /* the frame's second word */
	}
}

void ember_interps_frame(struct ember_interps *r, uint32_t pid, uint64_t w0, uint64_t w1,
                         uint64_t now_ns, struct ember_interp_frame *out)
{
	uint32_t rt = ember_interp_word_runtime(w0);
	const struct ember_interp_ops *ops = reader(r, rt);

	memset(out, 0, sizeof(*out));
	out->runtime = rt;
	if (ember_interp_word_is_marker(w0))
		out->marker = ops           ? ops->marker(r->state[rt], w0)
		              : stopped[rt] ? stopped[rt]
		                            : "[interpreter frames stopped]";
	else if (ops)
		ops->frame(r->state[rt], pid, w0, w1, now_ns, out);
}

const char *ember_interps_go_labels(struct ember_interps *r, uint32_t pid, uint64_t addr,
                                    const uint64_t head[2], uint64_t now_ns)
{
	return reader(r, EMBER_ROW_THREAD_CTX)
	           ? ember_tctx_go_labels(r->state[EMBER_ROW_THREAD_CTX], pid, addr, head, now_ns)
	           : NULL;
}

const char *ember_interps_span_attrs(struct ember_interps *r, uint32_t pid, uint64_t record,
                                     const uint8_t trace_id[16], const uint8_t span_id[8],
                                     uint64_t now_ns)
{
	return reader(r, EMBER_ROW_THREAD_CTX)
	           ? ember_tctx_attrs(r->state[EMBER_ROW_THREAD_CTX], pid, record, trace_id,
	                              span_id, now_ns)
	           : NULL;
}

void ember_interps_stats(const struct ember_interps *r, const struct ember_stat_sink *sink)
{
	for (uint32_t rt = 1; rt < EMBER_ROW_KINDS; rt++)
		if (reader(r, rt))
			readers[rt]->stats(r->state[rt], sink);
}
