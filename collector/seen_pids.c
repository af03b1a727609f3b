// SPDX-License-Identifier: Apache-2.0
#include "collector/seen_pids.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shared/err.h"

static bool entry_eq(const void *ctx, uint32_t slot, const void *key, size_t len)
{
	const struct ember_proc_entry *e = ember_slots_at(ctx, slot);

	return len == sizeof(e->tgid) && !memcmp(&e->tgid, key, len);
}

int ember_procs_init(struct ember_procs *t, size_t capacity)
{
	memset(t, 0, sizeof(*t));
	return ember_slots_init(&t->slots, sizeof(struct ember_proc_entry), capacity, entry_eq);
}

void ember_procs_free(struct ember_procs *t)
{
	const struct ember_proc_entry *e;

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

int ember_procs_note(struct ember_procs *t, uint32_t tgid, uint64_t now_ns)
{
	struct ember_proc_entry *e = find(t, tgid);
	uint32_t slot;
	int fd, r;

	if (e) {
		e->last_seen_ns = now_ns;
		return 0;
	}
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
	*(struct ember_proc_entry *)ember_slots_at(&t->slots, slot) =
	    (struct ember_proc_entry){tgid, fd, now_ns};
	return 0;
}

void ember_procs_forget(struct ember_procs *t, uint32_t tgid)
{
	struct ember_proc_entry *e = find(t, tgid);

	if (e)
		release(t, e);
}

int ember_procs_check(struct ember_procs *t, uint32_t tgid, uint64_t now_ns, uint64_t max_age_ns)
{
	struct ember_proc_entry *e = find(t, tgid);
	struct pollfd pfd;

	if (!e)
		return -EPERM;
	/* The caller's clock may be read before a sample noted the process in the
	 * same event-loop round: a last_seen_ns after now_ns is fresh, not ancient. */
	if (now_ns > e->last_seen_ns && now_ns - e->last_seen_ns > max_age_ns)
		return -EPERM;
	/* A pidfd polls readable once its process has exited. The entry goes:
	 * should the PID be reused, its next sample brings a fresh pidfd. */
	pfd = (struct pollfd){.fd = e->pidfd, .events = POLLIN};
	if (poll(&pfd, 1, 0) != 0) {
		release(t, e);
		return -ESRCH;
	}
	return 0;
}
