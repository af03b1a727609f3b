// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/process/perf_maps.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/proto.h"
#include "shared/log.h"
#include "symbolizer/symbols/perfmap.h"

struct perf_map_proc {
	uint32_t pid; /* first: the key */
	int fd;       /* the map; -1 until the broker gave it */
	bool copy;    /* a copy the broker's reader made: asked for again to see it grow */
	bool capped;  /* EMBER_PERF_MAPS_MAX_BYTES read: no more */
	int error;    /* the broker's last refusal */
	uint64_t retry_ns, backoff_ns, opened_ns, read_ns;
	uint64_t used_ns; /* the last frame looked up */
	struct ember_perfmap map;
};

/* A copy is asked for again at most this often (it is the whole file each time). */
#define COPY_AGAIN_NS (5000ull * 1000000ull)

static bool proc_eq(const void *ctx, uint32_t slot, const void *key, size_t len)
{
	const struct perf_map_proc *p = ember_slots_at(ctx, slot);

	return len == sizeof(p->pid) && !memcmp(&p->pid, key, len);
}

int ember_perf_maps_init(struct ember_perf_maps *t, struct ember_broker_client *broker)
{
	memset(t, 0, sizeof(*t));
	t->broker = broker;
	return ember_slots_init(&t->procs, sizeof(struct perf_map_proc), EMBER_PERF_MAPS_PROCS,
	                        proc_eq);
}

/* Forgets what p's map holds, its counts kept in t's. */
static void forget_map(struct ember_perf_maps *t, struct perf_map_proc *p)
{
	t->entries += p->map.entries;
	t->lines_bad += p->map.lines_bad;
	t->lines_long += p->map.lines_long;
	t->lines_dropped += p->map.lines_dropped;
	ember_perfmap_free(&p->map);
}

/* Closes p's map; p stays (its back-off with it). */
static void unload(struct ember_perf_maps *t, struct perf_map_proc *p)
{
	if (p->fd < 0)
		return;
	close(p->fd);
	p->fd = -1;
	t->loaded--;
	forget_map(t, p);
}

void ember_perf_maps_free(struct ember_perf_maps *t)
{
	for (uint32_t s = 0; s < ember_slots_end(&t->procs); s++) {
		struct perf_map_proc *p = ember_slots_get(&t->procs, s);

		if (p)
			unload(t, p);
	}
	ember_slots_free(&t->procs);
}

void ember_perf_maps_drop(struct ember_perf_maps *t, uint32_t pid)
{
	uint32_t slot;

	if (ember_slots_find(&t->procs, &pid, sizeof(pid), &slot))
		return;
	unload(t, ember_slots_at(&t->procs, slot));
	ember_slots_remove(&t->procs, slot, &pid, sizeof(pid));
}

void ember_perf_maps_sweep(struct ember_perf_maps *t, uint64_t now_ns)
{
	for (uint32_t s = 0; s < ember_slots_end(&t->procs); s++) {
		struct perf_map_proc *p = ember_slots_get(&t->procs, s);

		if (p && now_ns - p->used_ns >= EMBER_PERF_MAPS_IDLE_NS) {
			t->idle_dropped++;
			ember_perf_maps_drop(t, p->pid);
		}
	}
}

/* Reads what was written since the last read, a piece at a time, up to the cap. */
static void read_more(struct ember_perf_maps *t, struct perf_map_proc *p, uint64_t now_ns)
{
	char buf[64 << 10];
	size_t have = 0; /* bytes in buf, from file offset p->map.bytes */
	struct stat st;

	p->read_ns = now_ns;
	if (fstat(p->fd, &st) == 0 && (uint64_t)st.st_size < p->map.bytes) {
		forget_map(t, p); /* written again from the start */
		p->capped = false;
	}
	t->reads++;
	while (!p->capped) {
		uint64_t at = p->map.bytes + have;
		size_t want = sizeof(buf) - have;
		ssize_t n;

		if (at >= EMBER_PERF_MAPS_MAX_BYTES) {
			p->capped = true;
			t->truncated++;
			log_info("pid %u: perf map past %llu MiB: the rest is not read", p->pid,
			         EMBER_PERF_MAPS_MAX_BYTES >> 20);
			break;
		}
		if (want > EMBER_PERF_MAPS_MAX_BYTES - at)
			want = (size_t)(EMBER_PERF_MAPS_MAX_BYTES - at);
		n = pread(p->fd, buf + have, want, (off_t)at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		t->bytes += (uint64_t)n;
		have += (size_t)n;
		/* All but a line whose end is not written yet (at most a line: room is left). */
		size_t used = ember_perfmap_feed(&p->map, buf, have);

		memmove(buf, buf + used, have - used);
		have -= used;
	}
}

/* Asks the broker for p's map, unless it said no too recently: true when p holds it. */
static bool open_map(struct ember_perf_maps *t, struct perf_map_proc *p, uint64_t now_ns)
{
	int fd;

	if (now_ns < p->retry_ns)
		return false;
	if (t->loaded >= EMBER_PERF_MAPS_MAX) {
		t->table_full++;
		return false;
	}
	fd = ember_broker_request(t->broker, EMBER_BROKER_PERF_MAP, p->pid, 0, NULL);
	if (fd < 0) {
		if (fd != p->error && fd != -ENOENT)
			log_debug_errno(fd, "pid %u: no perf map: %m", p->pid);
		p->error = fd;
		p->backoff_ns = p->backoff_ns ? p->backoff_ns * 2 : EMBER_PERF_MAPS_RETRY_NS;
		if (p->backoff_ns > EMBER_PERF_MAPS_BACKOFF_MAX_NS)
			p->backoff_ns = EMBER_PERF_MAPS_BACKOFF_MAX_NS;
		p->retry_ns = now_ns + p->backoff_ns;
		return false;
	}
	p->fd = fd;
	p->copy = t->broker->last.flags & EMBER_BROKER_REMOTE;
	p->opened_ns = now_ns;
	p->error = 0;
	p->backoff_ns = 0;
	t->loaded++;
	t->files++;
	read_more(t, p, now_ns);
	return true;
}

/* The lines written since the last read, if a while has passed: a copy is asked for again
 * (its reads go on from the same offset), or dropped with the file it copied. */
static void grow(struct ember_perf_maps *t, struct perf_map_proc *p, uint64_t now_ns)
{
	int fd;

	if (now_ns - p->read_ns < EMBER_PERF_MAPS_GROW_NS || p->capped)
		return;
	if (!p->copy) {
		read_more(t, p, now_ns);
		return;
	}
	if (now_ns - p->opened_ns < COPY_AGAIN_NS)
		return;
	fd = ember_broker_request(t->broker, EMBER_BROKER_PERF_MAP, p->pid, 0, NULL);
	if (fd < 0) {
		unload(t, p);
		p->retry_ns = now_ns + EMBER_PERF_MAPS_RETRY_NS;
		return;
	}
	close(p->fd);
	p->fd = fd;
	p->opened_ns = now_ns;
	read_more(t, p, now_ns);
}

const char *ember_perf_maps_name(struct ember_perf_maps *t, uint32_t pid, bool exited,
                                 uint64_t addr, uint64_t now_ns)
{
	struct perf_map_proc *p;
	const char *name;
	uint32_t slot;
	int r;

	t->frames++;
	/* A process whose exit was read had its map dropped: a sample of it that comes later
	 * gets no place that nothing would take away again. */
	if (exited)
		r = ember_slots_find(&t->procs, &pid, sizeof(pid), &slot) ? -ENOENT : 0;
	else if ((r = ember_slots_add(&t->procs, &pid, sizeof(pid), &slot)) < 0)
		t->table_full++;
	if (r < 0)
		return NULL;
	p = ember_slots_at(&t->procs, slot);
	if (r == 1) {
		p->pid = pid;
		p->fd = -1;
		ember_perfmap_init(&p->map);
	}
	p->used_ns = now_ns;
	if (p->fd < 0 && !open_map(t, p, now_ns))
		return NULL;
	name = ember_perfmap_lookup(&p->map, addr);
	if (!name) {
		grow(t, p, now_ns);
		name = ember_perfmap_lookup(&p->map, addr);
	}
	t->frames_named += name != NULL;
	return name;
}

void ember_perf_maps_report_stats(const struct ember_perf_maps *t,
                                  const struct ember_stat_sink *sink)
{
	uint64_t entries = t->entries, bad = t->lines_bad, longer = t->lines_long,
		 dropped = t->lines_dropped, procs = 0;

	for (uint32_t s = 0; s < ember_slots_end(&t->procs); s++) {
		const struct perf_map_proc *p = ember_slots_get(&t->procs, s);

		procs += p != NULL;
		if (p && p->fd >= 0) {
			entries += p->map.entries;
			bad += p->map.lines_bad;
			longer += p->map.lines_long;
			dropped += p->map.lines_dropped;
		}
	}
	ember_stat(sink, "perfmap.processes", procs);
	ember_stat(sink, "perfmap.files", t->files);
	ember_stat(sink, "perfmap.reads", t->reads);
	ember_stat(sink, "perfmap.bytes", t->bytes);
	ember_stat(sink, "perfmap.entries", entries);
	ember_stat(sink, "perfmap.frames", t->frames);
	ember_stat(sink, "perfmap.frames_named", t->frames_named);
	ember_stat(sink, "perfmap.lines_bad", bad);
	ember_stat(sink, "perfmap.lines_long", longer);
	ember_stat(sink, "perfmap.lines_dropped", dropped);
	ember_stat(sink, "perfmap.truncated", t->truncated);
	ember_stat(sink, "perfmap.table_full", t->table_full);
	ember_stat(sink, "perfmap.idle_dropped", t->idle_dropped);
}
