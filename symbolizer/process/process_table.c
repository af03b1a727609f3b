// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/process/process_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/log.h"

static bool proc_eq(const void *ctx, uint32_t value, const void *key, size_t len)
{
	const struct ember_processes *t = ctx;

	return len == sizeof(uint32_t) && !memcmp(&t->slots[value]->pid, key, len);
}

int ember_processes_init(struct ember_processes *t)
{
	memset(t, 0, sizeof(*t));
	ember_index_init(&t->index);
	return ember_hash_key_init(&t->hash_key);
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
	for (size_t i = 0; i < t->nslots; i++)
		destroy(t->slots[i]);
	free(t->slots);
	ember_index_free(&t->index);
	memset(t, 0, sizeof(*t));
}

static uint64_t pid_hash(const struct ember_processes *t, uint32_t pid)
{
	return ember_hash(&t->hash_key, &pid, sizeof(pid));
}

/* Removes slot i, moving the last entry into its place. */
static void remove_slot(struct ember_processes *t, uint32_t i)
{
	struct ember_process *p = t->slots[i], *last;
	uint32_t lasti = (uint32_t)t->nslots - 1;

	ember_index_remove(&t->index, pid_hash(t, p->pid), i);
	if (i != lasti) {
		last = t->slots[lasti];
		ember_index_remove(&t->index, pid_hash(t, last->pid), lasti);
		t->slots[i] = last;
		last->slot = i;
		uint32_t stored;
		ember_index_upsert(&t->index, pid_hash(t, last->pid), &last->pid, sizeof(last->pid),
		                   proc_eq, t, i, &stored);
	}
	t->nslots--;
	destroy(p);
}

struct ember_process *ember_processes_find(struct ember_processes *t, uint32_t pid)
{
	uint32_t slot;

	if (ember_index_find(&t->index, pid_hash(t, pid), &pid, sizeof(pid), proc_eq, t, &slot))
		return NULL;
	return t->slots[slot];
}

struct ember_process *ember_processes_get(struct ember_processes *t, uint32_t pid, uint64_t now_ns)
{
	struct ember_process *p = ember_processes_find(t, pid);
	uint32_t stored;

	if (p) {
		p->last_seen_ns = now_ns;
		return p;
	}
	if (t->nslots == EMBER_PROCESSES_MAX) {
		uint32_t idlest = 0;

		for (uint32_t i = 1; i < t->nslots; i++)
			if (t->slots[i]->last_seen_ns < t->slots[idlest]->last_seen_ns)
				idlest = i;
		remove_slot(t, idlest);
		t->evictions++;
	}
	if (t->nslots == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct ember_process **grown = realloc(t->slots, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		t->slots = grown;
		t->cap = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->slot = (uint32_t)t->nslots;
	p->last_seen_ns = now_ns;
	t->slots[t->nslots] = p;
	if (ember_index_upsert(&t->index, pid_hash(t, pid), &pid, sizeof(pid), proc_eq, t, p->slot,
	                       &stored) < 0) {
		free(p);
		return NULL;
	}
	t->nslots++;
	return p;
}

void ember_processes_sweep(struct ember_processes *t, uint64_t now_ns, uint64_t max_idle_ns)
{
	for (uint32_t i = 0; i < t->nslots;) {
		struct ember_process *p = t->slots[i];

		if (p->exited || now_ns - p->last_seen_ns > max_idle_ns)
			remove_slot(t, i);
		else
			i++;
	}
}

static int load_maps(struct ember_processes *t, struct ember_process *p,
                     struct ember_broker_client *broker, uint64_t now_ns)
{
	struct ember_maps fresh;
	char *text = NULL;
	long len;
	int fd, err;

	p->maps_loaded_ns = now_ns;
	p->maps_stale = false;
	t->maps_loads++;
	fd = ember_broker_request(broker, EMBER_BROKER_MAPS, p->pid, 0, NULL);
	if (fd < 0) {
		err = fd;
		goto fail;
	}
	len = ember_maps_read_fd(fd, &text);
	close(fd);
	if (len < 0) {
		err = (int)len;
		goto fail;
	}
	err = ember_maps_parse(text, (size_t)len, &fresh);
	free(text);
	if (err)
		goto fail;
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
fail:
	t->maps_failures++;
	p->maps_error = err;
	log_debug("maps of pid %u: %s", p->pid, strerror(-err));
	return err;
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
