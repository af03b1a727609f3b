// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/process/process_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/log.h"

/* The process in slot, or NULL for a free slot. */
static struct ember_process *at(const struct ember_processes *t, uint32_t slot)
{
	struct ember_process **p = ember_slots_get(&t->slots, slot);

	return p ? *p : NULL;
}

static bool proc_eq(const void *ctx, uint32_t slot, const void *key, size_t len)
{
	const struct ember_process *p = *(struct ember_process *const *)ember_slots_at(ctx, slot);

	return len == sizeof(p->pid) && !memcmp(&p->pid, key, len);
}

int ember_processes_init(struct ember_processes *t)
{
	memset(t, 0, sizeof(*t));
	return ember_slots_init(&t->slots, sizeof(struct ember_process *), EMBER_PROCESSES_MAX,
	                        proc_eq);
}

void ember_process_forget_facts(struct ember_process *p)
{
	free(p->exe_path);
	p->exe_path = NULL;
	p->container_id[0] = '\0';
	p->facts_loaded = false;
	p->facts_retry_ns = 0;
}

static void destroy(struct ember_process *p)
{
	ember_process_forget_facts(p);
	ember_maps_free(&p->maps);
	free(p);
}

void ember_processes_free(struct ember_processes *t)
{
	for (uint32_t i = 0; i < ember_slots_end(&t->slots); i++)
		if (at(t, i))
			destroy(at(t, i));
	ember_slots_free(&t->slots);
	memset(t, 0, sizeof(*t));
}

static void remove_slot(struct ember_processes *t, uint32_t slot)
{
	struct ember_process *p = at(t, slot);

	ember_slots_remove(&t->slots, slot, &p->pid, sizeof(p->pid));
	destroy(p);
}

struct ember_process *ember_processes_find(struct ember_processes *t, uint32_t pid)
{
	uint32_t slot;

	if (ember_slots_find(&t->slots, &pid, sizeof(pid), &slot))
		return NULL;
	return at(t, slot);
}

/* Makes room for one more by forgetting the process seen longest ago. */
static void evict_idlest(struct ember_processes *t)
{
	struct ember_process *idlest = NULL, *p;

	for (uint32_t i = 0; i < ember_slots_end(&t->slots); i++)
		if ((p = at(t, i)) && (!idlest || p->last_seen_ns < idlest->last_seen_ns))
			idlest = p;
	if (idlest) {
		remove_slot(t, idlest->slot);
		t->evictions++;
	}
}

struct ember_process *ember_processes_get(struct ember_processes *t, uint32_t pid, uint64_t now_ns)
{
	struct ember_process *p = ember_processes_find(t, pid);
	uint32_t slot;

	if (p) {
		p->last_seen_ns = now_ns;
		return p;
	}
	if (t->slots.count == EMBER_PROCESSES_MAX)
		evict_idlest(t);
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (ember_slots_add(&t->slots, &pid, sizeof(pid), &slot) < 0) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->slot = slot;
	p->last_seen_ns = now_ns;
	*(struct ember_process **)ember_slots_at(&t->slots, slot) = p;
	return p;
}

void ember_processes_sweep(struct ember_processes *t, uint64_t now_ns, uint64_t max_idle_ns)
{
	struct ember_process *p;

	for (uint32_t i = 0; i < ember_slots_end(&t->slots); i++)
		if ((p = at(t, i)) && (p->exited || now_ns - p->last_seen_ns > max_idle_ns))
			remove_slot(t, i);
}

int ember_process_fetch_maps(struct ember_broker_client *broker, uint32_t pid,
                             struct ember_maps *out)
{
	char *text = NULL;
	long len;
	int fd = ember_broker_request(broker, EMBER_BROKER_MAPS, pid, 0, NULL), err;

	if (fd < 0)
		return fd;
	len = ember_maps_read_fd(fd, &text);
	close(fd);
	if (len < 0)
		return (int)len;
	err = ember_maps_parse(text, (size_t)len, out);
	free(text);
	return err;
}

static int load_maps(struct ember_processes *t, struct ember_process *p,
                     struct ember_broker_client *broker, uint64_t now_ns)
{
	struct ember_maps fresh;
	int err;

	p->maps_loaded_ns = now_ns;
	p->maps_stale = false;
	t->maps_loads++;
	err = ember_process_fetch_maps(broker, p->pid, &fresh);
	if (err) {
		t->maps_failures++;
		p->maps_error = err;
		return log_debug_errno(err, "maps of pid %u: %m", p->pid);
	}
	/* A process that exited reads as empty: keep what we had. */
	if (!fresh.count && p->maps_loaded) {
		ember_maps_free(&fresh);
		return -ESRCH;
	}
	ember_maps_free(&p->maps);
	p->maps = fresh;
	p->maps_loaded = true;
	p->maps_error = 0;
	return 0;
}

const struct ember_map_entry *ember_process_find_mapping(struct ember_processes *t,
                                                         struct ember_process *p,
                                                         struct ember_broker_client *broker,
                                                         uint64_t addr, uint64_t now_ns)
{
	const struct ember_map_entry *e;
	bool may_reload = now_ns - p->maps_loaded_ns >= EMBER_MAPS_RELOAD_MIN_NS;

	if ((!p->maps_loaded || p->maps_stale) && (may_reload || !p->maps_loaded_ns))
		load_maps(t, p, broker, now_ns);
	e = ember_maps_find(&p->maps, addr);
	if (!e && p->maps_loaded && may_reload && !p->exited &&
	    now_ns - p->maps_loaded_ns >= EMBER_MAPS_RELOAD_MIN_NS) {
		/* A mapping created since we last looked (dlopen, JIT). */
		if (!load_maps(t, p, broker, now_ns))
			e = ember_maps_find(&p->maps, addr);
	}
	return e;
}
