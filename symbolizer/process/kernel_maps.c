// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/process/kernel_maps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/memory/mem_owners.h"

/* ctx is the slot table. */
static bool pid_eq(const void *ctx, uint32_t slot, const void *key, size_t len)
{
	const struct ember_kmaps_proc *p = ember_slots_at(ctx, slot);

	return len == sizeof(p->pid) && !memcmp(&p->pid, key, len);
}

int ember_kernel_maps_init(struct ember_kernel_maps *k)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);

	memset(k, 0, sizeof(*k));
	return ember_slots_init(&k->procs, sizeof(struct ember_kmaps_proc), EMBER_KMAPS_PROCS,
	                        pid_eq);
}

static void drop(struct ember_kernel_maps *k, uint32_t slot)
{
	struct ember_kmaps_proc *p = ember_slots_at(&k->procs, slot);

	free(p->text);
	ember_slots_remove(&k->procs, slot, &p->pid, sizeof(p->pid));
}

void ember_kernel_maps_free(struct ember_kernel_maps *k)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);

	for (uint32_t i = 0; i < ember_slots_end(&k->procs); i++)
		if (ember_slots_get(&k->procs, i))
			drop(k, i);
	ember_slots_free(&k->procs);
}

/* Frees the processes whose exit was read EMBER_KMAPS_KEEP_NS ago; when full, the one that
 * exited longest ago, else the one reported longest ago, makes room. */
static void sweep(struct ember_kernel_maps *k, uint64_t now_ns)
{
	struct ember_kmaps_proc *p, *oldest = NULL;

	for (uint32_t i = 0; i < ember_slots_end(&k->procs); i++) {
		if (!(p = ember_slots_get(&k->procs, i)))
			continue;
		if (p->exited_ns && now_ns - p->exited_ns >= EMBER_KMAPS_KEEP_NS)
			drop(k, i);
		else if (!oldest || (!!p->exited_ns > !!oldest->exited_ns) ||
		         (!!p->exited_ns == !!oldest->exited_ns && p->noted_ns < oldest->noted_ns))
			oldest = p;
	}
	if (k->procs.count == k->procs.max && oldest) {
		drop(k, ember_slots_slot_of(&k->procs, oldest));
		k->dropped++;
	}
}

/* Appends a line of maps text; false if it does not fit. */
static bool append(struct ember_kmaps_proc *p, const char *line, size_t n)
{
	char *grown;

	if (p->len + n > EMBER_KMAPS_BYTES)
		return false;
	if (p->len + n > p->cap) {
		grown = realloc(p->text, EMBER_KMAPS_BYTES);
		if (!grown)
			return false;
		p->text = grown;
		p->cap = EMBER_KMAPS_BYTES;
	}
	memcpy(p->text + p->len, line, n);
	p->len += (uint32_t)n;
	return true;
}

/* The path of a reported mapping: its names, the mount's root's side first. */
static void mapping_path(const struct ember_proc_event *ev, char *out, size_t size)
{
	size_t at = 0;
	uint32_t depth = ev->depth < EMBER_MMAP_DEPTH ? ev->depth : EMBER_MMAP_DEPTH;

	out[0] = '\0';
	if (ev->depth >= EMBER_MMAP_DEPTH)
		at += (size_t)snprintf(out, size, "/~"); /* deeper than the kernel walked */
	for (uint32_t i = depth; i-- > 0 && at < size;) {
		size_t n = strnlen(ev->name[i], EMBER_MMAP_NAME_LEN);

		at += (size_t)snprintf(out + at, size - at, "/%.*s%s", (int)n, ev->name[i],
		                       n == EMBER_MMAP_NAME_LEN - 1 ? "~" : "");
	}
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

/*
 * pid's entry for program exec_id: another program (an exec, or a new process given the PID)
 * starts afresh. The program's own file and loader are mapped before its exec is reported.
 */
static struct ember_kmaps_proc *entry(struct ember_kernel_maps *k, uint32_t pid, uint64_t exec_id,
                                      uint64_t now_ns)
{
	struct ember_kmaps_proc *p;
	uint32_t slot;
	int r;

	sweep(k, now_ns);
	r = ember_slots_add(&k->procs, &pid, sizeof(pid), &slot);
	if (r < 0)
		return NULL;
	p = ember_slots_at(&k->procs, slot);
	if (r == 1)
		*p = (struct ember_kmaps_proc){.pid = pid, .exec_id = exec_id};
	if (exec_id != p->exec_id || p->exited_ns) {
		p->exec_id = exec_id;
		p->exited_ns = 0;
		p->len = p->files = 0;
	}
	p->noted_ns = now_ns;
	return p;
}

void ember_kernel_maps_event(struct ember_kernel_maps *k, const struct ember_proc_event *ev,
                             uint64_t now_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);
	struct ember_kmaps_proc *p;
	char line[512], path[EMBER_MMAP_DEPTH * (EMBER_MMAP_NAME_LEN + 2) + 4];
	int n;

	if ((ev->kind != EMBER_EV_EXEC && ev->kind != EMBER_EV_MMAP) ||
	    !(p = entry(k, ev->tgid, ev->exec_id, now_ns)) || ev->start >= ev->end)
		return;
	if (ev->kind == EMBER_EV_EXEC) {
		n = snprintf(line, sizeof(line), "%llx-%llx r-xp 00000000 00:00 0 [vdso]\n",
		             (unsigned long long)ev->start, (unsigned long long)ev->end);
	} else {
		mapping_path(ev, path, sizeof(path));
		n = snprintf(line, sizeof(line), "%llx-%llx r-xp %08llx %02x:%02x %llu %s\n",
		             (unsigned long long)ev->start, (unsigned long long)ev->end,
		             (unsigned long long)ev->offset, ev->dev >> 20, ev->dev & 0xfffff,
		             (unsigned long long)ev->ino, path[0] ? path : "/~");
		k->mappings++;
	}
	if (n <= 0 || (size_t)n >= sizeof(line))
		return;
	if (!append(p, line, (size_t)n))
		k->dropped++;
	else
		p->files += ev->kind == EMBER_EV_MMAP;
}

void ember_kernel_maps_exited(struct ember_kernel_maps *k, uint32_t pid, uint64_t now_ns)
{
	uint32_t slot;

	if (!ember_slots_find(&k->procs, &pid, sizeof(pid), &slot))
		((struct ember_kmaps_proc *)ember_slots_at(&k->procs, slot))->exited_ns = now_ns;
}

int ember_kernel_maps_get(struct ember_kernel_maps *k, uint32_t pid, struct ember_maps *out)
{
	const struct ember_kmaps_proc *p;
	uint32_t slot;
	int err;

	if (ember_slots_find(&k->procs, &pid, sizeof(pid), &slot))
		return -ENOENT;
	p = ember_slots_at(&k->procs, slot);
	if (!p->files)
		return -ENOENT;
	/* Mappings are reported in the order they are made: the parser sorts them. */
	err = ember_maps_parse(p->text, p->len, out);
	k->served += !err;
	return err;
}

void ember_kernel_maps_report_stats(const struct ember_kernel_maps *k,
                                    const struct ember_stat_sink *sink)
{
	ember_stat(sink, "processes.kernel_mappings", k->mappings);
	ember_stat(sink, "processes.kernel_maps_served", k->served);
	ember_stat(sink, "processes.kernel_maps_dropped", k->dropped);
}
