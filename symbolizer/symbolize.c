// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbolize.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "symbolizer/record_decode.h"
#include "symbolizer/symbols/demangle.h"
#include "symbolizer/process/container.h"
#include "shared/log.h"
#include "symbolizer/unwind/unwind_tables.h"

#define KERNEL_MAPPING_NAME "[kernel.kallsyms]"

int ember_symbolizer_init(struct ember_symbolizer *s, struct ember_profile *profile,
                          struct ember_broker_client *broker, size_t objcache_bytes)
{
	int err;

	memset(s, 0, sizeof(*s));
	s->profile = profile;
	s->broker = broker;
	s->kernel_mapping = EMBER_NONE;
	err = ember_objcache_init(&s->objs, objcache_bytes);
	if (!err)
		err = ember_processes_init(&s->procs);
	return err;
}

void ember_symbolizer_free(struct ember_symbolizer *s)
{
	ember_objcache_free(&s->objs);
	ember_processes_free(&s->procs);
	ember_kallsyms_free(&s->ksyms);
}

void ember_symbolizer_profile_was_reset(struct ember_symbolizer *s)
{
	s->kernel_mapping = EMBER_NONE;
}

static void load_kallsyms(struct ember_symbolizer *s, uint64_t now_ns)
{
	struct ember_kallsyms fresh = {0};
	bool first = !s->ksyms_tried;
	int fd, err;

	s->ksyms_tried = true;
	s->ksyms_loaded_ns = now_ns;
	fd = ember_broker_request(s->broker, EMBER_BROKER_KALLSYMS, 0, 0, NULL);
	if (fd < 0) {
		if (first)
			log_warn_errno(fd, "no kernel symbols (%m): kernel frames stay addresses");
		return;
	}
	err = ember_kallsyms_load_fd(fd, &fresh);
	close(fd);
	if (err) {
		log_warn_errno(err, "cannot read kernel symbols: %m");
		return;
	}
	/* Replaces the old table: modules and BPF programs come and go. */
	ember_kallsyms_free(&s->ksyms);
	s->ksyms = fresh;
	if (first && s->ksyms.addresses_hidden)
		log_warn("the kernel hides its symbol addresses (kptr_restrict): kernel frames "
		         "stay addresses; `ember check` says how to change that");
}

/* Adds a location whose only line names a function. */
static int named_location(struct ember_symbolizer *s, uint32_t mapping, enum ember_frame_kind kind,
                          uint64_t addr, const char *name, uint32_t *out)
{
	struct ember_function fn = {0};
	struct ember_line line = {0};
	int err;

	err = ember_profile_intern_cstr(s->profile, name, &fn.name);
	if (err)
		return err;
	fn.system_name = fn.name;
	err = ember_profile_add_function(s->profile, &fn, &line.function);
	if (err)
		return err;
	return ember_profile_add_location(s->profile, mapping, kind, addr, &line, 1, out);
}

static int kernel_location(struct ember_symbolizer *s, uint64_t addr, bool is_return,
                           uint64_t now_ns, uint32_t *out)
{
	const struct ember_ksym *sym;
	char name[600];
	int err;

	if (s->kernel_mapping == EMBER_NONE) {
		struct ember_mapping m = {.limit = UINT64_MAX};

		err = ember_profile_intern_cstr(s->profile, KERNEL_MAPPING_NAME, &m.filename);
		if (!err)
			err = ember_profile_add_mapping(s->profile, &m, &s->kernel_mapping);
		if (err)
			return err;
	}
	if (!ember_profile_find_location(s->profile, s->kernel_mapping, EMBER_FRAME_KERNEL, addr,
	                                 out))
		return 0;
	/* Re-read now and then: BPF programs ("bpf_prog_... [bpf]") and modules
	 * loaded since the last read would otherwise borrow a neighbour's name. */
	if (!s->ksyms_tried || now_ns - s->ksyms_loaded_ns > EMBER_KALLSYMS_RELOAD_NS)
		load_kallsyms(s, now_ns);
	/* A return address points after the call: look up the call itself. */
	sym = ember_kallsyms_lookup(&s->ksyms, is_return ? addr - 1 : addr);
	if (!sym) {
		s->unsymbolized_frames++;
		return ember_profile_add_location(s->profile, s->kernel_mapping, EMBER_FRAME_KERNEL,
		                                  addr, NULL, 0, out);
	}
	if (*ember_ksym_module(&s->ksyms, sym))
		snprintf(name, sizeof(name), "%s [%s]", ember_ksym_name(&s->ksyms, sym),
		         ember_ksym_module(&s->ksyms, sym));
	else
		snprintf(name, sizeof(name), "%s", ember_ksym_name(&s->ksyms, sym));
	return named_location(s, s->kernel_mapping, EMBER_FRAME_KERNEL, addr, name, out);
}

/*
 * A deleted file on one of the kernel's internal mounts (a memfd, SysV or
 * anonymous shared memory, "/memfd:jit" in the maps) lives only in memory:
 * no viewer can open it by that name, and pprof tries to unless the name
 * starts with '[' (as "[vdso]"). It becomes "[memfd:jit]", slashes in the
 * name replaced, so that nothing reads as a path.
 */
static const char *in_memory_name(const char *path, char *buf, size_t size)
{
	size_t n = 0;

	/* A memfd's name may hold slashes of its own. */
	if (strncmp(path, "/memfd:", 7) &&
	    (path[0] != '/' || (strchr(path + 1, '/') && strcmp(path, "/dev/zero"))))
		return NULL;
	buf[n++] = '[';
	for (const char *c = path + 1; *c && n + 2 < size; c++)
		buf[n++] = *c == '/' || *c == ']' ? '_' : *c;
	buf[n++] = ']';
	buf[n] = '\0';
	return buf;
}

static const char *mapping_name(const struct ember_maps *maps, const struct ember_map_entry *e,
                                char *buf, size_t size)
{
	const char *in_memory;

	switch (e->kind) {
	case EMBER_MAP_FILE:
		if (e->deleted && (in_memory = in_memory_name(ember_maps_path(maps, e), buf, size)))
			return in_memory;
		return ember_maps_path(maps, e);
	case EMBER_MAP_VDSO:
	case EMBER_MAP_VSYSCALL:
	case EMBER_MAP_OTHER:
		return ember_maps_path(maps, e);
	default:
		return "[anon]";
	}
}

/* Debug files are opened by the broker: by build id, or by debug link
 * relative to the file mapped at start in pid. */
struct debug_ctx {
	struct ember_broker_client *broker;
	uint32_t pid;
	uint64_t start;
};

static int open_by_build_id(void *ctx, const char *hex)
{
	struct debug_ctx *d = ctx;

	return ember_broker_request(d->broker, EMBER_BROKER_DEBUG_FILE, 0, 0, hex);
}

static int open_by_debuglink(void *ctx, const char *name)
{
	struct debug_ctx *d = ctx;

	return ember_broker_request(d->broker, EMBER_BROKER_DEBUGLINK, d->pid, d->start, name);
}

/* The parsed file behind a mapping, asking the broker on a cache miss. */
static struct ember_obj *mapped_object(struct ember_symbolizer *s, uint32_t pid,
                                       const struct ember_map_entry *e, uint64_t now_ns)
{
	struct ember_obj_key key = {makedev(e->dev_major, e->dev_minor), e->inode};
	struct ember_obj *o = ember_objcache_get(&s->objs, &key, now_ns);
	struct debug_ctx ctx = {s->broker, pid, e->start};
	struct ember_debug_opener op = {&ctx, open_by_build_id, open_by_debuglink};
	int fd;

	/* A file the broker could not open through one process (gone already, a
	 * short-lived one) may well open through another that maps it. */
	if (o && !(o->open_failed_pid && o->open_failed_pid != pid))
		return o;
	fd = ember_broker_request(s->broker, EMBER_BROKER_MAPPED_FILE, pid, e->start, NULL);
	o = ember_objcache_load(&s->objs, &key, fd, &op, now_ns);
	if (o && fd < 0)
		o->open_failed_pid = pid;
	if (fd >= 0)
		close(fd);
	if (o && o->error)
		log_debug_errno(o->error, "no symbols for inode %llu of pid %u: %m",
		                (unsigned long long)e->inode, pid);
	else if (o)
		log_debug("pid %u inode %llu: %zu symbols%s, debug info: %s", pid,
		          (unsigned long long)e->inode, o->file.syms.nsyms,
		          o->file.has_go ? ", Go pclntab" : "",
		          o->file.dwarf ? ember_debug_source_name(o->file.dwarf_source) : "none");
	return o;
}

void ember_symbolizer_preload(struct ember_symbolizer *s, uint32_t pid,
                              const struct ember_map_entry *e, int fd, uint64_t now_ns)
{
	struct ember_obj_key key = {makedev(e->dev_major, e->dev_minor), e->inode};
	struct debug_ctx ctx = {s->broker, pid, e->start};
	struct ember_debug_opener op = {&ctx, open_by_build_id, open_by_debuglink};
	struct ember_obj *o = ember_objcache_get(&s->objs, &key, now_ns);

	if (!o || o->error)
		ember_objcache_load(&s->objs, &key, fd, &op, now_ns);
}

static int intern_opt(struct ember_profile *p, const char *s, uint32_t *out)
{
	*out = 0;
	return s && *s ? ember_profile_intern_cstr(p, s, out) : 0;
}

/* A function of the profile for one symbolized frame: readable name, mangled system name. */
static int frame_function(struct ember_symbolizer *s, const struct ember_sym_frame *f,
                          uint32_t *out)
{
	struct ember_function fn = {0};
	char readable[1024];
	int err;

	err = ember_profile_intern_cstr(s->profile, f->name, &fn.system_name);
	if (err)
		return err;
	fn.name = fn.system_name;
	if (ember_demangle(f->name, readable, sizeof(readable)) == 1) {
		err = ember_profile_intern_cstr(s->profile, readable, &fn.name);
		if (err)
			return err;
	}
	/* pprof reads a line number against the function's file. */
	err = intern_opt(s->profile, f->file ? f->file : f->decl_file, &fn.filename);
	if (err)
		return err;
	fn.start_line = f->decl_line;
	return ember_profile_add_function(s->profile, &fn, out);
}

static int symbolized_location(struct ember_symbolizer *s, uint32_t mapping,
                               enum ember_frame_kind kind, uint64_t addr,
                               const struct ember_sym_frames *frames, uint32_t *out)
{
	struct ember_line lines[EMBER_SYM_MAX_FRAMES];
	int err;

	for (uint32_t i = 0; i < frames->n; i++) {
		memset(&lines[i], 0, sizeof(lines[i]));
		err = frame_function(s, &frames->f[i], &lines[i].function);
		if (err)
			return err;
		lines[i].line = frames->f[i].line;
	}
	s->inline_frames += frames->n - 1;
	return ember_profile_add_location(s->profile, mapping, kind, addr, lines, frames->n, out);
}

static int mapping_identity(struct ember_symbolizer *s, const struct ember_obj *obj,
                            struct ember_mapping *m)
{
	const struct ember_objfile *f = &obj->file;
	int err = 0;

	if (f->syms.build_id_len)
		err = ember_profile_intern_cstr(s->profile, f->syms.build_id_hex, &m->gnu_build_id);
	if (!err && f->syms.go_build_id[0])
		err = ember_profile_intern_cstr(s->profile, f->syms.go_build_id, &m->go_build_id);
	if (!err && f->has_id)
		err = ember_profile_intern_cstr(s->profile, f->id.hash_hex, &m->file_hash);
	return err;
}

/* A frame left unnamed because its file or its process's map could not be read in time. */
static void stalled_frame(struct ember_symbolizer *s, int error)
{
	if (error != -ETIMEDOUT)
		return;
	s->frames_stalled++;
	s->sample_stalled = true;
}

static int user_location(struct ember_symbolizer *s, struct ember_process *proc, uint64_t addr,
                         bool is_return, uint64_t now_ns, uint32_t *out)
{
	const struct ember_map_entry *e;
	struct ember_mapping m = {0};
	struct ember_obj *obj = NULL;
	enum ember_frame_kind kind = EMBER_FRAME_NATIVE;
	enum ember_sym_origin origin;
	uint64_t lookup = is_return ? addr - 1 : addr, vaddr;
	char name_buf[256];
	uint32_t mapping;
	int err;

	e = ember_process_find_mapping(&s->procs, proc, s->broker, addr, now_ns);
	if (!e) {
		stalled_frame(s, proc->maps_error);
		s->unknown_frames++;
		return ember_profile_add_location(s->profile, EMBER_NONE, EMBER_FRAME_UNKNOWN, addr,
		                                  NULL, 0, out);
	}
	if (e->kind == EMBER_MAP_FILE && e->inode && !e->deleted)
		obj = mapped_object(s, proc->pid, e, now_ns);
	if (obj && obj->error) {
		stalled_frame(s, obj->error);
		obj = NULL;
	}
	m.start = e->start;
	m.limit = e->end;
	m.file_offset = e->offset;
	/*
	 * pprof opens the file of a mapping that says it has no functions, to
	 * symbolize it itself, and warns when it cannot. A file ember could not
	 * read (gone, not ELF, on a file system that stalled) is no better read by
	 * pprof later, which, without the build id, cannot even tell whether the
	 * file at that path on its host is the one that ran: ember's names stand.
	 */
	m.has_functions = obj || e->kind == EMBER_MAP_FILE;
	err = ember_profile_intern_cstr(
	    s->profile, mapping_name(&proc->maps, e, name_buf, sizeof(name_buf)), &m.filename);
	if (!err && obj)
		err = mapping_identity(s, obj, &m);
	if (!err)
		err = ember_profile_add_mapping(s->profile, &m, &mapping);
	if (err)
		return err;
	if (obj && obj->file.has_go)
		kind = EMBER_FRAME_GO;
	if (!ember_profile_find_location(s->profile, mapping, kind, addr, out))
		return 0;
	if (obj &&
	    !ember_elf_offset_to_vaddr(&obj->file.syms, lookup - e->start + e->offset, &vaddr)) {
		origin = ember_objfile_lookup(&obj->file, vaddr, &s->frames_buf);
		ember_objcache_account(&s->objs, obj); /* DWARF units expand on demand */
		if (origin != EMBER_SYM_NONE) {
			s->frames_by_origin[origin]++;
			return symbolized_location(s, mapping, kind, addr, &s->frames_buf, out);
		}
	}
	s->unsymbolized_frames++;
	return ember_profile_add_location(s->profile, mapping, kind, addr, NULL, 0, out);
}

/*
 * A Python frame (words w0, w1): named by its code object, its line in the
 * function's file; an unnamed one stays a frame of its kind, [unknown].
 */
static int python_location(struct ember_symbolizer *s, uint32_t pid, uint64_t w0, uint64_t w1,
                           uint64_t now_ns, uint32_t *out)
{
	struct ember_function fn = {0};
	struct ember_line line = {0};
	struct ember_py_frame f = {0};
	const char *marker;
	int err;

	if ((w0 >> EMBER_PY_TAG_SHIFT) == EMBER_PY_TAG_MARKER) {
		marker = s->python ? ember_python_marker(s->python, w0) : "[python frames stopped]";
		/* Markers of every reason share the addresses above the unwinder's. */
		return named_location(s, EMBER_NONE, EMBER_FRAME_UNKNOWN,
		                      UINT64_MAX - 256 - (w0 & 0xff), marker, out);
	}
	if (s->python)
		ember_python_frame(s->python, pid, w0, w1, now_ns, &f);
	if (!ember_profile_find_location(s->profile, EMBER_NONE, EMBER_FRAME_PYTHON, f.key, out))
		return 0;
	if (!f.name)
		return named_location(s, EMBER_NONE, EMBER_FRAME_PYTHON, f.key, "[unknown]", out);
	err = ember_profile_intern_cstr(s->profile, f.name, &fn.name);
	if (!err)
		err = intern_opt(s->profile, f.file, &fn.filename);
	if (err)
		return err;
	fn.system_name = fn.name;
	fn.start_line = f.firstlineno;
	err = ember_profile_add_function(s->profile, &fn, &line.function);
	if (err)
		return err;
	line.line = f.line;
	return ember_profile_add_location(s->profile, EMBER_NONE, EMBER_FRAME_PYTHON, f.key, &line,
	                                  1, out);
}

static int marker_location(struct ember_symbolizer *s, uint32_t reason, uint32_t *out)
{
	uint64_t addr = UINT64_MAX - reason; /* no real frame has this address */

	if (!ember_profile_find_location(s->profile, EMBER_NONE, EMBER_FRAME_UNKNOWN, addr, out))
		return 0;
	return named_location(s, EMBER_NONE, EMBER_FRAME_UNKNOWN, addr,
	                      ember_unwind_stop_marker(reason), out);
}

#define FACTS_RETRY_NS (1000ull * 1000000ull)

/* The path of the executable the broker just opened (its reply gives the device and inode:
 * an fstat could wait on its file system), found among the process's mappings by identity. */
static const char *exe_path_from_maps(const struct ember_process *proc,
                                      const struct ember_broker_client *b)
{
	const struct ember_map_entry *by_inode = NULL;

	if (!proc->maps_loaded || !b->last.ino)
		return NULL;
	for (size_t i = 0; i < proc->maps.count; i++) {
		const struct ember_map_entry *e = &proc->maps.entries[i];

		if (e->kind != EMBER_MAP_FILE || e->inode != b->last.ino)
			continue;
		if (e->dev_major == b->last.dev_major && e->dev_minor == b->last.dev_minor)
			return ember_maps_path(&proc->maps, e);
		/* Overlay file systems (containers) show the lower file's device in maps. */
		if (!by_inode)
			by_inode = e;
	}
	return by_inode ? ember_maps_path(&proc->maps, by_inode) : NULL;
}

static int proc_file(struct ember_symbolizer *s, struct ember_process *proc, const char *name)
{
	int fd = ember_broker_request(s->broker, EMBER_BROKER_PROC_FILE, proc->pid, 0, name);

	s->facts_requests++;
	if (fd < 0) {
		s->facts_failures++;
		if (fd == -EAGAIN)
			proc->facts_retry_ns = 1;
		log_debug_errno(fd, "%s of pid %u: %m", name, proc->pid);
	}
	return fd;
}

/* Asks the broker for the process's cgroup list and executable, once per program. */
static void load_process_facts(struct ember_symbolizer *s, struct ember_process *proc,
                               uint64_t now_ns)
{
	const char *path;
	char *text = NULL;
	long len;
	int fd;

	proc->facts_loaded = true;
	proc->facts_retry_ns = 0;
	fd = proc_file(s, proc, "cgroup");
	if (fd >= 0) {
		len = ember_maps_read_fd(fd, &text);
		close(fd);
		if (len >= 0)
			ember_container_id_from_cgroup(text, (size_t)len, proc->container_id);
		free(text);
	}
	/* The maps tell the executable's path as the process sees it. */
	if (!proc->maps_loaded || proc->maps_stale)
		ember_process_find_mapping(&s->procs, proc, s->broker, 0, now_ns);
	fd = proc_file(s, proc, "exe");
	if (fd >= 0) {
		path = exe_path_from_maps(proc, s->broker);
		close(fd);
		free(proc->exe_path);
		proc->exe_path = path ? strdup(path) : NULL;
	}
	if (proc->facts_retry_ns) {
		proc->facts_loaded = false;
		proc->facts_retry_ns = now_ns + FACTS_RETRY_NS;
	}
}

/* Makes sure the current profile knows the facts about the sample's process. */
static int note_process_facts(struct ember_symbolizer *s, struct ember_process *proc,
                              uint64_t now_ns)
{
	struct ember_process_attrs pa = {.pid = proc->pid};
	int err = 0;

	if (!proc->facts_loaded && now_ns >= proc->facts_retry_ns)
		load_process_facts(s, proc, now_ns);
	/* Not before the facts are in (the broker may have asked to come back later). */
	if (!proc->facts_loaded || ember_profile_find_process(s->profile, proc->pid))
		return 0;
	if (proc->exe_path)
		err = ember_profile_intern_cstr(s->profile, proc->exe_path, &pa.exe_path);
	if (!err && proc->container_id[0])
		err = ember_profile_intern_cstr(s->profile, proc->container_id, &pa.container_id);
	return err ? err : ember_profile_set_process(s->profile, &pa);
}

/*
 * The leading kernel frames of an off-CPU sample that belong to the probe
 * (the BPF program and the tracepoint machinery that ran it, above
 * __schedule), not to the wait: so many are left out of its stack.
 */
static uint32_t probe_frames(struct ember_symbolizer *s, const uint64_t *frames, uint32_t kn,
                             uint64_t now_ns)
{
	static const char *const prefixes[] = {"bpf_", "__bpf_trace", "__traceiter", "__probestub"};
	uint32_t n = 0;

	if (!s->ksyms_tried || now_ns - s->ksyms_loaded_ns > EMBER_KALLSYMS_RELOAD_NS)
		load_kallsyms(s, now_ns);
	for (; n < kn && n < 8; n++) {
		const struct ember_ksym *sym = ember_kallsyms_lookup(&s->ksyms, frames[n]);
		const char *name = sym ? ember_ksym_name(&s->ksyms, sym) : "";
		bool probe = false;

		for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
			probe |= !strncmp(name, prefixes[i], strlen(prefixes[i]));
		if (!probe)
			break;
	}
	return n < kn ? n : 0;
}

static void learn_comm(struct ember_process *proc, const struct ember_sample_event *sample)
{
	if (sample->tid == sample->tgid || !proc->comm[0])
		memcpy(proc->comm, sample->comm, sizeof(proc->comm));
	proc->comm[sizeof(proc->comm) - 1] = '\0';
}

int ember_symbolizer_add_sample(struct ember_symbolizer *s, const struct ember_sample_event *sample,
                                const uint64_t *frames, uint64_t now_ns)
{
	uint32_t depth = 0, kn = sample->kstack_len, un = sample->ustack_len, first = 0;
	struct ember_sample_key key = {.cpu = sample->cpu, .pid = sample->tgid, .tid = sample->tid};
	struct ember_process *proc = ember_processes_get(&s->procs, sample->tgid, now_ns);
	char thread[EMBER_COMM_LEN + 1];
	int err;

	if (!proc)
		return -ENOMEM;
	learn_comm(proc, sample);
	s->samples++;
	s->sample_stalled = false;
	if (sample->kind == EMBER_EV_OFF_CPU)
		first = probe_frames(s, frames, kn, now_ns);
	for (uint32_t i = first; i < kn; i++) {
		err = kernel_location(s, frames[i], i > 0, now_ns, &s->stack_buf[depth++]);
		if (err)
			return err;
	}
	for (uint32_t i = 0, native = 0; i < un; i++) {
		const uint64_t *w = &frames[kn + i];

		/* Two words: a Python frame or marker; only walker samples have them. */
		if ((sample->stack_flags & EMBER_STACK_PYTHON) && ember_python_is_tagged(w[0]) &&
		    i + 1 < un) {
			err = python_location(s, sample->tgid, w[0], w[1], now_ns,
			                      &s->stack_buf[depth++]);
			i++;
		} else {
			err = user_location(s, proc, w[0], native++ > 0, now_ns,
			                    &s->stack_buf[depth++]);
		}
		if (err)
			return err;
	}
	/* A stack cut short says why, as its outermost frame. */
	if (EMBER_STACK_UNWIND_STOP(sample->stack_flags)) {
		err = marker_location(s, EMBER_STACK_UNWIND_STOP(sample->stack_flags),
		                      &s->stack_buf[depth++]);
		if (err)
			return err;
	}
	s->frames += depth;
	s->samples_stalled += s->sample_stalled;
	if (s->want_process_facts && (err = note_process_facts(s, proc, now_ns)))
		return err;
	err = ember_profile_add_stack(s->profile, s->stack_buf, depth, &key.stack);
	if (err)
		return err;
	memcpy(thread, sample->comm, EMBER_COMM_LEN);
	thread[EMBER_COMM_LEN] = '\0';
	err = ember_profile_intern_cstr(s->profile, thread, &key.thread_name);
	if (!err)
		err = ember_profile_intern_cstr(s->profile, proc->comm, &key.comm);
	if (err)
		return err;
	if (sample->kind == EMBER_EV_OFF_CPU) {
		s->off_cpu_samples++;
		s->off_cpu_ns += sample->off_cpu_ns;
		err = ember_profile_intern_cstr(
		    s->profile, ember_wait_reason(sample->wait_state, sample->wait_syscall),
		    &key.wait);
		return err ? err : ember_profile_add_off_cpu(s->profile, &key, sample->off_cpu_ns);
	}
	return ember_profile_add_sample(s->profile, &key, 1,
	                                sample->time_ns + (uint64_t)s->monotonic_to_realtime_ns);
}

void ember_symbolizer_on_exec(struct ember_symbolizer *s, uint32_t pid, uint64_t exec_ns)
{
	struct ember_process *p = ember_processes_find(&s->procs, pid);

	if (p) {
		/* Maps read since (the unwind tables' loader runs ahead) are the new program's.
		 * Older ones are forgotten, not only marked stale: were the reload to fail (the
		 * process is gone), they would name the old program's functions. */
		if (p->maps_loaded_ns < exec_ns) {
			ember_maps_free(&p->maps);
			p->maps_loaded = false;
			p->maps_stale = true;
			p->maps_loaded_ns = 0;
		}
		p->comm[0] = '\0';
		ember_process_forget_facts(p);
	}
	if (s->python)
		ember_python_on_exec(s->python, pid);
}

void ember_symbolizer_on_exit(struct ember_symbolizer *s, uint32_t pid)
{
	struct ember_process *p = ember_processes_find(&s->procs, pid);

	if (p)
		p->exited = true;
	if (s->python)
		ember_python_on_exit(s->python, pid);
}

uint64_t ember_symbolizer_parse_errors(const struct ember_symbolizer *s)
{
	return ember_objcache_parse_errors(&s->objs);
}

void ember_symbolizer_report_stats(struct ember_symbolizer *s)
{
	struct ember_profile *p = s->profile;

	ember_profile_stat_set(p, "symbolizer.frames", s->frames);
	ember_profile_stat_set(p, "symbolizer.frames_unknown_mapping", s->unknown_frames);
	ember_profile_stat_set(p, "symbolizer.frames_unsymbolized", s->unsymbolized_frames);
	ember_profile_stat_set(p, "symbolizer.frames_stalled", s->frames_stalled);
	ember_profile_stat_set(p, "symbolizer.samples_stalled", s->samples_stalled);
	ember_profile_stat_set(p, "symbolizer.frames_symtab",
	                       s->frames_by_origin[EMBER_SYM_SYMTAB]);
	ember_profile_stat_set(p, "symbolizer.frames_dwarf", s->frames_by_origin[EMBER_SYM_DWARF]);
	ember_profile_stat_set(p, "symbolizer.frames_go", s->frames_by_origin[EMBER_SYM_GO]);
	ember_profile_stat_set(p, "symbolizer.inline_frames", s->inline_frames);
	ember_profile_stat_set(p, "symbolizer.parse_errors", ember_symbolizer_parse_errors(s));
	ember_profile_stat_set(p, "objcache.hits", s->objs.hits);
	ember_profile_stat_set(p, "objcache.misses", s->objs.misses);
	ember_profile_stat_set(p, "objcache.evictions", s->objs.evictions);
	ember_profile_stat_set(p, "objcache.changed_files", s->objs.changed_files);
	ember_profile_stat_set(p, "objcache.shared", s->objs.shared);
	ember_profile_stat_set(p, "objcache.load_errors", s->objs.load_errors);
	ember_profile_stat_set(p, "objcache.bytes", s->objs.bytes);
	ember_profile_stat_set(p, "objcache.max_bytes", s->objs.max_bytes);
	ember_profile_stat_set(p, "kallsyms.bad_lines", s->ksyms.bad_lines);
	ember_profile_stat_set(p, "maps.loads", s->procs.maps_loads);
	ember_profile_stat_set(p, "maps.failures", s->procs.maps_failures);
	ember_profile_stat_set(p, "broker.requests", s->broker->requests);
	ember_profile_stat_set(p, "broker.failures", s->broker->failures);
	ember_profile_stat_set(p, "broker.late_replies", s->broker->late_replies);
	if (p->off_cpu) {
		ember_profile_stat_set(p, "off_cpu.recorded", s->off_cpu_samples);
		ember_profile_stat_set(p, "off_cpu.recorded_ns", s->off_cpu_ns);
	}
	if (s->python) {
		const struct ember_python_stats *ps = &s->python->stats;

		ember_profile_stat_set(p, "python.processes", ps->processes);
		ember_profile_stat_set(p, "python.processes_unsupported", ps->unsupported);
		ember_profile_stat_set(p, "python.rows_sent", ps->rows_sent);
		ember_profile_stat_set(p, "python.frames", ps->frames);
		ember_profile_stat_set(p, "python.frames_named", ps->frames_named);
		ember_profile_stat_set(p, "python.frames_stale", ps->frames_stale);
		ember_profile_stat_set(p, "python.frames_unreadable", ps->frames_unreadable);
		ember_profile_stat_set(p, "python.frames_no_line", ps->frames_no_line);
		ember_profile_stat_set(p, "python.markers_truncated", ps->markers_truncated);
		ember_profile_stat_set(p, "python.markers_unreadable", ps->markers_unreadable);
		ember_profile_stat_set(p, "python.code_reads", ps->code_reads);
		ember_profile_stat_set(p, "python.code_read_errors", ps->code_read_errors);
		ember_profile_stat_set(p, "python.cache_evictions", ps->cache_evictions);
		ember_profile_stat_set(p, "python.files_read", ps->files_read);
	}
	if (s->want_process_facts) {
		ember_profile_stat_set(p, "process_facts.requests", s->facts_requests);
		ember_profile_stat_set(p, "process_facts.failures", s->facts_failures);
	}
}
