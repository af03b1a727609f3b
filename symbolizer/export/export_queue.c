// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/export/export_queue.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symbolizer/export/otlp_transport.h"
#include "symbolizer/formats/gzip.h"
#include "symbolizer/memory/mem_owners.h"
#include "shared/clock.h"
#include "shared/log.h"

#define NS_PER_MS 1000000ull

struct batch {
	struct batch *next;
	uint8_t *data;
	size_t len; /* counted in the queue's bytes unless evicted */
	bool compressed;
	bool evicted; /* dropped while the export thread works on it */
	uint64_t nsamples;
};

struct ember_exporter {
	struct ember_export_config cfg;
	struct ember_transport *transport;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the thread waits for work or for a backoff to pass */
	pthread_cond_t idle; /* flushers wait for an empty queue */
	struct batch *head, *tail;
	struct batch *current; /* the batch the thread works on (always the head) */
	bool stopping;
	atomic_bool abort_transfer;
	struct ember_export_stats st;
	uint64_t rng;
};

uint64_t ember_export_backoff_ms(uint64_t initial_ms, uint64_t max_ms, unsigned int retry,
                                 uint64_t random)
{
	uint64_t d = initial_ms ? initial_ms : 1;

	for (unsigned int i = 1; i < retry && d < max_ms; i++)
		d *= 2;
	if (d > max_ms)
		d = max_ms;
	/* Jitter in [0.5, 1.5): exporters that failed together do not retry together. */
	return d / 2 + (uint64_t)((double)(random >> 11) * 0x1.0p-53 * (double)d);
}

static uint64_t next_random(struct ember_exporter *e)
{
	/* xorshift64*: jitter needs no secrecy, and no system call per retry. */
	e->rng ^= e->rng >> 12;
	e->rng ^= e->rng << 25;
	e->rng ^= e->rng >> 27;
	return e->rng * 0x2545F4914F6CDD1Dull;
}

static struct timespec abs_monotonic(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull),
	                         .tv_nsec = (long)(ns % 1000000000ull)};
}

static void free_batch(struct batch *b)
{
	free(b->data);
	free(b);
}

/* Unlinks the head (the batch the thread finished with). */
static void pop_head(struct ember_exporter *e)
{
	struct batch *b = e->head;

	e->head = b->next;
	if (!e->head)
		e->tail = NULL;
	if (!b->evicted)
		e->st.queue_bytes -= b->len;
	e->st.queued--;
	free_batch(b);
}

static const char *describe(const struct ember_send_result *r, char *buf, size_t size)
{
	if (r->grpc_status >= 0)
		snprintf(buf, size, "gRPC status %d%s%s", r->grpc_status, r->message[0] ? ": " : "",
		         r->message);
	else if (r->http_status)
		snprintf(buf, size, "HTTP %d%s%s", r->http_status, r->message[0] ? ": " : "",
		         r->message);
	else
		snprintf(buf, size, "%s", r->message[0] ? r->message : "no answer");
	return buf;
}

static void note_result(struct ember_exporter *e, const struct ember_send_result *r)
{
	char what[320];

	e->st.attempts++;
	if (r->http_status)
		e->st.last_http_status = r->http_status;
	if (r->grpc_status >= 0)
		e->st.last_grpc_status = r->grpc_status;
	if (r->outcome != EMBER_SEND_OK)
		snprintf(e->st.last_error, sizeof(e->st.last_error), "%s",
		         describe(r, what, sizeof(what)));
}

/* Sleeps until until_ns unless the batch is evicted or the exporter stops. */
static void backoff_wait(struct ember_exporter *e, struct batch *b, uint64_t until_ns)
{
	struct timespec ts = abs_monotonic(until_ns);

	while (!b->evicted && !e->stopping && ember_monotonic_ns() < until_ns)
		if (pthread_cond_timedwait(&e->wake, &e->lock, &ts) == ETIMEDOUT)
			break;
}

/* Compresses the batch once, outside the lock. */
static void compress(struct ember_exporter *e, struct batch *b)
{
	uint8_t *z = NULL;
	size_t zlen = 0;
	int err;

	pthread_mutex_unlock(&e->lock);
	err = ember_gzip(b->data, b->len, &z, &zlen);
	pthread_mutex_lock(&e->lock);
	/* Incompressible data goes as it is: the queue's bytes must never grow. */
	if (err || b->evicted || zlen >= b->len) {
		free(z);
		return;
	}
	e->st.queue_bytes = e->st.queue_bytes - b->len + zlen;
	free(b->data);
	b->data = z;
	b->len = zlen;
	b->compressed = true;
}

/* Delivers the head batch: sends, retries, gives up. Called and returns with the lock held. */
static void deliver(struct ember_exporter *e, struct batch *b)
{
	uint64_t first_ns = ember_monotonic_ns();
	struct ember_send_result r;
	unsigned int retry = 0;
	char what[320];

	if (e->cfg.gzip && !b->compressed)
		compress(e, b);
	while (!b->evicted && !e->stopping) {
		uint64_t delay_ms, now;

		atomic_store(&e->abort_transfer, false);
		pthread_mutex_unlock(&e->lock);
		ember_transport_send(e->transport, b->data, b->len, b->compressed,
		                     e->cfg.timeout_ms, &e->abort_transfer, &r);
		pthread_mutex_lock(&e->lock);
		note_result(e, &r);
		if (b->evicted || e->stopping || r.outcome == EMBER_SEND_ABORTED)
			return;
		if (r.outcome == EMBER_SEND_OK) {
			e->st.delivered++;
			e->st.samples_delivered += b->nsamples;
			e->st.bytes_sent += b->len;
			if (retry)
				log_info("OTLP: delivered after %u retr%s", retry,
				         retry == 1 ? "y" : "ies");
			if (r.rejected_profiles || r.message[0]) {
				e->st.profiles_rejected +=
				    (uint64_t)(r.rejected_profiles > 0 ? r.rejected_profiles : 0);
				log_warn(
				    "OTLP: the receiver accepted the batch only in part: %" PRId64
				    " profile(s) rejected%s%s",
				    r.rejected_profiles, r.message[0] ? ": " : "", r.message);
			}
			return;
		}
		if (r.outcome == EMBER_SEND_REJECTED) {
			e->st.rejected++;
			e->st.samples_dropped += b->nsamples;
			log_error("OTLP: %s rejected a batch of %" PRIu64 " samples (%s); dropped, "
			          "not retried: check the endpoint, its path and credentials",
			          e->cfg.display, b->nsamples, describe(&r, what, sizeof(what)));
			return;
		}
		retry++;
		delay_ms = r.retry_after_ms ? r.retry_after_ms
		                            : ember_export_backoff_ms(e->cfg.initial_backoff_ms,
		                                                      e->cfg.max_backoff_ms, retry,
		                                                      next_random(e));
		now = ember_monotonic_ns();
		if (now - first_ns + delay_ms * NS_PER_MS > e->cfg.max_elapsed_ms * NS_PER_MS) {
			e->st.expired++;
			e->st.samples_dropped += b->nsamples;
			log_error("OTLP: gave up on a batch of %" PRIu64
			          " samples after %u attempts "
			          "over %" PRIu64 " s (%s)",
			          b->nsamples, retry, (uint64_t)((now - first_ns) / 1000000000ull),
			          describe(&r, what, sizeof(what)));
			return;
		}
		e->st.retries++;
		if (retry == 1)
			log_warn("OTLP: sending to %s failed (%s); retrying in %.1f s",
			         e->cfg.display, describe(&r, what, sizeof(what)),
			         (double)delay_ms / 1000.0);
		else
			log_debug("OTLP: retry %u failed (%s); next in %.1f s", retry,
			          describe(&r, what, sizeof(what)), (double)delay_ms / 1000.0);
		backoff_wait(e, b, now + delay_ms * NS_PER_MS);
	}
}

static void *export_thread(void *arg)
{
	struct ember_exporter *e = arg;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		while (!e->stopping && !e->head)
			pthread_cond_wait(&e->wake, &e->lock);
		if (e->stopping)
			break;
		e->current = e->head;
		deliver(e, e->current);
		if (e->stopping)
			break;
		pop_head(e);
		e->current = NULL;
		pthread_cond_broadcast(&e->idle);
	}
	e->current = NULL;
	pthread_cond_broadcast(&e->idle);
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int ember_exporter_create(const struct ember_export_config *cfg, struct ember_exporter **out)
{
	struct ember_exporter *e = calloc(1, sizeof(*e));
	pthread_condattr_t ca;
	int err;

	*out = NULL;

	if (!e)
		return -ENOMEM;
	e->cfg = *cfg;
	e->st.queue_limit = cfg->queue_bytes;
	e->st.last_grpc_status = -1;
	e->rng = ((uint64_t)randombytes_random() << 32 | randombytes_random()) | 1;
	atomic_init(&e->abort_transfer, false);
	err = ember_transport_create(&e->cfg, &e->transport);
	if (err) {
		free(e);
		return err;
	}
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->wake, &ca);
	pthread_cond_init(&e->idle, &ca);
	pthread_condattr_destroy(&ca);
	*out = e;
	return 0;
}

int ember_exporter_start(struct ember_exporter *e)
{
	int err;

	if (e->thread_started)
		return 0;
	err = -pthread_create(&e->thread, NULL, export_thread, e);
	if (!err)
		e->thread_started = true;
	return err;
}

/* The oldest batch still counted in the queue, or NULL. */
static struct batch *oldest_live(struct ember_exporter *e)
{
	for (struct batch *b = e->head; b; b = b->next)
		if (!b->evicted)
			return b;
	return NULL;
}

static void unlink_batch(struct ember_exporter *e, struct batch *victim)
{
	struct batch **pp = &e->head, *prev = NULL;

	while (*pp != victim) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	*pp = victim->next;
	if (e->tail == victim)
		e->tail = prev;
	e->st.queued--;
}

static void evict(struct ember_exporter *e, struct batch *victim)
{
	e->st.evicted++;
	e->st.samples_dropped += victim->nsamples;
	e->st.queue_bytes -= victim->len;
	log_warn("OTLP: the delivery queue is full (%zu bytes): dropped the oldest batch "
	         "(%" PRIu64 " samples)",
	         e->st.queue_limit, victim->nsamples);
	if (victim == e->current) {
		/* The thread holds it: it frees it when the transfer or the wait ends. */
		victim->evicted = true;
		atomic_store(&e->abort_transfer, true);
		pthread_cond_broadcast(&e->wake);
		return;
	}
	unlink_batch(e, victim);
	free_batch(victim);
}

size_t ember_exporter_max_request(const struct ember_exporter *e)
{
	return e->cfg.max_request_bytes;
}

int ember_exporter_submit(struct ember_exporter *e, uint8_t *data, size_t len, uint64_t nsamples)
{
	EMBER_MEM_SCOPE(EMBER_MEM_EXPORT);
	struct batch *b;

	/* What waits in the queue is the queue's, whoever encoded it. */
	ember_mem_give(data, EMBER_MEM_EXPORT);
	pthread_mutex_lock(&e->lock);
	e->st.submitted++;
	if (len > e->cfg.queue_bytes) {
		e->st.evicted++;
		e->st.samples_dropped += nsamples;
		pthread_mutex_unlock(&e->lock);
		log_error("OTLP: a batch of %zu bytes does not fit the delivery queue (%zu bytes): "
		          "dropped; raise --otlp-queue-size or shorten --interval",
		          len, e->cfg.queue_bytes);
		free(data);
		return -E2BIG;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		e->st.evicted++;
		e->st.samples_dropped += nsamples;
		pthread_mutex_unlock(&e->lock);
		free(data);
		return -ENOMEM;
	}
	while (e->st.queue_bytes + len > e->cfg.queue_bytes) {
		struct batch *victim = oldest_live(e);

		if (!victim)
			break;
		evict(e, victim);
	}
	b->data = data;
	b->len = len;
	b->nsamples = nsamples;
	if (e->tail)
		e->tail->next = b;
	else
		e->head = b;
	e->tail = b;
	e->st.queued++;
	e->st.queue_bytes += len;
	if (e->st.queue_bytes > e->st.queue_peak_bytes)
		e->st.queue_peak_bytes = e->st.queue_bytes;
	pthread_cond_broadcast(&e->wake);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

int ember_exporter_flush(struct ember_exporter *e, uint64_t deadline_ns)
{
	struct timespec ts = abs_monotonic(deadline_ns);
	int err = 0;

	pthread_mutex_lock(&e->lock);
	while (e->head && !e->stopping && e->thread_started) {
		if (ember_monotonic_ns() >= deadline_ns ||
		    pthread_cond_timedwait(&e->idle, &e->lock, &ts) == ETIMEDOUT) {
			err = e->head ? -ETIMEDOUT : 0;
			break;
		}
	}
	if (e->head && !err)
		err = -ETIMEDOUT;
	pthread_mutex_unlock(&e->lock);
	return err;
}

void ember_exporter_destroy(struct ember_exporter *e)
{
	if (!e)
		return;
	if (e->thread_started) {
		pthread_mutex_lock(&e->lock);
		e->stopping = true;
		atomic_store(&e->abort_transfer, true);
		pthread_cond_broadcast(&e->wake);
		pthread_mutex_unlock(&e->lock);
		pthread_join(e->thread, NULL);
	}
	while (e->head) {
		if (!e->head->evicted) {
			e->st.abandoned++;
			e->st.samples_dropped += e->head->nsamples;
		}
		pop_head(e);
	}
	ember_transport_destroy(e->transport);
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->wake);
	pthread_cond_destroy(&e->idle);
	ember_export_config_free(&e->cfg);
	free(e);
}

void ember_exporter_get_stats(struct ember_exporter *e, struct ember_export_stats *out)
{
	pthread_mutex_lock(&e->lock);
	*out = e->st;
	pthread_mutex_unlock(&e->lock);
}

const char *ember_exporter_endpoint(const struct ember_exporter *e)
{
	return e->cfg.display;
}
