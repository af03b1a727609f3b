// SPDX-License-Identifier: Apache-2.0
#include "collector/seen_pids.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shared/cleanup.h"
#include "shared/err.h"

static bool entry_eq(const void *ctx, uint32_t slot, const void *key, size_t len)
{
	const struct ember_proc_entry *e = ember_slots_at(ctx, slot);

	return len == sizeof(e->tgid) && !memcmp(&e->tgid, key, len);
}

int ember_procs_init(struct ember_procs *t, size_t capacity)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < EMBER_SNAPSHOTS_MAX; i++)
		t->snaps[i] = (struct ember_maps_snapshot){.fd = -1, .pending = -1, .root = -1};
	t->snaps_max =
	    capacity / 12 < EMBER_SNAPSHOTS_MAX ? (uint32_t)(capacity / 12) : EMBER_SNAPSHOTS_MAX;
	return ember_slots_init(&t->slots, sizeof(struct ember_proc_entry), capacity, entry_eq);
}

static struct ember_maps_snapshot *snap_of(struct ember_procs *t, uint32_t tgid)
{
	for (uint32_t i = 0; i < t->snaps_max; i++)
		if (tgid && t->snaps[i].tgid == tgid)
			return &t->snaps[i];
	return NULL;
}

static void snap_drop(struct ember_maps_snapshot *s)
{
	if (s) {
		s->fd = ember_safe_close(s->fd);
		s->pending = ember_safe_close(s->pending);
		s->root = ember_safe_close(s->root);
		s->tgid = 0;
	}
}

void ember_procs_free(struct ember_procs *t)
{
	const struct ember_proc_entry *e;

	for (int i = 0; i < EMBER_SNAPSHOTS_MAX; i++)
		snap_drop(&t->snaps[i]);

	for (uint32_t i = 0; i < ember_slots_end(&t->slots); i++)
		if ((e = ember_slots_get(&t->slots, i)))
			close(e->pidfd);
	ember_slots_free(&t->slots);
	memset(t, 0, sizeof(*t));
}

static struct ember_proc_entry *find(const struct ember_procs *t, uint32_t tgid)
{
	uint32_t slot;

	return ember_slots_find(&t->slots, &tgid, sizeof(tgid), &slot)
	           ? NULL
	           : ember_slots_at(&t->slots, slot);
}

static void release(struct ember_procs *t, struct ember_proc_entry *e)
{
	close(e->pidfd);
	ember_slots_remove(&t->slots, ember_slots_slot_of(&t->slots, e), &e->tgid, sizeof(e->tgid));
}

/* Full: forgets the least recently seen process. */
static void evict_oldest(struct ember_procs *t)
{
	struct ember_proc_entry *e, *oldest = NULL;

	for (uint32_t i = 0; i < ember_slots_end(&t->slots); i++)
		if ((e = ember_slots_get(&t->slots, i)) &&
		    (!oldest || e->last_seen_ns < oldest->last_seen_ns))
			oldest = e;
	if (oldest) {
		release(t, oldest);
		t->evictions++;
	}
}

/* Its 1st, 2nd, 4th, 8th and 16th samples in its first 2 s (noted just now) make one due: by
 * then the symbolizer has read the maps of a process that lives on, and copies of one whose
 * lock stalls later would only take workers and mark it stalled. */
static void count_sample(struct ember_procs *t, struct ember_proc_entry *e)
{
	if (!e->gen || !t->snaps_max || ++e->samples > EMBER_SNAPSHOT_LAST_SAMPLE ||
	    (e->samples & (e->samples - 1)) ||
	    e->last_seen_ns - e->started_ns > EMBER_SNAPSHOT_YOUNG_NS)
		return;
	if (t->ndue < EMBER_SNAPSHOT_QUEUE)
		t->due[t->ndue++] = e->tgid;
	else
		t->snaps_dropped++;
}

int ember_procs_note(struct ember_procs *t, uint32_t tgid, uint64_t now_ns, bool sampled)
{
	struct ember_proc_entry *e = find(t, tgid);
	uint32_t slot;
	int fd, r;

	if (!e) {
		fd = (int)syscall(SYS_pidfd_open, (pid_t)tgid, 0);
		if (fd < 0)
			return neg_errno();
		if (t->slots.count == t->slots.max)
			evict_oldest(t);
		r = ember_slots_add(&t->slots, &tgid, sizeof(tgid), &slot);
		if (r < 0) {
			close(fd);
			return r;
		}
		e = ember_slots_at(&t->slots, slot);
		*e = (struct ember_proc_entry){tgid, fd, now_ns, ++t->next_gen, 0, now_ns};
		snap_drop(snap_of(t, tgid)); /* another process's, which had the PID */
	}
	e->last_seen_ns = now_ns;
	if (sampled)
		count_sample(t, e);
	return 0;
}

void ember_procs_forget(struct ember_procs *t, uint32_t tgid, uint64_t exit_ns)
{
	struct ember_proc_entry *e = find(t, tgid);
	uint64_t *last = &t->exited_ns[tgid % EMBER_EXIT_TIMES];

	if (e)
		release(t, e);
	if (exit_ns > *last)
		*last = exit_ns;
}

bool ember_procs_stale(struct ember_procs *t, uint32_t tgid, uint64_t event_ns)
{
	if (event_ns > t->exited_ns[tgid % EMBER_EXIT_TIMES])
		return false;
	t->stale_events++;
	return true;
}

int ember_procs_check(struct ember_procs *t, uint32_t tgid, uint64_t now_ns, uint64_t max_age_ns)
{
	struct ember_proc_entry *e = find(t, tgid);

	if (!e)
		return -EPERM;
	/* The caller's clock may be read before a sample noted the process in the
	 * same event-loop round: a last_seen_ns after now_ns is fresh, not ancient. */
	if (now_ns > e->last_seen_ns && now_ns - e->last_seen_ns > max_age_ns)
		return -EPERM;
	/* A pidfd polls readable once its process has exited. The entry goes:
	 * should the PID be reused, its next sample brings a fresh pidfd. */
	if (poll(&(struct pollfd){.fd = e->pidfd, .events = POLLIN}, 1, 0) != 0) {
		release(t, e);
		return -ESRCH;
	}
	return 0;
}

void ember_procs_program(struct ember_procs *t, uint32_t tgid, bool snapshots)
{
	struct ember_proc_entry *e = find(t, tgid);

	if (e) {
		e->gen = snapshots ? ++t->next_gen : 0;
		e->samples = 0;
		e->started_ns = e->last_seen_ns; /* noted just now */
		if (snapshots)
			t->last_exec_ns = e->started_ns;
	}
	snap_drop(snap_of(t, tgid)); /* the old program's */
}

/* A slot for a new snapshot: a free one, else the oldest's (counted unless it expired). */
static struct ember_maps_snapshot *snap_slot(struct ember_procs *t, uint64_t now_ns)
{
	struct ember_maps_snapshot *s = &t->snaps[0];

	for (uint32_t i = 1; i < t->snaps_max && s->tgid; i++)
		if (!t->snaps[i].tgid || t->snaps[i].taken_ns < s->taken_ns)
			s = &t->snaps[i];
	t->snaps_dropped += s->tgid && now_ns <= s->taken_ns + EMBER_SNAPSHOT_KEEP_NS;
	snap_drop(s);
	return s;
}

int ember_procs_snapshot_due(struct ember_procs *t, uint64_t now_ns, uint32_t *tgid, uint32_t *gen,
                             int *memfd)
{
	char root[32];

	while (t->ndue) {
		struct ember_proc_entry *e = find(t, t->due[--t->ndue]);
		struct ember_maps_snapshot *s = e ? snap_of(t, e->tgid) : NULL;

		if (!e || !e->gen || (s && s->pending >= 0))
			continue; /* gone, running at the start, or a copy is under way */
		if (!s) {
			s = snap_slot(t, now_ns);
			*s = (struct ember_maps_snapshot){e->tgid, e->gen, -1, -1, now_ns, -1};
			/* Checked with the maps (the same process after both opens: run_loop.c). */
			snprintf(root, sizeof(root), "/proc/%" PRIu32 "/root", e->tgid);
			s->root = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		}
		s->pending = memfd_create("ember-maps", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (s->pending < 0)
			return 0;
		*tgid = e->tgid;
		*gen = e->gen;
		*memfd = s->pending;
		return 1;
	}
	return 0;
}

void ember_procs_snapshot_done(struct ember_procs *t, uint32_t tgid, uint32_t gen, int result,
                               uint64_t now_ns)
{
	struct ember_maps_snapshot *s = snap_of(t, tgid);
	struct stat st;

	ember_closep(&result); /* the worker's copy of the memfd: the table has its own */
	if (!s || s->gen != gen || s->pending < 0)
		return;
	/* No spare worker: due again at the next chance (the process may not live to its next
	 * sample that makes one due). */
	if (result == -EBUSY && t->ndue < EMBER_SNAPSHOT_QUEUE)
		t->due[t->ndue++] = tgid;
	/* The worker's word that it copied, and a size the maps may have: sealed, unchangeable. */
	if (result < 0 || fstat(s->pending, &st) || st.st_size <= 0 ||
	    st.st_size > EMBER_SNAPSHOT_MAX_BYTES ||
	    fcntl(s->pending, F_ADD_SEALS,
	          F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
		s->pending = ember_safe_close(s->pending);
		if (s->fd < 0)
			snap_drop(s);
		return;
	}
	ember_closep(&s->fd);
	s->fd = TAKE_FD(s->pending);
	s->taken_ns = now_ns;
	t->snaps_taken++;
}

int ember_procs_snapshot_open(struct ember_procs *t, uint32_t tgid, uint64_t now_ns, bool root)
{
	struct ember_maps_snapshot *s = snap_of(t, tgid);
	char self[32];
	int fd;

	if (!s || s->fd < 0 || (root && s->root < 0) ||
	    now_ns > s->taken_ns + EMBER_SNAPSHOT_KEEP_NS)
		return -ENOENT;
	/* A description of its own: one reader's offset is not the next one's. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", root ? s->root : s->fd);
	fd = open(self, (root ? O_PATH | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	t->snaps_served += !root;
	return fd;
}
