// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/process/process_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "shared/log.h"
#include "symbolizer/memory/mem_owners.h"

static struct ember_process *at(const struct ember_processes *t, uint32_t slot)
{
	return *(struct ember_process **)ember_slots_at(&t->slots, slot);
}

/* ctx is the slot table. */
static bool pid_eq(const void *ctx, uint32_t slot, const void *key, size_t len)
{
	const struct ember_process *p = *(struct ember_process **)ember_slots_at(ctx, slot);

	/* A slot just taken is filled in after the index lookup: it holds no process yet. */
	return p && len == sizeof(p->pid) && !memcmp(&p->pid, key, len);
}

int ember_processes_init(struct ember_processes *t, struct ember_broker_client *broker)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);

	memset(t, 0, sizeof(*t));
	t->broker = broker;
	return ember_slots_init(&t->slots, sizeof(struct ember_process *), EMBER_PROCESSES_MAX,
	                        pid_eq);
}

static void forget_facts(struct ember_process *p)
{
	free(p->exe_path);
	p->exe_path = NULL;
	p->container_id[0] = '\0';
	p->facts_loaded = false;
	p->facts_retry_ns = 0;
	p->context_look_ns = p->context_gap_ns = 0;
}

static bool same_maps(const struct ember_maps *a, const struct ember_maps *b)
{
	return a->count == b->count && a->context_addr == b->context_addr &&
	       a->paths.len == b->paths.len &&
	       (!a->count || !memcmp(a->entries, b->entries, a->count * sizeof(*a->entries))) &&
	       (!a->paths.len || !memcmp(a->paths.data, b->paths.data, a->paths.len));
}

static void set_maps(struct ember_processes *t, struct ember_process *p, struct ember_maps *fresh)
{
	/* The same maps read again (a look for a context published since, most often): the
	 * same generation, so that the stacks named with them stay remembered. */
	if (p->maps_generation && fresh->count && same_maps(&p->maps, fresh)) {
		ember_maps_free(fresh);
		memset(fresh, 0, sizeof(*fresh));
		return;
	}
	t->maps_bytes -= ember_maps_bytes(&p->maps);
	ember_maps_free(&p->maps);
	p->maps = *fresh;
	memset(fresh, 0, sizeof(*fresh));
	t->maps_bytes += ember_maps_bytes(&p->maps);
	p->maps_generation = ++t->maps_generations;
}

static void destroy(struct ember_processes *t, struct ember_process *p)
{
	struct ember_maps none = {0};

	set_maps(t, p, &none);
	forget_facts(p);
	ember_slots_remove(&t->slots, p->slot, &p->pid, sizeof(p->pid));
	free(p);
}

void ember_processes_free(struct ember_processes *t)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);

	for (uint32_t i = 0; i < ember_slots_end(&t->slots); i++)
		if (ember_slots_get(&t->slots, i) && at(t, i))
			destroy(t, at(t, i));
	ember_slots_free(&t->slots);
	memset(t, 0, sizeof(*t));
}

struct ember_process *ember_processes_find(struct ember_processes *t, uint32_t pid)
{
	uint32_t slot;

	return ember_slots_find(&t->slots, &pid, sizeof(pid), &slot) ? NULL : at(t, slot);
}

size_t ember_processes_count(const struct ember_processes *t)
{
	return t->slots.count;
}

/* The process seen longest ago, not counting those seen at or after `since`. */
static struct ember_process *idlest(const struct ember_processes *t, uint64_t since)
{
	struct ember_process *best = NULL;

	for (uint32_t i = 0; i < ember_slots_end(&t->slots); i++) {
		struct ember_process *p = ember_slots_get(&t->slots, i) ? at(t, i) : NULL;

		if (p && p->last_seen_ns < since && (!best || p->last_seen_ns < best->last_seen_ns))
			best = p;
	}
	return best;
}

static struct ember_process *get(struct ember_processes *t, uint32_t pid, uint64_t now_ns)
{
	struct ember_process *p = ember_processes_find(t, pid), *old;
	uint32_t slot;

	if (p)
		return p;
	if (t->slots.count == EMBER_PROCESSES_MAX && (old = idlest(t, UINT64_MAX))) {
		destroy(t, old);
		t->evicted++;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->last_seen_ns = now_ns;
	p->exec_seen = t->recent_execs[pid % EMBER_RECENT_EXECS] == pid;
	if (ember_slots_add(&t->slots, &pid, sizeof(pid), &slot) < 0) {
		free(p);
		return NULL;
	}
	p->slot = slot;
	*(struct ember_process **)ember_slots_at(&t->slots, slot) = p;
	return p;
}

struct ember_process *ember_processes_get(struct ember_processes *t, uint32_t pid, uint64_t now_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);
	struct ember_process *p = get(t, pid, now_ns);

	if (p)
		p->last_seen_ns = now_ns;
	return p;
}

void ember_processes_on_exec(struct ember_processes *t, uint32_t pid, uint64_t exec_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);
	struct ember_process *p = ember_processes_find(t, pid);

	if (!p) {
		t->recent_execs[pid % EMBER_RECENT_EXECS] = pid;
		return;
	}
	/* A reused pid that execs lives again. */
	p->exited_ns = 0;
	p->exec_seen = true;
	/* Maps read since (the unwind tables' loader runs ahead) are the new program's.
	 * Older ones are forgotten, not only marked stale: were the reload to fail (the
	 * process is gone), they would name the old program's functions. */
	if (p->maps_loaded_ns < exec_ns) {
		struct ember_maps none = {0};

		set_maps(t, p, &none);
		p->maps_loaded = false;
		p->maps_stale = true;
		p->maps_loaded_ns = 0;
	}
	p->comm[0] = '\0';
	forget_facts(p);
}

void ember_processes_on_exit(struct ember_processes *t, uint32_t pid, uint64_t now_ns)
{
	struct ember_process *p = ember_processes_find(t, pid);

	if (p && !p->exited_ns)
		p->exited_ns = now_ns ? now_ns : 1;
}

void ember_processes_adopt_maps(struct ember_processes *t, uint32_t pid, struct ember_maps *maps,
                                uint64_t now_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);
	struct ember_maps kept = *maps;
	struct ember_process *p;

	memset(maps, 0, sizeof(*maps));
	/* Copied into arrays of their own (of their exact size): the caller's are freed. */
	if (!kept.count || ember_maps_keep_executable(&kept) || !kept.count ||
	    !(p = get(t, pid, now_ns))) {
		*maps = kept;
		return;
	}
	set_maps(t, p, &kept);
	p->maps_loaded = true;
	p->maps_stale = false;
	p->maps_error = 0;
	p->maps_loaded_ns = now_ns;
	t->maps_adopted++;
}

int ember_process_fetch_maps(struct ember_broker_client *broker, struct ember_kernel_maps *kmaps,
                             uint32_t pid, struct ember_maps *out)
{
	char *text = NULL;
	long len;
	int fd = ember_broker_request(broker, EMBER_BROKER_MAPS, pid, 0, NULL), err;

	/* Gone (its snapshot, if any, made at one of its first samples): what the kernel said. */
	if ((fd < 0 || (broker->last.flags & EMBER_BROKER_SNAPSHOT)) && kmaps &&
	    !ember_kernel_maps_get(kmaps, pid, out)) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (fd < 0)
		return fd;
	len = ember_maps_read_fd(fd, &text);
	close(fd);
	/* Read empty: it exited after the collector opened them. Asked again, the collector
	 * finds it gone and serves the snapshot it made while the process ran, if any. */
	if (!len && !(broker->last.flags & EMBER_BROKER_SNAPSHOT) &&
	    (fd = ember_broker_request(broker, EMBER_BROKER_MAPS, pid, 0, NULL)) >= 0) {
		free(text);
		text = NULL;
		len = ember_maps_read_fd(fd, &text);
		close(fd);
	}
	if (len < 0)
		return (int)len;
	err = ember_maps_parse(text, (size_t)len, out);
	free(text);
	return err;
}

static int load_maps(struct ember_processes *t, struct ember_process *p, uint64_t now_ns)
{
	struct ember_maps fresh;
	int err;

	p->maps_loaded_ns = now_ns;
	p->maps_stale = false;
	p->maps_after_exit = p->exited_ns != 0;
	t->maps_loads++;
	err = ember_process_fetch_maps(t->broker, t->kmaps, p->pid, &fresh);
	if (!err && (err = ember_maps_keep_executable(&fresh)))
		ember_maps_free(&fresh);
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
	set_maps(t, p, &fresh);
	p->maps_loaded = true;
	p->maps_error = 0;
	return 0;
}

const struct ember_map_entry *ember_process_find_mapping(struct ember_processes *t,
                                                         struct ember_process *p, uint64_t addr,
                                                         uint64_t now_ns)
{
	return ember_process_find_mapping_at(t, p, addr, 0, now_ns);
}

const struct ember_map_entry *ember_process_find_mapping_at(struct ember_processes *t,
                                                            struct ember_process *p, uint64_t addr,
                                                            uint64_t seen_ns, uint64_t now_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);
	const struct ember_map_entry *e;
	bool may_reload = now_ns - p->maps_loaded_ns >= EMBER_MAPS_RELOAD_MIN_NS;
	/* Gone, and the last read failed: asking again cannot help. */
	bool gone = p->exited_ns && p->maps_error;

	if ((!p->maps_loaded || p->maps_stale) && !gone && (may_reload || !p->maps_loaded_ns))
		load_maps(t, p, now_ns);
	e = ember_maps_find(&p->maps, addr);
	/* A mapping created since we last looked (dlopen, JIT, the loader's libraries when the
	 * maps were read at exec, before the address was seen); of a process gone, once: the
	 * collector's snapshot of its maps may be newer than what was read. */
	if (!e && p->maps_loaded &&
	    (p->exited_ns
	         ? !p->maps_after_exit
	         : (may_reload && now_ns - p->maps_loaded_ns >= EMBER_MAPS_RELOAD_MIN_NS) ||
	               (p->maps_loaded_ns < seen_ns &&
	                now_ns - p->maps_loaded_ns >= EMBER_MAPS_RELOAD_SEEN_NS
	                                                  << p->seen_misses))) {
		if (!load_maps(t, p, now_ns))
			e = ember_maps_find(&p->maps, addr);
		/* Still nowhere (a wrong frame, not a new mapping): the next such read waits
		 * longer, up to EMBER_MAPS_RELOAD_MIN_NS. */
		if (!e &&
		    EMBER_MAPS_RELOAD_SEEN_NS << (p->seen_misses + 1) <= EMBER_MAPS_RELOAD_MIN_NS)
			p->seen_misses++;
		else if (e)
			p->seen_misses = 0;
	}
	return e;
}

const char *ember_process_mapping_path(const struct ember_process *p,
                                       const struct ember_map_entry *e)
{
	return ember_maps_path(&p->maps, e);
}

uint64_t ember_process_maps_generation(const struct ember_process *p)
{
	return p->maps_loaded && !p->maps_stale ? p->maps_generation : 0;
}

uint64_t ember_processes_maps_sets(const struct ember_processes *t)
{
	return t->maps_generations;
}

uint64_t ember_process_context_addr(const struct ember_process *p)
{
	return p->maps.context_addr;
}

bool ember_process_context_look_due(struct ember_process *p, uint64_t now_ns)
{
	if (p->maps.context_addr)
		return false;
	if (!p->context_look_ns) {
		p->context_gap_ns =
		    p->exec_seen ? EMBER_CONTEXT_LOOK_FIRST_NS : EMBER_CONTEXT_LOOK_RUNNING_NS;
		p->context_look_ns = now_ns + p->context_gap_ns;
		return false;
	}
	if (now_ns < p->context_look_ns)
		return false;
	if (p->context_gap_ns < EMBER_CONTEXT_LOOK_MAX_NS / 2)
		p->context_gap_ns *= 2;
	else
		p->context_gap_ns = EMBER_CONTEXT_LOOK_MAX_NS;
	p->context_look_ns = now_ns + p->context_gap_ns;
	return true;
}

void ember_process_learn_comm(struct ember_process *p, const char *comm, bool main_thread)
{
	if (main_thread || !p->comm[0])
		memcpy(p->comm, comm, sizeof(p->comm));
	p->comm[sizeof(p->comm) - 1] = '\0';
}

/* The path of the executable the broker just opened (its reply gives the device and inode:
 * an fstat could wait on its file system), found among the process's mappings by identity. */
static const char *exe_path_from_maps(const struct ember_process *p,
                                      const struct ember_broker_client *b)
{
	const struct ember_map_entry *by_inode = NULL;

	if (!p->maps_loaded || !b->last.ino)
		return NULL;
	for (size_t i = 0; i < p->maps.count; i++) {
		const struct ember_map_entry *e = &p->maps.entries[i];

		if (e->kind != EMBER_MAP_FILE || e->inode != b->last.ino)
			continue;
		if (e->dev_major == b->last.dev_major && e->dev_minor == b->last.dev_minor)
			return ember_maps_path(&p->maps, e);
		/* Overlay file systems (containers) show the lower file's device in maps. */
		if (!by_inode)
			by_inode = e;
	}
	return by_inode ? ember_maps_path(&p->maps, by_inode) : NULL;
}

static int proc_file(struct ember_processes *t, struct ember_process *p, const char *name)
{
	int fd = ember_broker_request(t->broker, EMBER_BROKER_PROC_FILE, p->pid, 0, name);

	t->facts_requests++;
	if (fd < 0) {
		t->facts_failures++;
		if (fd == -EAGAIN)
			p->facts_retry_ns = 1;
		log_debug_errno(fd, "%s of pid %u: %m", name, p->pid);
	}
	return fd;
}

/* Asks the broker for the process's cgroup list and executable. */
static void load_facts(struct ember_processes *t, struct ember_process *p, uint64_t now_ns)
{
	const char *path;
	char *text = NULL;
	long len;
	int fd;

	p->facts_loaded = true;
	p->facts_retry_ns = 0;
	fd = proc_file(t, p, "cgroup");
	if (fd >= 0) {
		len = ember_maps_read_fd(fd, &text);
		close(fd);
		if (len >= 0)
			ember_container_id_from_cgroup(text, (size_t)len, p->container_id);
		free(text);
	}
	/* The maps tell the executable's path as the process sees it. */
	if (!p->maps_loaded || p->maps_stale)
		ember_process_find_mapping(t, p, 0, now_ns);
	fd = proc_file(t, p, "exe");
	if (fd >= 0) {
		path = exe_path_from_maps(p, t->broker);
		close(fd);
		free(p->exe_path);
		p->exe_path = path ? strdup(path) : NULL;
	}
	if (p->facts_retry_ns) {
		p->facts_loaded = false;
		p->facts_retry_ns = now_ns + EMBER_PROCESS_FACTS_RETRY_NS;
	}
}

bool ember_process_facts(struct ember_processes *t, struct ember_process *p, uint64_t now_ns,
                         const char **exe_path, const char **container_id)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);

	if (!p->facts_loaded && now_ns >= p->facts_retry_ns)
		load_facts(t, p, now_ns);
	*exe_path = p->exe_path;
	*container_id = p->container_id;
	return p->facts_loaded;
}

void ember_processes_sweep(struct ember_processes *t, uint64_t now_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);

	if (now_ns - t->last_sweep_ns < EMBER_PROCESSES_SWEEP_NS)
		return;
	t->last_sweep_ns = now_ns;
	for (uint32_t i = 0; i < ember_slots_end(&t->slots); i++) {
		struct ember_process *p = ember_slots_get(&t->slots, i) ? at(t, i) : NULL;

		if (!p)
			continue;
		if (p->exited_ns && now_ns - p->exited_ns >= EMBER_PROCESS_EXIT_GRACE_NS) {
			destroy(t, p);
			t->freed_exited++;
		} else if (now_ns - p->last_seen_ns >= EMBER_PROCESS_IDLE_NS) {
			destroy(t, p);
			t->freed_idle++;
		}
	}
}

static size_t process_bytes(const struct ember_process *p)
{
	return sizeof(*p) + ember_maps_bytes(&p->maps) +
	       (p->exe_path ? strlen(p->exe_path) + 1 : 0);
}

size_t ember_processes_shrink(struct ember_processes *t, size_t bytes, uint64_t now_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_PROCESSES);
	size_t freed = 0;
	struct ember_process *p;

	/* Those sampled in the last second are being symbolized: they stay. */
	while (freed < bytes && (p = idlest(t, now_ns - EMBER_PROCESSES_SWEEP_NS))) {
		freed += process_bytes(p);
		destroy(t, p);
		t->shrunk++;
	}
	return freed;
}

void ember_processes_report_stats(const struct ember_processes *t,
                                  const struct ember_stat_sink *sink, bool with_facts)
{
	ember_stat(sink, "processes.live", t->slots.count);
	ember_stat(sink, "processes.maps_bytes", t->maps_bytes);
	ember_stat(sink, "processes.freed_after_exit", t->freed_exited);
	ember_stat(sink, "processes.freed_idle", t->freed_idle);
	ember_stat(sink, "processes.evicted", t->evicted + t->shrunk);
	ember_stat(sink, "maps.loads", t->maps_loads);
	ember_stat(sink, "maps.failures", t->maps_failures);
	ember_stat(sink, "maps.adopted", t->maps_adopted);
	if (with_facts) {
		ember_stat(sink, "process_facts.requests", t->facts_requests);
		ember_stat(sink, "process_facts.failures", t->facts_failures);
	}
}
