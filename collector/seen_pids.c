// SPDX-License-Identifier: Apache-2.0
#include "collector/seen_pids.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shared/err.h"

static uint64_t mix(uint64_t x)
{
	/* splitmix64 finaliser: PIDs are few and small; a seeded mix is enough. */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t tgid_hash(const struct ember_procs *t, uint32_t tgid)
{
	return mix(t->seed ^ tgid);
}

static bool entry_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct ember_procs *t = ctx;
	uint32_t tgid;

	memcpy(&tgid, key, sizeof(tgid));
	(void)len;
	return t->entries[value].tgid == tgid && t->entries[value].pidfd >= 0;
}

int ember_procs_init(struct ember_procs *t, size_t capacity)
{
	memset(t, 0, sizeof(*t));
	t->entries = calloc(capacity, sizeof(*t->entries));
	if (!t->entries)
		return -ENOMEM;
	for (size_t i = 0; i < capacity; i++)
		t->entries[i].pidfd = -1;
	t->capacity = capacity;
	ember_index_init(&t->index);
	if (getrandom(&t->seed, sizeof(t->seed), 0) != sizeof(t->seed))
		t->seed = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
	return 0;
}

void ember_procs_free(struct ember_procs *t)
{
	for (size_t i = 0; i < t->capacity; i++)
		if (t->entries[i].pidfd >= 0)
			close(t->entries[i].pidfd);
	free(t->entries);
	ember_index_free(&t->index);
	memset(t, 0, sizeof(*t));
}

static int find(const struct ember_procs *t, uint32_t tgid, uint32_t *slot)
{
	return ember_index_find(&t->index, tgid_hash(t, tgid), &tgid, sizeof(tgid), entry_eq, t,
	                        slot);
}

static void release(struct ember_procs *t, uint32_t slot)
{
	struct ember_proc_entry *e = &t->entries[slot];

	ember_index_remove(&t->index, tgid_hash(t, e->tgid), slot);
	close(e->pidfd);
	e->pidfd = -1;
	t->used--;
}

/* A free slot, evicting the least recently seen process when full. */
static uint32_t take_slot(struct ember_procs *t)
{
	uint32_t oldest = 0;

	for (uint32_t i = 0; i < t->capacity; i++) {
		if (t->entries[i].pidfd < 0)
			return i;
		if (t->entries[i].last_seen_ns < t->entries[oldest].last_seen_ns)
			oldest = i;
	}
	release(t, oldest);
	t->evictions++;
	return oldest;
}

int ember_procs_note(struct ember_procs *t, uint32_t tgid, uint64_t now_ns)
{
	uint32_t slot, stored;
	int fd, r;

	if (find(t, tgid, &slot) == 0) {
		t->entries[slot].last_seen_ns = now_ns;
		return 0;
	}
	fd = (int)syscall(SYS_pidfd_open, (pid_t)tgid, 0);
	if (fd < 0)
		return neg_errno();
	/* Linear scan only when the table is full; otherwise take the next free slot. */
	slot = t->used < t->capacity ? (uint32_t)t->used : take_slot(t);
	if (t->entries[slot].pidfd >= 0)
		slot = take_slot(t);
	t->entries[slot] = (struct ember_proc_entry){tgid, fd, now_ns};
	r = ember_index_upsert(&t->index, tgid_hash(t, tgid), &tgid, sizeof(tgid), entry_eq, t,
	                       slot, &stored);
	if (r < 0) {
		close(fd);
		t->entries[slot].pidfd = -1;
		return r;
	}
	t->used++;
	return 0;
}

void ember_procs_forget(struct ember_procs *t, uint32_t tgid)
{
	uint32_t slot;

	if (find(t, tgid, &slot) == 0)
		release(t, slot);
}

int ember_procs_check(struct ember_procs *t, uint32_t tgid, uint64_t now_ns, uint64_t max_age_ns)
{
	struct pollfd pfd;
	uint32_t slot;

	if (find(t, tgid, &slot) != 0)
		return -EPERM;
	/* The caller's clock may be read before a sample noted the process in the
	 * same event-loop round: a last_seen_ns after now_ns is fresh, not ancient. */
	if (now_ns > t->entries[slot].last_seen_ns &&
	    now_ns - t->entries[slot].last_seen_ns > max_age_ns)
		return -EPERM;
	/* A pidfd polls readable once its process has exited. The entry goes:
	 * should the PID be reused, its next sample brings a fresh pidfd. */
	pfd = (struct pollfd){.fd = t->entries[slot].pidfd, .events = POLLIN};
	if (poll(&pfd, 1, 0) != 0) {
		release(t, slot);
		return -ESRCH;
	}
	return 0;
}
