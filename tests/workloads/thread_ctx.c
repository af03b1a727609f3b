// SPDX-License-Identifier: Apache-2.0
/*
 * A traced program: it publishes a process context (OTEP 4719) and, on each of its
 * threads, a thread context (OTEP 4947) that changes span by span while it burns CPU, and
 * logs each span it ran, so that a profile's links can be checked against it.
 *
 *     thread_ctx SECONDS LOG LIBRARY|- plain|hostile
 *
 * Each of two threads runs spans back to back: span n runs span_work_a (n even) or
 * span_work_b (n odd) for 20 to 40 ms of its CPU time (THREAD_CTX_SPAN_MS to twice that) with the
 * thread's context pointing at a record of that span's ids (span_work_b also sleeps 2 ms in
 * span_wait, for off-CPU samples); between spans the context is empty (the pointer NULL) while
 * outside_span runs for 5 ms.
 *
 * hostile: between spans, also 3 ms each of what a reader must not take for a span:
 * slow_update (the record rewritten with the pointer NULL, as the OTEP's writers do),
 * bad_pointer (the pointer at memory that is not mapped) and not_valid (a record whose
 * valid byte is 0, its ids those of the last span). The ids say who made them: trace_id = 7e,
 * thread, n (4 bytes big-endian), then 10 bytes of the pid and a counter; span_id = 5a, thread,
 * kind ('a' or 'b'), n (4 bytes big-endian), 0.
 *
 * Where otel_thread_ctx_v1 lives: in this program (built with
 * -Wl,--export-dynamic-symbol=otel_thread_ctx_v1 -DTCTX_IN_PROGRAM: static TLS at a fixed
 * offset), in a library linked to it (-DTCTX_LINKED, thread_ctx_lib.c), or in LIBRARY,
 * opened with dlopen before the threads start (dynamic TLS; "-": none).
 *
 * The log has one line per span: "thread tid n kind start_ns end_ns trace_hex span_hex",
 * CLOCK_REALTIME nanoseconds around the time the context pointed at the span. Each record
 * has the attributes http.route ("/span/a" or "/span/b") and worker (the thread's number),
 * named by the process context's threadlocal.attribute_key_map.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "otel_ctx_publish.h"

#define THREADS 2

#if defined(TCTX_IN_PROGRAM)
__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;

static void tctx_set(void *record)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	otel_thread_ctx_v1 = record;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}
#elif defined(TCTX_LINKED)
void tctx_set(void *record);
#else
static void (*tctx_set)(void *record);
#endif

/* The OTEP's record: 28 bytes of header, then the attributes. */
struct record {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid;
	uint8_t trace_flags;
	uint16_t attrs_data_size;
	uint8_t attrs_data[64];
} __attribute__((packed));

_Static_assert(offsetof(struct record, attrs_data) == 28, "the OTEP's header");

static volatile uint64_t sink;
static double seconds;
static int hostile;
static unsigned span_ms = 20; /* a span lasts span_ms to 2 span_ms of CPU time */
static unsigned publish_after_ms;
static void *unmapped;
static FILE *log_file;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Burns ns of the thread's own CPU time: the phases' shares of samples follow their lengths
 * however many threads share the CPUs. */
static void burn_ns(uint64_t ns)
{
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;

	do {
		for (int i = 0; i < 20000; i++)
			sink += (uint64_t)i * 2654435761u;
	} while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end);
}

__attribute__((noinline)) static void span_work_a(uint64_t ns)
{
	burn_ns(ns);
	__asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays */
}

__attribute__((noinline)) static void span_wait(uint64_t ns)
{
	struct timespec t = {0, (long)ns};

	nanosleep(&t, NULL);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void span_work_b(uint64_t ns)
{
	burn_ns(ns);
	span_wait(2000000);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void slow_update(struct record *r)
{
	tctx_set(NULL);
	for (uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + 3000000;
	     now_ns(CLOCK_THREAD_CPUTIME_ID) < end;)
		for (int i = 0; i < 24; i++)
			r->trace_id[i % 16] ^= (uint8_t)i, r->span_id[i % 8] += 1;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void bad_pointer(void)
{
	tctx_set(unmapped);
	burn_ns(3000000);
	tctx_set(NULL);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void not_valid(struct record *r)
{
	r->valid = 0;
	tctx_set(r);
	burn_ns(3000000);
	tctx_set(NULL);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void outside_span(uint64_t ns)
{
	burn_ns(ns);
	__asm__ volatile("" ::: "memory");
}

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void *run(void *arg)
{
	unsigned int thread = (unsigned int)(uintptr_t)arg, seed = thread * 7919u + 1;
	uint64_t deadline = now_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9);
	pid_t tid = (pid_t)syscall(SYS_gettid);
	static struct record records[THREADS];
	struct record *r = &records[thread];
	char trace[33], span[17];

	for (uint32_t n = 0; now_ns(CLOCK_MONOTONIC) < deadline; n++) {
		char kind = n % 2 ? 'b' : 'a';
		uint64_t start, end, len = (span_ms + rand_r(&seed) % (span_ms + 1)) * 1000000ull;

		memset(r, 0, sizeof(*r));
		r->trace_id[0] = 0x7e;
		r->trace_id[1] = (uint8_t)thread;
		for (int i = 0; i < 4; i++)
			r->trace_id[2 + i] = (uint8_t)(n >> (24 - 8 * i));
		for (int i = 0; i < 4; i++)
			r->trace_id[6 + i] = (uint8_t)(getpid() >> (24 - 8 * i));
		r->trace_id[15] = 1;
		r->span_id[0] = 0x5a;
		r->span_id[1] = (uint8_t)thread;
		r->span_id[2] = (uint8_t)kind;
		for (int i = 0; i < 4; i++)
			r->span_id[3 + i] = (uint8_t)(n >> (24 - 8 * i));
		/* Attributes: http.route (key 0) "/span/a" or "/span/b", worker (key 1). */
		r->attrs_data[0] = 0;
		r->attrs_data[1] = 7;
		memcpy(r->attrs_data + 2, kind == 'a' ? "/span/a" : "/span/b", 7);
		r->attrs_data[9] = 1;
		r->attrs_data[10] = 1;
		r->attrs_data[11] = (uint8_t)('0' + thread);
		r->attrs_data_size = 12;
		r->valid = 1;
		r->trace_flags = 1;
		start = now_ns(CLOCK_REALTIME);
		tctx_set(r);
		if (kind == 'a')
			span_work_a(len);
		else
			span_work_b(len);
		tctx_set(NULL);
		end = now_ns(CLOCK_REALTIME);
		hex(r->trace_id, 16, trace);
		hex(r->span_id, 8, span);
		pthread_mutex_lock(&log_lock);
		fprintf(log_file, "thread %d %u %c %llu %llu %s %s\n", tid, n, kind,
		        (unsigned long long)start, (unsigned long long)end, trace, span);
		pthread_mutex_unlock(&log_lock);
		outside_span(5 * 1000000ull);
		if (hostile) {
			not_valid(r);
			slow_update(r);
			bad_pointer();
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct pb resource = {0}, payload = {0};
	pthread_t threads[THREADS];

	if (argc != 5)
		return fprintf(stderr, "usage: thread_ctx SECONDS LOG LIBRARY|- plain|hostile\n"),
		       2;
	seconds = atof(argv[1]);
	hostile = !strcmp(argv[4], "hostile");
	if (getenv("THREAD_CTX_SPAN_MS"))
		span_ms = (unsigned)atoi(getenv("THREAD_CTX_SPAN_MS"));
	/* A page that was mapped and is not any more. */
	unmapped = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(unmapped, 4096);
	log_file = fopen(argv[2], "w");
	if (!log_file)
		return perror(argv[2]), 1;
#if !defined(TCTX_IN_PROGRAM) && !defined(TCTX_LINKED)
	{
		void *lib = strcmp(argv[3], "-") ? dlopen(argv[3], RTLD_NOW | RTLD_GLOBAL) : NULL;

		if (!lib || !(tctx_set = (void (*)(void *))dlsym(lib, "tctx_set")))
			return fprintf(stderr, "thread_ctx: %s\n", dlerror()), 1;
	}
#endif
	/* As an SDK that starts late: after this long (ms), in which the spans run unpublished. */
	if (getenv("THREAD_CTX_PUBLISH_AFTER_MS"))
		publish_after_ms = (unsigned)atoi(getenv("THREAD_CTX_PUBLISH_AFTER_MS"));
	pb_key_value(&resource, 1, "service.name", "thread-ctx", 0);
	pb_bytes(&payload, 1, resource.b, resource.n);
	pb_key_value(&payload, 2, "threadlocal.schema_version", "tlsdesc_v1_dev", 0);
	pb_key_strings(&payload, 2, "threadlocal.attribute_key_map",
	               (const char *const[]){"http.route", "worker"}, 2);
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&threads[i], NULL, run, (void *)i);
	if (publish_after_ms) {
		struct timespec t = {publish_after_ms / 1000, (long)(publish_after_ms % 1000) * 1000000};

		nanosleep(&t, NULL);
	}
	if (otel_ctx_publish(&payload, (uint32_t)payload.n, otel_ctx_boottime_ns()))
		return 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(threads[i], NULL);
	fclose(log_file);
	return 0;
}
