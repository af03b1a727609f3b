// SPDX-License-Identifier: Apache-2.0
/*
 * A library that owns a thread's OpenTelemetry thread context (OTEP 4947), as a tracing
 * SDK's native part would: the exported thread-local otel_thread_ctx_v1 and the one function
 * that points it at a record. Built as TLS descriptors (-mtls-dialect=gnu2), general
 * dynamic (the default) or initial exec (-ftls-model=initial-exec) by the tests.
 */
__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;

__attribute__((visibility("default"))) void tctx_set(void *record)
{
	/* The OTEP's writers order with compiler fences only: a reader stops the thread. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	otel_thread_ctx_v1 = record;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}
