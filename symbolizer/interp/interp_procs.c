// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/interp_procs.h"

#include <string.h>

#include "ipc/proto.h"
#include "shared/log.h"

static bool proc_eq(const void *ctx, uint32_t slot, const void *key, size_t len)
{
	const struct ember_interp_proc *p = ember_slots_at(ctx, slot);

	return len == sizeof(p->pid) && !memcmp(&p->pid, key, len);
}

int ember_interp_procs_init(struct ember_interp_procs *t, size_t item_size, uint32_t max,
                            struct ember_broker_client *broker, uint32_t runtime, const char *name)
{
	memset(t, 0, sizeof(*t));
	t->broker = broker;
	t->runtime = runtime;
	t->name = name;
	return ember_slots_init(&t->slots, item_size, max, proc_eq);
}

void ember_interp_procs_free(struct ember_interp_procs *t)
{
	for (uint32_t s = 0; s < ember_slots_end(&t->slots); s++) {
		struct ember_interp_proc *p = ember_slots_get(&t->slots, s);

		if (p)
			ember_interp_mem_close(&p->mem);
	}
	ember_slots_free(&t->slots);
}

void *ember_interp_procs_get(struct ember_interp_procs *t, uint32_t pid, bool create)
{
	struct ember_interp_proc *p;
	uint32_t slot;
	int r = create ? ember_slots_add(&t->slots, &pid, sizeof(pid), &slot)
	               : ember_slots_find(&t->slots, &pid, sizeof(pid), &slot);

	if (r < 0)
		return NULL;
	p = ember_slots_at(&t->slots, slot);
	if (r == 1) {
		p->pid = pid;
		ember_interp_mem_init(&p->mem, pid);
	}
	return p;
}

void ember_interp_procs_seen(struct ember_interp_procs *t, struct ember_interp_proc *p)
{
	if (!p->counted) {
		p->counted = true;
		t->processes++;
	}
	p->mem.gone = false;
}

static void send_row(struct ember_interp_procs *t, struct ember_interp_proc *p, const void *row,
                     size_t size)
{
	union ember_msg m;

	if (t->disabled)
		return;
	ember_msg_interp_row(&m, p->pid, t->runtime,
	                     row ? EMBER_INTERP_ROW_SET : EMBER_INTERP_ROW_REMOVE, row, size);
	if (ember_broker_client_send(t->broker, &m)) {
		t->disabled = true;
		return;
	}
	if (row)
		t->rows_sent++;
	else
		t->rows_removed++;
}

bool ember_interp_procs_set_row(struct ember_interp_procs *t, struct ember_interp_proc *p,
                                void *sent, const void *row, size_t size)
{
	if (p->row_sent && !memcmp(sent, row, size))
		return false;
	memcpy(sent, row, size);
	p->row_sent = true;
	send_row(t, p, row, size);
	return true;
}

void ember_interp_procs_remove_row(struct ember_interp_procs *t, struct ember_interp_proc *p)
{
	if (p && p->row_sent)
		send_row(t, p, NULL, 0);
	if (p)
		p->row_sent = false;
}

void ember_interp_procs_unsupported(struct ember_interp_procs *t, struct ember_interp_proc *p,
                                    const char *why)
{
	if (!p->warned) {
		p->warned = true;
		t->unsupported++;
		log_info("pid %u runs %s, but ember cannot read its frames: %s", p->pid, t->name,
		         why);
	}
	ember_interp_procs_remove_row(t, p);
}

void ember_interp_procs_exit_ahead(struct ember_interp_procs *t, uint32_t pid)
{
	struct ember_interp_proc *p = ember_interp_procs_get(t, pid, false);

	if (!p)
		return;
	ember_interp_procs_remove_row(t, p);
	p->mem.gone = true;
	ember_interp_mem_close(&p->mem);
}

void ember_interp_procs_exec(struct ember_interp_procs *t, uint32_t pid)
{
	struct ember_interp_proc *p = ember_interp_procs_get(t, pid, false);

	if (p) {
		ember_interp_mem_close(&p->mem);
		p->mem.error = 0;
	}
}

void ember_interp_procs_exit(struct ember_interp_procs *t, uint32_t pid)
{
	uint32_t slot;
	struct ember_interp_proc *p;

	if (ember_slots_find(&t->slots, &pid, sizeof(pid), &slot))
		return;
	p = ember_slots_at(&t->slots, slot);
	ember_interp_mem_close(&p->mem);
	ember_slots_remove(&t->slots, slot, &pid, sizeof(pid));
}
