// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/session.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "symbolizer/client/broker_client.h"
#include "ipc/ring_consumer.h"
#include "symbolizer/formats/out_otlp.h"
#include "symbolizer/interp/interp.h"
#include "symbolizer/memory/mem_owners.h"
#include "symbolizer/profile/profile.h"
#include "symbolizer/record_decode.h"
#include "symbolizer/sandbox.h"
#include "shared/clock.h"
#include "shared/log.h"
#include "shared/str.h"
#include "symbolizer/symbolize.h"
#include "symbolizer/unwind/unwind_tables.h"

#define HANDSHAKE_TIMEOUT_MS 10000
#define RELEASE_EVERY        64 /* records between consumer-position updates */
#define RECORD_BUF_SIZE      EMBER_RING_MAX_RECORD
#define CUT_SLACK_NS         (200ull * 1000000ull)
/* An interval ends at the first record taken after its end. Without one (a quiet host),
 * once the collector has drained since: its tick is a second. Also the most an interval
 * is written late when symbolization lags (its end then falls by the clock). */
#define CUT_WAIT_NS          (1500ull * 1000000ull)
#define COPY_RESULTS         4096 /* stacks unwound from copies, waiting for symbolization */
#define UNWIND_SLICE_NS      (20ull * 1000000ull) /* table loads of running processes per pass */
#define EXIT_PEEK            64 /* records after an exec looked through for its exit */
#define CLOCK_REUSE          16 /* records that share one reading of the clock */

/* A stack the cursor ahead unwound from a copy, for the record ending at ring position pos. */
struct copy_result {
	uint64_t pos;
	uint32_t n, stop;
	uint64_t frames[];
};

/* A sample with the callers its stack copy gave appended: what symbolization reads. */
struct merged_sample {
	struct ember_sample_event hdr;
	uint64_t frames[EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS];
};

struct session {
	const struct ember_session_opts *opts;
	uint64_t clock_ns;   /* the time records are handled at: record_now() */
	unsigned clock_uses; /* records that took clock_ns */
	struct ember_broker_client broker;
	struct ember_ring_consumer ring;
	int event_fd;
	struct ember_profile profile; /* the current (export) interval, or all there is */
	/* With live export and files: what the files are written from (the whole
	 * run, or the daemon's file interval); each export interval is merged in. */
	struct ember_profile total;
	bool keep_total;
	struct ember_symbolizer sym;
	struct ember_unwind unwind;
	struct ember_readers readers;   /* reads that may wait */
	struct ember_interps interps;   /* the readers of interpreted frames */
	struct ember_kernel_maps kmaps; /* mappings as the kernel reported them */
	/* A second read cursor, ahead of symbolization: see look_ahead(). */
	struct ember_ring_consumer ahead;
	/* A third, ahead of both, for exec and mapping records: see scan_execs(). */
	struct ember_ring_consumer execs;
	uint64_t execs_first; /* execs met by the third cursor */
	uint64_t execs_gone;  /* ... of processes that had exited already: no tables loaded */
	bool unwind_warm;
	uint64_t unwind_work_ns; /* when the unwind tables have work waiting (0: none) */
	struct copy_result *copies[COPY_RESULTS]; /* a FIFO, in ring order */
	uint32_t copies_head, copies_len;
	struct ember_copy_stack copy_stack;
	struct merged_sample merged;
	uint64_t records, bad_records, samples_lost;
	uint64_t off_cpu_min_ns; /* EMBER_OFF_CPU_OFF: no off-CPU samples */
	/* Sample record bytes through the ring, and what they would be without stack copies. */
	uint64_t sample_bytes, sample_bytes_without_copies;
	uint64_t interval_deadline_ns; /* monotonic; 0 without intervals */
	uint64_t next_cut_ns;          /* monotonic: the end of the export interval */
	/* Draining stops when an interval is due (the main loop's drains only), and says
	 * whether it left records for after the interval is written: held_ns is the time of
	 * the first record taken after the interval's end, left in the ring for the next. */
	bool stop_when_due, stopped_when_due;
	uint64_t held_ns;
	uint64_t next_progress_ns; /* monotonic: when the status line is redrawn */
	uint64_t drain_asked_ns, drain_asked_for; /* the last DRAIN: when, for which end */
	bool delivery_finished;
	bool exit_when_written; /* SIGTERM came: the interval it ended is the last */
	_Alignas(8) unsigned char buf[RECORD_BUF_SIZE];
	_Alignas(8) unsigned char ahead_buf[RECORD_BUF_SIZE];
};

static int handshake(struct session *s)
{
	union ember_msg m;
	int fds[3], nfds = 0, err;

	ember_msg_init(&m, EMBER_MSG_HELLO, 0);
	m.hello.records_version = EMBER_RECORDS_VERSION;
	m.hello.pid = (uint32_t)getpid();
	err = ember_broker_client_send(&s->broker, &m);
	if (!err)
		err = ember_broker_client_recv(&s->broker, &m, fds, 3, &nfds, HANDSHAKE_TIMEOUT_MS);
	if (err == -ECONNRESET || err == -EPIPE)
		return -EAGAIN;
	if (err)
		return err;
	if (m.hdr.type == EMBER_MSG_REJECT) {
		m.reject.reason[sizeof(m.reject.reason) - 1] = '\0';
		log_error("the collector refused this symbolizer: %s", m.reject.reason);
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		return m.reject.error < 0 ? m.reject.error : -EPROTO;
	}
	if (m.hdr.type != EMBER_MSG_WELCOME || nfds != 3 ||
	    m.welcome.records_version != EMBER_RECORDS_VERSION) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		log_error("the collector answered with %s: versions do not match",
		          ember_msg_type_name(m.hdr.type));
		return -EPROTO;
	}
	err = ember_ring_consumer_open(&s->ring, fds[0], fds[1]);
	close(fds[0]);
	close(fds[1]);
	if (err) {
		close(fds[2]);
		log_error_errno(err, "cannot map the sample ring: %m");
		return err;
	}
	s->event_fd = fds[2];
	s->ahead = s->ring;
	s->execs = s->ring;
	ember_symbolizer_set_clock(&s->sym, m.welcome.monotonic_to_realtime_ns);
	s->profile.sample_hz = m.welcome.sample_hz ? m.welcome.sample_hz : 1;
	s->profile.period_ns = 1000000000ull / s->profile.sample_hz;
	s->profile.start_ns = m.welcome.start_time_ns;
	s->total.sample_hz = s->profile.sample_hz;
	s->total.period_ns = s->profile.period_ns;
	s->total.start_ns = s->profile.start_ns;
	s->profile.scope = s->total.scope = (m.welcome.flags & EMBER_WELCOME_CHOSEN_PIDS)
	                                        ? EMBER_SCOPE_PROCESSES
	                                        : EMBER_SCOPE_SYSTEM;
	/* What the collector was told to sample (its strings, cut at their fields' ends). */
	m.welcome.selection[sizeof(m.welcome.selection) - 1] = '\0';
	m.welcome.title[sizeof(m.welcome.title) - 1] = '\0';
	m.welcome.service[sizeof(m.welcome.service) - 1] = '\0';
	for (struct ember_profile *p = &s->profile; p; p = p == &s->profile ? &s->total : NULL) {
		ember_strlcpy(p->selection, m.welcome.selection, sizeof(p->selection));
		ember_strlcpy(p->title, m.welcome.title, sizeof(p->title));
		if (p->title[0])
			p->scope = EMBER_SCOPE_TITLED;
		if (!p->service_name[0]) /* --service-name and OTEL_SERVICE_NAME come first */
			ember_strlcpy(p->service_name, m.welcome.service, sizeof(p->service_name));
	}
	s->off_cpu_min_ns = m.welcome.off_cpu_min_ns;
	s->profile.off_cpu = s->total.off_cpu = s->off_cpu_min_ns != EMBER_OFF_CPU_OFF;
	return 0;
}

static void count_lost(struct session *s, uint32_t reason, uint64_t n)
{
	char name[64];

	/* Off-CPU waits left out on purpose are statistics of the off-CPU profile, not losses. */
	bool off_cpu = reason == EMBER_LOST_OFF_CPU_SHORT || reason == EMBER_LOST_OFF_CPU_SAMPLED;

	snprintf(name, sizeof(name), "%s.%s", off_cpu ? "off_cpu" : "lost",
	         ember_lost_reason_name(reason));
	ember_profile_stat_add(&s->profile, name, n);
	if (reason == EMBER_LOST_PROC_EVENTS || off_cpu)
		return;
	ember_profile_stat_add(&s->profile, "lost.samples", n);
	s->samples_lost += n;
}

/* `ember record`'s status line, redrawn in place; log lines erase it first. */
static void erase_progress(void)
{
	static const char erase[] = "\r\033[K";

	if (write(STDERR_FILENO, erase, sizeof(erase) - 1) < 0)
		return;
}

static void draw_progress(struct session *s, const char *state)
{
	uint64_t now = ember_realtime_ns(), samples = s->profile.total_count;
	char line[256], total[32] = "";
	int n;

	if (!s->opts->progress)
		return;
	samples += s->keep_total ? s->total.total_count : 0;
	if (s->opts->progress_s)
		snprintf(total, sizeof(total), " / %" PRIu64 "s", s->opts->progress_s);
	n = snprintf(line, sizeof(line),
	             "\r\033[Kember: %" PRIu64 "s%s  samples %" PRIu64 "  lost %" PRIu64 "  %s",
	             now > s->profile.start_ns ? (now - s->profile.start_ns) / 1000000000u : 0,
	             total, samples, s->samples_lost, state);
	if (n > 0 && write(STDERR_FILENO, line, (size_t)n) > 0)
		ember_log_set_before_hook(erase_progress);
	s->next_progress_ns = ember_monotonic_ns() + 250000000ull;
}

/* The stack the cursor ahead unwound from the copy of the record ending at pos, if any. */
static struct copy_result *take_copy_result(struct session *s, uint64_t pos)
{
	struct copy_result *r;

	/* Results of records symbolization did not read (skipped as malformed) go. */
	while (s->copies_len && s->copies[s->copies_head]->pos < pos) {
		free(s->copies[s->copies_head]);
		s->copies_head = (s->copies_head + 1) % COPY_RESULTS;
		s->copies_len--;
	}
	if (!s->copies_len || s->copies[s->copies_head]->pos != pos)
		return NULL;
	r = s->copies[s->copies_head];
	s->copies_head = (s->copies_head + 1) % COPY_RESULTS;
	s->copies_len--;
	return r;
}

/* The unwind tables have work for ember_unwind_work() at due (CLOCK_MONOTONIC). */
static void unwind_work_due(struct session *s, uint64_t due)
{
	if (!s->unwind_work_ns || due < s->unwind_work_ns)
		s->unwind_work_ns = due;
}

/* A sample, with the callers its stack copy gave in place of the copy. */
static int add_sample(struct session *s, const struct ember_sample_event *sample,
                      const uint64_t *frames, uint64_t now_ns)
{
	struct copy_result *r =
	    sample->stack_flags & EMBER_STACK_COPY ? take_copy_result(s, s->ring.tail) : NULL;
	struct merged_sample *m = &s->merged;
	uint32_t n = sample->kstack_len + sample->ustack_len, extra;
	int err;

	if (!r) {
		s->sample_bytes_without_copies +=
		    sizeof(struct ember_rec_hdr) + sizeof(*sample) + 8 * n;
		return ember_symbolizer_add_sample(&s->sym, sample, frames, now_ns);
	}
	extra = EMBER_MAX_USTACK_WORDS - (uint32_t)sample->ustack_len; /* decoding checked it */
	if (r->n < extra)
		extra = r->n;
	m->hdr = *sample;
	memcpy(m->frames, frames, 8 * n);
	memcpy(m->frames + n, r->frames, 8 * extra);
	m->hdr.ustack_len += extra;
	m->hdr.stack_flags &= ~(0xffu << EMBER_STACK_UNWIND_STOP_SHIFT);
	m->hdr.stack_flags |= r->stop << EMBER_STACK_UNWIND_STOP_SHIFT;
	free(r);
	s->sample_bytes_without_copies +=
	    sizeof(struct ember_rec_hdr) + sizeof(*sample) + 8 * (n + extra);
	err = ember_symbolizer_add_sample(&s->sym, &m->hdr, m->frames, now_ns);
	return err;
}

/* Maps symbolization asked to read again: at the unwind tables' next work. */
static void take_rereads(struct session *s, uint64_t now_ns)
{
	if (s->sym.rereads_queued) {
		s->sym.rereads_queued = false;
		unwind_work_due(s, now_ns);
	}
}

/* ember record's profile covers the time from when the programs sampled, not from the
 * handshake before they loaded; a daemon's intervals start at its own clock (rotation). A time
 * before the handshake's or after now is not taken. */
static void sampling_started(struct session *s, uint64_t realtime_ns)
{
	if (s->opts->rotation || realtime_ns < s->profile.start_ns ||
	    realtime_ns > ember_realtime_ns() || s->profile.start_ns != s->total.start_ns)
		return;
	s->profile.start_ns = s->total.start_ns = realtime_ns;
}

static int handle_record(struct session *s, uint16_t type, size_t len, uint64_t now_ns)
{
	const struct ember_sample_event *sample;
	const struct ember_proc_event *ev;
	struct ember_rec_collector_memory memory;
	struct ember_rec_sampling sampling;
	struct ember_rec_lost lost;
	const uint64_t *frames;
	int err;

	switch (type) {
	case EMBER_REC_SAMPLE:
		if (ember_decode_sample(s->buf, len, &sample, &frames))
			return -EBADMSG;
		s->sample_bytes += sizeof(struct ember_rec_hdr) + len;
		err = add_sample(s, sample, frames, now_ns);
		take_rereads(s, now_ns);
		return err;
	case EMBER_REC_PROCESS_EXEC:
	case EMBER_REC_PROCESS_EXIT:
		if (ember_decode_proc_event(s->buf, len, &ev))
			return -EBADMSG;
		if (ev->kind == EMBER_EV_RUNNING || ev->kind == EMBER_EV_MMAP)
			return 0; /* for the unwind tables and kernel maps only */
		if (ev->kind == EMBER_EV_EXEC) {
			ember_symbolizer_on_exec(&s->sym, ev->tgid, ev->time_ns);
		} else {
			ember_symbolizer_on_exit(&s->sym, ev->tgid, now_ns);
			ember_kernel_maps_exited(&s->kmaps, ev->tgid, now_ns);
		}
		return 0;
	case EMBER_REC_LOST:
		if (ember_decode_lost(s->buf, len, &lost))
			return -EBADMSG;
		count_lost(s, lost.reason, lost.count);
		return 0;
	case EMBER_REC_COLLECTOR_MEMORY:
		if (ember_decode_collector_memory(s->buf, len, &memory))
			return -EBADMSG;
		ember_symbolizer_collector_memory(&s->sym, &memory);
		return 0;
	case EMBER_REC_SAMPLING:
		if (ember_decode_sampling(s->buf, len, &sampling))
			return -EBADMSG;
		sampling_started(s, sampling.realtime_ns);
		return 0;
	default:
		return -EBADMSG;
	}
}

/* The maps the unwind loader read serve symbolization too, even after the process is gone. */
static void share_maps(void *ctx, uint32_t pid, struct ember_maps *maps, uint64_t now_ns)
{
	struct session *s = ctx;

	/* An interpreter among the files: the eBPF walker gets its row before the next samples.
	 * (Before the process's tables were built, its file reads came before those the tables
	 * share with other processes: a process stalled behind a dead file system then cost
	 * the others their interpreted frames.) */
	ember_interps_on_maps(&s->interps, pid, maps, now_ns);
	ember_symbolizer_adopt_maps(&s->sym, pid, maps, now_ns);
}

/* Keeps the stack unwound from the copy of the record ending at pos for symbolization. */
static void keep_copy_result(struct session *s, uint64_t pos)
{
	const struct ember_copy_stack *cs = &s->copy_stack;
	struct copy_result *r = malloc(sizeof(*r) + 8 * (size_t)cs->n);

	if (!r)
		return; /* symbolized as the sampler left it: ending in a marker */
	r->pos = pos;
	r->n = cs->n;
	r->stop = cs->stop;
	memcpy(r->frames, cs->frames, 8 * (size_t)cs->n);
	s->copies[(s->copies_head + s->copies_len++) % COPY_RESULTS] = r;
}

/*
 * Whether tgid exited after exec_ns, as one of the next EXIT_PEEK records after cursor
 * `from` says. A program that runs for a moment (a shell's `true`, a probe) is gone before
 * its exec is met: loading its tables would only ask the broker twice for maps nobody can
 * read any more, and send the collector a table to forget (with the exit's deletes, two
 * fifths of what an exec cost both halves of ember: DESIGN.md). Its samples, if it had
 * any, ask for the tables of the copy the collector kept of its maps themselves.
 */
static bool exited_after(const struct ember_ring_consumer *from, uint32_t tgid, uint64_t exec_ns)
{
	struct ember_ring_consumer peek = *from; /* reads on, releases nothing */
	const struct ember_proc_event *ev;
	_Alignas(8) unsigned char buf[sizeof(*ev)];
	uint16_t type;
	int len;

	for (int i = 0; i < EXIT_PEEK; i++) {
		len = ember_ring_read(&peek, &type, buf, sizeof(buf));
		if (len == -EAGAIN || len == -EBADMSG)
			return false;
		if (len >= 0 && type == EMBER_REC_PROCESS_EXIT &&
		    !ember_decode_proc_event(buf, (size_t)len, &ev) && ev->kind == EMBER_EV_EXIT &&
		    ev->tgid == tgid && ev->time_ns >= exec_ns)
			return true;
	}
	return false;
}

/* The files the unwind loader opens serve symbolization too: it may come after the process. */
static void share_file(void *ctx, uint32_t pid, const struct ember_map_entry *e, int fd,
                       uint64_t now_ns)
{
	struct session *s = ctx;

	ember_symbolizer_preload(&s->sym, pid, e, fd, now_ns);
}

static void unwind_record(struct session *s, uint16_t type, size_t len, uint64_t now_ns)
{
	const struct ember_sample_event *sample;
	const struct ember_stack_copy *copy;
	const struct ember_proc_event *ev;
	const uint64_t *frames;
	const uint8_t *stack = NULL;
	uint64_t due;

	if (type == EMBER_REC_SAMPLE && !ember_decode_sample(s->ahead_buf, len, &sample, &frames)) {
		copy = ember_sample_stack_copy(sample, &stack);
		if (ember_unwind_on_sample(&s->unwind, sample, copy, stack, now_ns, &s->copy_stack))
			keep_copy_result(s, s->ahead.tail);
		/* Code objects are read while the process lives, not when symbolization gets there.
		 */
		if (sample->stack_flags & EMBER_STACK_INTERP)
			ember_interps_warm(&s->interps, sample->tgid, frames + sample->kstack_len,
			                   sample->ustack_len, now_ns);
		/* A goroutine's labels too: the set may be freed once it has moved on. */
		if (sample->stack_flags & EMBER_STACK_GO_LABELS) {
			uint64_t head[2];

			memcpy(head, sample->go_labels_head, sizeof(head));
			ember_interps_go_labels(&s->interps, sample->tgid, sample->go_labels, head,
			                        now_ns);
		}
		/* A span's attributes while its record is still that span's. */
		if ((sample->stack_flags & EMBER_STACK_TRACE_CTX) && sample->ctx_record)
			ember_interps_span_attrs(&s->interps, sample->tgid, sample->ctx_record,
			                         sample->trace_id, sample->span_id, now_ns);
	} else if ((type == EMBER_REC_PROCESS_EXEC || type == EMBER_REC_PROCESS_EXIT) &&
	           !ember_decode_proc_event(s->ahead_buf, len, &ev) && ev->kind != EMBER_EV_MMAP) {
		if (ev->kind == EMBER_EV_RUNNING)
			ember_unwind_on_running(&s->unwind, ev->tgid, ev->cpu_ns);
		else if (ev->kind == EMBER_EV_EXEC &&
		         !exited_after(&s->ahead, ev->tgid, ev->time_ns))
			ember_unwind_on_exec(&s->unwind, ev->tgid, ev->time_ns, now_ns);
		else
			ember_unwind_on_exit(&s->unwind, ev->tgid, now_ns);
		if (ev->kind == EMBER_EV_EXIT)
			ember_interps_on_exit_ahead(&s->interps, ev->tgid);
		/* Both leave work for later: a reload after exec, the loads of running processes.
		 */
		due = ev->kind == EMBER_EV_EXEC ? now_ns + EMBER_UNWIND_EXEC_RELOAD_NS : now_ns;
		if (ev->kind != EMBER_EV_EXIT)
			unwind_work_due(s, due);
	}
}

/*
 * A program that runs for a moment is gone by the time the cursor ahead,
 * busy loading the tables of every process that missed them (all of them
 * when ember starts on a busy host), reaches its exec: its mappings can no
 * longer be read, and neither its stack copies unwound nor its addresses
 * symbolized. A third cursor meets each exec as soon as it is in the ring
 * and loads the new program first; the cursor ahead, reaching the exec
 * later, finds its mappings read after it and keeps them. Called between
 * any two records either cursor reads; samples are skipped unread (a buffer
 * that only a process event fits).
 */
static void scan_execs(struct session *s)
{
	const struct ember_proc_event *ev;
	_Alignas(8) unsigned char buf[sizeof(*ev)];
	uint16_t type;
	int len;

	if (s->execs.tail < s->ahead.tail)
		s->execs.tail = s->ahead.tail;
	while ((len = ember_ring_read(&s->execs, &type, buf, sizeof(buf))) != -EAGAIN) {
		if (len == -EBADMSG)
			return; /* the cursor ahead reports it when it gets there */
		if (len < 0 || type != EMBER_REC_PROCESS_EXEC ||
		    ember_decode_proc_event(buf, (size_t)len, &ev))
			continue;
		/* Where a new program's code is, as the kernel says: read before any sample. */
		ember_kernel_maps_event(&s->kmaps, ev, ember_monotonic_ns());
		if (ev->kind != EMBER_EV_EXEC)
			continue;
		s->execs_first++;
		if (exited_after(&s->execs, ev->tgid, ev->time_ns)) {
			s->execs_gone++;
			continue;
		}
		ember_unwind_on_exec(&s->unwind, ev->tgid, ev->time_ns, ember_monotonic_ns());
		unwind_work_due(s, ember_monotonic_ns() + EMBER_UNWIND_EXEC_RELOAD_NS);
	}
}

/*
 * Whether an interval (the daemon's files, or the export's) is due while the main loop
 * drains: then draining stops and the interval is written on time, and the records left
 * are read next. A drain can take seconds on a loaded host (it waits for table loads,
 * readers and the broker, each for the CPU), and every interval due meanwhile was late.
 */
static uint64_t due_ns(const struct session *s)
{
	uint64_t due = s->interval_deadline_ns;

	if (s->opts->export.exporter && (!due || s->next_cut_ns < due))
		due = s->next_cut_ns;
	return due;
}

static bool interval_due(struct session *s)
{
	uint64_t due = due_ns(s);

	if (!s->stop_when_due || !due)
		return false;
	s->stopped_when_due = ember_monotonic_ns() >= due + CUT_WAIT_NS;
	return s->stopped_when_due;
}

/*
 * Whether the record just read was taken after the interval's end: then it is left in the
 * ring for the next interval. Samples come from the kernel's ring a tick late (a second),
 * so the clock alone would put a second of them in the wrong interval. A record from the
 * future is taken as now's, so that no record is held across the next interval too.
 */
static bool past_due(struct session *s, uint16_t type, size_t len)
{
	const struct ember_sample_event *sample;
	const struct ember_proc_event *ev;
	const uint64_t *frames;
	uint64_t due = due_ns(s), t;

	if (!s->stop_when_due || !due)
		return false;
	if (type == EMBER_REC_SAMPLE && !ember_decode_sample(s->buf, len, &sample, &frames))
		t = sample->time_ns;
	else if ((type == EMBER_REC_PROCESS_EXEC || type == EMBER_REC_PROCESS_EXIT) &&
	         !ember_decode_proc_event(s->buf, len, &ev))
		t = ev->time_ns;
	else
		return false;
	if (t < due || t > ember_monotonic_ns())
		return false;
	s->held_ns = t;
	s->stopped_when_due = true;
	return true;
}

/* Whether the interval ending at `deadline` (monotonic; 0: none) is over: see past_due(). */
static bool cut_now(const struct session *s, uint64_t deadline)
{
	return deadline &&
	       (s->held_ns >= deadline || ember_monotonic_ns() >= deadline + CUT_WAIT_NS);
}

/*
 * The time a record is handled at. Both cursors took the clock for every record: at 999 Hz
 * those vDSO reads (60 ns each here, more when cold) were a tenth of the symbolizer's time.
 * Now it is read at every drain's start and then once in CLOCK_REUSE records: a record's time
 * may be as old as the records before it took (longer after a table load), and what it times
 * is counted in milliseconds at least (back-offs, the ages of memos and processes).
 */
static uint64_t record_now(struct session *s)
{
	if (s->clock_uses++ % CLOCK_REUSE == 0)
		s->clock_ns = ember_monotonic_ns();
	return s->clock_ns;
}

/*
 * A process needs its unwind tables before its next samples are taken, not
 * when symbolization gets to its first one: a cursor ahead of symbolization
 * meets every record first and starts the table loads of execs and of
 * samples that missed tables, however far behind symbolization is.
 */
static int look_ahead(struct session *s, uint64_t until)
{
	uint64_t now = ember_monotonic_ns();

	/* Reloads after exec, and the processes running at the start a slice at a time; not
	 * while over the memory budget (a process that misses its tables loads them at its
	 * sample). */
	if (s->unwind_work_ns && s->unwind_work_ns <= now && !ember_symbolizer_shedding(&s->sym))
		s->unwind_work_ns = ember_unwind_work(&s->unwind, now, now + UNWIND_SLICE_NS);
	scan_execs(s);
	/* With the results of stack copies awaiting symbolization, wait for it. */
	while ((!until || s->ahead.tail < until) && s->copies_len < COPY_RESULTS) {
		uint16_t type;
		int len;

		/* A record here may take a while (a table load): execs that came meanwhile first.
		 */
		scan_execs(s);
		if (interval_due(s))
			return 0;
		len = ember_ring_read(&s->ahead, &type, s->ahead_buf, sizeof(s->ahead_buf));

		if (len == -EAGAIN || len == -EBADMSG)
			return len == -EBADMSG ? len : 0;
		/* Records flow once the collector samples, its unwind maps ready: warm them now. */
		if (!s->unwind_warm) {
			s->unwind_warm = true;
			ember_unwind_prewarm(&s->unwind, ember_monotonic_ns());
		}
		if (len >= 0)
			unwind_record(s, type, (size_t)len, record_now(s));
	}
	return 0;
}

/* Resident bytes the memory budget leaves out: the profile `ember record` keeps whole. */
static size_t budget_exclude(const struct session *s)
{
	return s->opts->rotation ? 0 : ember_mem_owner_bytes(EMBER_MEM_PROFILE);
}

/* Reads records until the ring is empty or until position `until` (0: no limit). */
static int drain_ring(struct session *s, uint64_t until)
{
	unsigned int since_release = 0;
	int ahead_err, err = 0;

	s->stopped_when_due = false;
	s->held_ns = 0;
	s->clock_uses = 0; /* records after a sleep: the clock afresh */
	ahead_err = look_ahead(s, until);

	/* Symbolization reads only what the cursor ahead has seen, and the cursor
	 * moves on every RELEASE_EVERY records. */
	while (s->ring.tail < (until && until < s->ahead.tail ? until : s->ahead.tail)) {
		uint64_t before = s->ring.tail;
		uint16_t type;
		int len;

		/* Symbolizing a record may take a while too (a binary parsed): execs first. */
		scan_execs(s);
		/* The run's last flush came while a broker reply was awaited: it is ending. */
		s->readers.finishing |= s->broker.flush_pending && s->broker.flush.final;
		if (interval_due(s))
			break;
		len = ember_ring_read(&s->ring, &type, s->buf, sizeof(s->buf));
		if (len == -EAGAIN)
			break;
		if (len >= 0 && past_due(s, type, (size_t)len)) {
			s->ring.tail = before; /* not released: read again after the cut */
			break;
		}
		if (len == -EBADMSG) {
			log_error("the sample ring is corrupt: stopping");
			err = -EBADMSG;
			break;
		}
		s->records++;
		if (len < 0 || handle_record(s, type, (size_t)len, record_now(s)) == -EBADMSG) {
			s->bad_records++;
			count_lost(s, EMBER_LOST_OTHER, type == EMBER_REC_SAMPLE);
		}
		if (++since_release == RELEASE_EVERY) {
			ember_ring_release(&s->ring);
			since_release = 0;
			if (!ahead_err)
				ahead_err = look_ahead(s, until);
			ember_symbolizer_tick(&s->sym, ember_monotonic_ns(), budget_exclude(s));
		}
	}
	ember_ring_release(&s->ring);
	ember_symbolizer_tick(&s->sym, ember_monotonic_ns(), budget_exclude(s));
	if (!err && ahead_err) {
		log_error("the sample ring is corrupt: stopping");
		err = ahead_err;
	}
	return err;
}

/* The profile files are written from. */
static struct ember_profile *file_profile(struct session *s)
{
	return s->keep_total ? &s->total : &s->profile;
}

static void set_run_stats(struct session *s)
{
	struct ember_profile *p = file_profile(s);
	const struct ember_stat_sink sink = EMBER_PROFILE_STAT_SINK(p);

	ember_symbolizer_report_stats(&s->sym, p);
	ember_unwind_report_stats(&s->unwind, &sink);
	ember_readers_report_stats(&s->readers, &sink);
	ember_kernel_maps_report_stats(&s->kmaps, &sink);
	ember_profile_stat_set(p, "broker.stalled_refused", s->broker.stalled_refused);
	ember_profile_stat_set(p, "broker.stalled_deadline", s->broker.stalled_deadline);
	ember_profile_stat_set(p, "ring.records", s->records);
	ember_profile_stat_set(p, "ring.bad_records", s->bad_records);
	if (s->off_cpu_min_ns != EMBER_OFF_CPU_OFF)
		ember_profile_stat_set(p, "off_cpu.min_ns", s->off_cpu_min_ns);
	ember_profile_stat_set(p, "ring.sample_bytes", s->sample_bytes);
	ember_profile_stat_set(p, "unwind.execs_met_first", s->execs_first);
	ember_profile_stat_set(p, "unwind.execs_gone", s->execs_gone);
	ember_profile_stat_set(p, "ring.sample_bytes_without_copies",
	                       s->sample_bytes_without_copies);
}

static int submit_request(void *ctx, uint8_t *buf, size_t len, uint64_t nsamples)
{
	/* Refused (larger than the whole queue): counted as lost by the exporter. */
	ember_exporter_submit(ctx, buf, len, nsamples);
	return 0;
}

/*
 * Where an interval due at `deadline` (monotonic) ends when it is cut at `now`: at its
 * deadline once that has passed (by less than an interval: after a longer stall the next
 * starts afresh), so that intervals neither drift nor overlap; else now (a flush).
 */
static uint64_t interval_end(uint64_t deadline, uint64_t now, uint64_t interval_ns)
{
	return deadline && now >= deadline && now - deadline < interval_ns ? deadline : now;
}

static uint64_t to_realtime(uint64_t monotonic_ns)
{
	return (uint64_t)((int64_t)monotonic_ns + ember_monotonic_to_realtime_ns());
}

/*
 * Ships the export interval and starts the next: encode (as several requests
 * when it is larger than a receiver takes), queue (the export thread sends),
 * keep it for the files if there are any, reset.
 */
static void cut_interval(struct session *s)
{
	struct ember_exporter *e = s->opts->export.exporter;
	struct ember_profile *p = &s->profile;
	uint64_t end =
	    interval_end(s->next_cut_ns, ember_monotonic_ns(), s->opts->export.interval_ns);
	int err;

	p->end_ns = to_realtime(end);
	if (p->samples.len) {
		EMBER_MEM_SCOPE(EMBER_MEM_OUTPUT);

		err = ember_otlp_encode_split(p, ember_exporter_max_request(e), submit_request, e);
		if (err)
			log_error_errno(
			    err, "cannot encode the profile as OTLP: %m; up to %" PRIu64 " samples lost",
			    p->total_count);
	}
	if (s->keep_total && (err = ember_profile_merge(&s->total, p)))
		log_error_errno(err, "cannot keep the interval for the output files: %m");
	err = ember_profile_reset(p);
	if (err)
		log_error_errno(err, "cannot start a new interval: %m");
	p->start_ns = p->end_ns;
	p->end_ns = 0;
	ember_symbolizer_profile_was_reset(&s->sym);
	ember_symbolizer_release_memory(&s->sym);
	/* Every cut, also one for the files, starts a full export interval. */
	s->next_cut_ns = end + s->opts->export.interval_ns;
}

/*
 * Waits for the delivery queue to drain (or the deadline) and says what
 * reached the endpoint. Returns 0, or -EREMOTEIO when some profiles did not.
 */
static int finish_delivery(struct session *s)
{
	struct ember_exporter *e = s->opts->export.exporter;
	struct ember_export_stats st;
	uint64_t dropped;
	int err;

	s->delivery_finished = true;
	err = ember_exporter_flush(e, ember_monotonic_ns() + s->opts->export.delivery_deadline_ns);
	ember_exporter_get_stats(e, &st);
	dropped = st.rejected + st.evicted + st.expired + st.queued;
	log_info("OTLP: %" PRIu64 " of %" PRIu64 " profile batches delivered to %s (%" PRIu64
	         " samples, %" PRIu64 " bytes sent, %" PRIu64 " attempts)",
	         st.delivered, st.submitted, ember_exporter_endpoint(e), st.samples_delivered,
	         st.bytes_sent, st.attempts);
	if (dropped)
		log_error("OTLP: %" PRIu64 " batches (%" PRIu64 " samples) not delivered: %" PRIu64
		          " rejected, %" PRIu64 " dropped from the full queue, %" PRIu64
		          " out of retries, %" PRIu64 " still queued at the %" PRIu64
		          " s deadline%s%s",
		          dropped, st.samples_dropped, st.rejected, st.evicted, st.expired,
		          (uint64_t)st.queued,
		          (uint64_t)(s->opts->export.delivery_deadline_ns / 1000000000ull),
		          st.last_error[0] ? "; last error: " : "", st.last_error);
	if (st.profiles_rejected)
		log_warn("OTLP: the receiver rejected %" PRIu64 " profiles in partial successes",
		         st.profiles_rejected);
	log_debug("OTLP: queue peak %zu of %zu bytes, %" PRIu64 " retries", st.queue_peak_bytes,
	          st.queue_limit, st.retries);
	return err || dropped ? -EREMOTEIO : 0;
}

/* `ember record`: every output rewritten with everything so far. */
static int write_outputs(struct session *s)
{
	EMBER_MEM_SCOPE(EMBER_MEM_OUTPUT);
	int status = 0;

	for (size_t i = 0; i < s->opts->noutputs; i++) {
		const struct ember_output *o = &s->opts->outputs[i];
		int err = ember_output_write(o, file_profile(s));

		if (err) {
			log_error_errno(err, "cannot write %s: %m", o->path);
			status = err;
		}
	}
	return status;
}

/* Daemon: this interval's files, then a fresh profile for the next one (from `end`). */
static int write_interval(struct session *s, uint64_t end)
{
	struct ember_profile *p = file_profile(s);
	char memory[512];
	int status;

	{
		EMBER_MEM_SCOPE(EMBER_MEM_OUTPUT);

		status = ember_rotation_write(s->opts->rotation, p);
	}
	log_info("interval written: %" PRIu64 " samples, %" PRIu64 " lost", p->total_count,
	         ember_profile_stat_get(p, "lost.samples"));
	/* Everything the interval held goes, and the pages it used go back to the system. */
	ember_profile_reset(p);
	if (p == &s->profile)
		ember_symbolizer_profile_was_reset(&s->sym);
	ember_symbolizer_release_memory(&s->sym);
	ember_symbolizer_memory_line(&s->sym, memory, sizeof(memory));
	log_info("memory: %s", memory);
	p->start_ns = p->end_ns;
	if (s->opts->interval_ms)
		s->interval_deadline_ns = end + s->opts->interval_ms * 1000000ull;
	return status;
}

static int flush_outputs(struct session *s)
{
	uint64_t end = interval_end(s->interval_deadline_ns, ember_monotonic_ns(),
	                            s->opts->interval_ms * 1000000ull);
	int err;

	/* Any flush ships what the export interval holds so far: the files are whole. */
	if (s->opts->export.exporter)
		cut_interval(s);
	file_profile(s)->end_ns = to_realtime(end);
	set_run_stats(s);
	err = s->opts->rotation ? write_interval(s, end) : write_outputs(s);
	if (!s->opts->rotation) {
		char memory[512];

		ember_symbolizer_memory_line(&s->sym, memory, sizeof(memory));
		log_debug("memory: %s", memory);
	}
	/* When the files' next interval ends with the export's (the same --interval;
	 * writing took a moment), its cut ships: no second, tiny batch just before. */
	if (s->opts->export.exporter && s->interval_deadline_ns &&
	    s->interval_deadline_ns <= s->next_cut_ns + CUT_SLACK_NS)
		s->next_cut_ns = s->interval_deadline_ns + 1;
	return err;
}

/*
 * Test builds only (EMBER_TEST_HOOKS): EMBER_TEST_FLOOD_BEFORE_FLUSHED=N says so, waits a
 * second (the test stops the collector meanwhile), then sends N harmless messages (drops of
 * an unused table slot) just before FLUSHED: the collector must read everything the
 * symbolizer sent before it judges its exit.
 */
static void test_flood(struct session *s)
{
#ifdef EMBER_TEST_HOOKS
	const char *n = getenv("EMBER_TEST_FLOOD_BEFORE_FLUSHED");

	if (!n)
		return;
	log_warn("test hook: %s messages before FLUSHED", n);
	sleep(1);
	for (long i = atol(n); i > 0; i--) {
		union ember_msg drop;

		ember_msg_init(&drop, EMBER_MSG_UNWIND_TABLE, 0);
		drop.unwind_table.table = EMBER_UNWIND_MAX_TABLES - 1;
		drop.unwind_table.op = EMBER_UNWIND_TABLE_DROP;
		if (ember_broker_client_send(&s->broker, &drop))
			return;
	}
#else
	(void)s;
#endif
}

static int on_flush(struct session *s, const struct ember_msg_flush *f, bool *done)
{
	union ember_msg reply;
	uint64_t samples;
	int err, status;

	/* The run ends: what stalled is not tried again while its last records are read. */
	s->readers.finishing |= f->final;
	err = drain_ring(s, f->head);
	if (err)
		return err;
	if (f->lost_unreported)
		count_lost(s, EMBER_LOST_OTHER, f->lost_unreported);
	/* A daemon starts a new interval in flush_outputs. */
	samples = s->profile.total_count + (s->keep_total ? s->total.total_count : 0);
	if (f->final)
		draw_progress(s, "writing outputs...");
	status = flush_outputs(s);
	if (s->opts->export.exporter && f->final) {
		err = finish_delivery(s);
		if (!status)
			status = err;
	}
	test_flood(s);
	ember_msg_init(&reply, EMBER_MSG_FLUSHED, 0);
	reply.flushed.status = status;
	reply.flushed.samples = samples;
	err = ember_broker_client_send(&s->broker, &reply);
	if (f->final && s->opts->progress && write(STDERR_FILENO, "\n", 1) == 1)
		ember_log_set_before_hook(NULL);
	if (f->final)
		*done = true;
	log_debug("flushed: %" PRIu64 " samples, %" PRIu64 " lost", samples, s->samples_lost);
	/* Undelivered profiles are reported to the collector, not a reason to stop. */
	return err ? err : status == -EREMOTEIO ? 0 : status;
}

/* Daemon signals: SIGTERM and SIGINT end the session with the interval so
 * far written; SIGHUP writes it now and starts a new one. */
static int on_signal(struct session *s, bool *done)
{
	struct signalfd_siginfo si;
	int err;

	if (read(s->opts->signal_fd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo != SIGHUP) {
		log_info("signal %u: writing the current interval and exiting", si.ssi_signo);
		s->exit_when_written = true;
	}
	/* The interval ends now, as one due now: its samples still in the kernel's rings are
	 * asked for (DRAIN), and the first taken after now, or 1.5 s, ends it (run()). */
	if (s->interval_deadline_ns) {
		s->interval_deadline_ns = MIN(s->interval_deadline_ns, ember_monotonic_ns());
		return 0;
	}
	err = drain_ring(s, 0);
	if (err)
		return err;
	*done = s->exit_when_written;
	return flush_outputs(s);
}

static int on_message(struct session *s, bool *done)
{
	union ember_msg m;
	int nfds = 0, err;

	err = ember_broker_client_recv(&s->broker, &m, NULL, 0, &nfds, 0);
	if (err == -ETIMEDOUT || err == -EAGAIN)
		return 0;
	if (err == -ECONNRESET) {
		log_error("the collector went away");
		return err;
	}
	if (err)
		return err;
	if (m.hdr.type == EMBER_MSG_FLUSH)
		return on_flush(s, &m.flush, done);
	log_error("unexpected %s from the collector", ember_msg_type_name(m.hdr.type));
	return -EPROTO;
}

/*
 * The collector drains the kernel's rings on its tick (5 or 30 s) unless asked: an
 * interval that ends wants the samples taken before its end now (the first taken after
 * it ends it), and a progress line its counts once a second. A send that fails is the
 * collector gone: on_message() reads why.
 */
static void ask_drain(struct session *s)
{
	uint64_t now = ember_monotonic_ns(), due = due_ns(s);
	union ember_msg m;

	if (due && now >= due && s->drain_asked_for != due)
		s->drain_asked_for = due;
	else if (!s->opts->progress || now < s->drain_asked_ns + 1000000000ull)
		return;
	s->drain_asked_ns = now;
	ember_msg_init(&m, EMBER_MSG_DRAIN, 0);
	ember_broker_client_send(&s->broker, &m);
}

static int poll_timeout_ms(const struct session *s)
{
	uint64_t now = ember_monotonic_ns(), next = due_ns(s);

	/* At an interval's end the collector is asked for its samples; they end it within
	 * CUT_WAIT_NS. */
	if (next && s->drain_asked_for == next)
		next += CUT_WAIT_NS;
	/* Reloads after exec and table loads of processes running at the start are timed. */
	if (s->unwind_work_ns && (!next || s->unwind_work_ns < next))
		next = s->unwind_work_ns;
	if (s->stopped_when_due) /* records wait: read on once the interval is written */
		return 0;
	/* The collector's wake-ups (a tick that brought records) drive the rest: a timer of
	 * its own beside them would wake an idle session twice as often. */
	if (!next || next >= now + EMBER_COLLECTOR_QUIET_TICK_MS * 1000000ull)
		return s->opts->progress ? 1000 : EMBER_COLLECTOR_QUIET_TICK_MS + 1000;
	return next <= now ? 0 : (int)((next - now) / 1000000u) + 1;
}

static int run(struct session *s)
{
	bool done = false;
	int err = 0;

	while (!done && !err) {
		struct pollfd fds[3] = {
		    {.fd = s->broker.sock, .events = POLLIN},
		    {.fd = s->event_fd, .events = POLLIN},
		    {.fd = s->opts->signal_fd, .events = POLLIN},
		};
		uint64_t tokens[64];

		if (s->broker.flush_pending) {
			err = on_message(s, &done);
			continue;
		}
		if (poll(fds, s->opts->signal_fd >= 0 ? 3 : 2, poll_timeout_ms(s)) < 0 &&
		    errno != EINTR)
			return -errno;
		if (fds[1].revents & POLLIN) {
			/* The collector's wake-up pipe: every token waiting at once. */
			if (read(s->event_fd, tokens, sizeof(tokens)) < 0 && errno != EAGAIN)
				return -errno;
		}
		ask_drain(s);
		/* Also on timeout: a wake-up may have been coalesced away. */
		s->stop_when_due = true;
		err = drain_ring(s, 0);
		s->stop_when_due = false;
		if (s->opts->progress && ember_monotonic_ns() >= s->next_progress_ns)
			draw_progress(s, "(Ctrl-C to stop)");
		if (!err && (fds[2].revents & POLLIN))
			err = on_signal(s, &done);
		if (!err && !done && cut_now(s, s->interval_deadline_ns)) {
			err = flush_outputs(s);
			done = s->exit_when_written;
		}
		if (!err && !done && s->opts->export.exporter && cut_now(s, s->next_cut_ns))
			cut_interval(s);
		if (!err && !done && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
			err = on_message(s, &done);
	}
	/* The collector is gone, but the ring it left is still mapped: a daemon
	 * writes what it holds before it exits (and its service restarts it). */
	if (err == -ECONNRESET && s->opts->rotation && !drain_ring(s, 0))
		flush_outputs(s);
	return err;
}

/* A reader's own sandbox: the symbolizer's user, no files by path, the "reader" group. */
static int confine_reader(void *ctx)
{
	struct ember_sandbox_opts sb = {
	    .reader = true, .max_file_bytes = EMBER_READ_MAX_COPY + 1, .max_open_files = 16};

	(void)ctx;
	return ember_sandbox_enter(&sb);
}

/* The parts of a session, tied together: profiles, symbolizer, unwind tables, interpreters. */
static int init_parts(struct session *s, const struct ember_session_opts *o)
{
	struct ember_symbolizer_opts so = {
	    .profile = &s->profile,
	    .broker = &s->broker,
	    .objcache_bytes = o->objcache_bytes,
	    .memory_budget = o->memory_budget,
	    /* OTLP resources want each process's executable and container. */
	    .want_process_facts = o->export.exporter != NULL,
	};
	int err;

	for (size_t i = 0; i < o->noutputs; i++)
		so.want_process_facts |= o->outputs[i].format == EMBER_FORMAT_OTLP;
	for (size_t i = 0; o->rotation && i < o->rotation->nformats; i++)
		so.want_process_facts |= o->rotation->formats[i] == EMBER_FORMAT_OTLP;
	err = ember_profile_init(&s->profile);
	if (!err)
		err = ember_profile_init(&s->total);
	if (!err)
		err = ember_symbolizer_init(&s->sym, &so);
	if (!err)
		err = ember_unwind_init(&s->unwind, &s->broker);
	if (!err)
		/* Thread contexts cost nothing in a process that publishes none. */
		err = ember_interps_init(&s->interps, o->interpreters | 1u << EMBER_ROW_THREAD_CTX,
		                         o->interp_flags, &s->broker);
	if (!err)
		err = ember_kernel_maps_init(&s->kmaps);
	s->sym.interps = &s->interps;
	s->sym.unwind = &s->unwind;
	s->sym.procs.kmaps = s->unwind.kmaps = &s->kmaps;
	s->unwind.on_maps = share_maps;
	s->unwind.on_file = share_file;
	s->unwind.on_maps_ctx = s;
#ifdef EMBER_TEST_HOOKS
	/* Test builds: EMBER_TEST_NO_PROCESS_TABLES makes every stack go through a stack copy. */
	s->unwind.hold_back_procs = getenv("EMBER_TEST_NO_PROCESS_TABLES") != NULL;
	/* EMBER_TEST_NO_PROCESS_LISTS: the kernel finds every table by file. */
	s->unwind.hold_back_lists = getenv("EMBER_TEST_NO_PROCESS_LISTS") != NULL;
#endif
	return err;
}

int ember_session_run(const struct ember_session_opts *o)
{
	struct session *s = calloc(1, sizeof(*s));
	char host[256] = "";
	int err, readers_err;

	if (!s)
		return -ENOMEM;
	s->opts = o;
	s->event_fd = -1;
	ember_broker_client_init(&s->broker, o->sock);
	s->keep_total = o->export.exporter && (o->noutputs || o->rotation);
	err = init_parts(s, o);
	if (err)
		goto out;
	gethostname(host, sizeof(host) - 1);
	for (struct ember_profile *p = &s->profile; p; p = p == &s->profile ? &s->total : NULL) {
		memcpy(p->host, host, sizeof(p->host));
		p->view = o->view;
		memcpy(p->service_name, o->export.service_name, sizeof(p->service_name));
		memcpy(p->resource_attrs, o->export.resource_attrs, sizeof(p->resource_attrs));
		p->otlp_symbols = o->export.otlp_symbols;
	}
	err = handshake(s);
	/* Readers are processes of their own: forked before the sandbox forbids it. */
	if (!err &&
	    (readers_err = ember_readers_start(&s->readers, EMBER_READERS, confine_reader, NULL)))
		log_warn_errno(
		    readers_err,
		    "cannot start the reader processes (%m): files on FUSE, NFS and the "
		    "like are read directly, and a stalled one can stall the symbolizer");
	else if (!err)
		s->broker.readers = &s->readers;
	if (!err && o->enter_sandbox)
		err = o->enter_sandbox(o->sandbox_ctx);
	/* The export thread starts inside the sandbox and so inherits all of it. */
	if (!err && o->export.exporter && (err = ember_exporter_start(o->export.exporter)))
		log_error_errno(err, "cannot start the export thread: %m");
	if (!err && o->rotation) {
		/* A daemon's first interval starts now: earlier samples never reached it. */
		s->profile.start_ns = s->total.start_ns = ember_realtime_ns();
		if (o->interval_ms)
			s->interval_deadline_ns =
			    ember_monotonic_ns() + o->interval_ms * 1000000ull;
	}
	s->next_cut_ns = ember_monotonic_ns() + o->export.interval_ns;
	if (!err)
		err = run(s);
	/* A daemon's session ends on a signal or without its collector: deliver what it has. */
	if (o->export.exporter && o->rotation && s->ring.hdr && !s->delivery_finished)
		finish_delivery(s);
out:
	while (s->copies_len)
		free(take_copy_result(s, UINT64_MAX));
	ember_readers_stop(&s->readers);
	ember_symbolizer_free(&s->sym);
	ember_unwind_free(&s->unwind);
	ember_interps_free(&s->interps);
	ember_kernel_maps_free(&s->kmaps);
	ember_profile_free(&s->profile);
	ember_profile_free(&s->total);
	if (s->ring.hdr)
		ember_ring_consumer_close(&s->ring);
	if (s->event_fd >= 0)
		close(s->event_fd);
	free(s);
	return err;
}
