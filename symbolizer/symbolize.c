// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbolize.h"

#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/param.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "symbolizer/interp/interp_mem.h"
#include "symbolizer/process/process_context.h"
#include "symbolizer/record_decode.h"
#include "symbolizer/symbols/demangle.h"
#include "shared/fdio.h"
#include "shared/log.h"
#include "symbolizer/unwind/unwind_tables.h"

#define KERNEL_MAPPING_NAME "[kernel.kallsyms]"

/*
 * What reading files may take now: the budget less what is resident, less an
 * eighth kept for what no admission check covers (an interval's write, 3-4
 * MiB for a moment; the kernel symbols' reload, 3 MiB) and for the estimates'
 * error (a file's symbols read within 5.5 MiB of room lifted the resident
 * size 6.1 MiB). With a sixteenth, files read within the room took the
 * resident size to 61-62 MiB under the soak's churn.
 */
#define EMBER_BUDGET_USABLE(limit) ((limit) - (limit) / 8)

int ember_symbolizer_init(struct ember_symbolizer *s, const struct ember_symbolizer_opts *o)
{
	int err;

	memset(s, 0, sizeof(*s));
	s->profile = o->profile;
	s->broker = o->broker;
	s->want_process_facts = o->want_process_facts;
	s->kernel_mapping = EMBER_NONE;
	/* Without /proc/self/statm the budget cannot be kept, but symbols still can. */
	err = ember_mem_budget_init(&s->budget, o->memory_budget);
	if (err)
		log_warn_errno(err, "cannot read this process's resident size (%m): the memory "
		                    "budget is not kept");
	/* Unless set, the parsed-file cache may hold the budget's usable part: what it
	 * expands is held to the room the resident size leaves (set_room), and the budget
	 * shrinks it when other work needs the memory (keep_budget). A fixed share (24 MiB of
	 * the default 64, 12 of them for one file) left a large C++ program's inline frames
	 * out with 29 MiB of the budget unused. */
	err = ember_objcache_init(
	    &s->objs, o->objcache_bytes ? o->objcache_bytes : EMBER_BUDGET_USABLE(s->budget.limit));
	if (!err)
		err = ember_processes_init(&s->procs, o->broker);
	if (!err)
		err = ember_perf_maps_init(&s->perf_maps, o->broker);
	return err;
}

static void forget_stacks(struct ember_symbolizer *s)
{
	for (size_t i = 0; i < EMBER_STACK_MEMOS; i++)
		free(s->stack_memo[i].words);
	memset(s->stack_memo, 0, sizeof(s->stack_memo));
	if (s->frame_memo)
		memset(s->frame_memo, 0, EMBER_FRAME_MEMOS * sizeof(*s->frame_memo));
}

void ember_symbolizer_free(struct ember_symbolizer *s)
{
	forget_stacks(s);
	free(s->frame_memo);
	ember_objcache_free(&s->objs);
	ember_processes_free(&s->procs);
	ember_perf_maps_free(&s->perf_maps);
	ember_kallsyms_free(&s->ksyms);
	ember_mem_budget_free(&s->budget);
}

void ember_symbolizer_set_clock(struct ember_symbolizer *s, int64_t monotonic_to_realtime_ns)
{
	s->monotonic_to_realtime_ns = monotonic_to_realtime_ns;
}

void ember_symbolizer_profile_was_reset(struct ember_symbolizer *s)
{
	s->kernel_mapping = EMBER_NONE;
	memset(s->mapping_memo, 0, sizeof(s->mapping_memo));
	memset(s->comm_memo, 0, sizeof(s->comm_memo));
	forget_stacks(s);
}

static void load_kallsyms(struct ember_symbolizer *s, uint64_t now_ns)
{
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
	/* Replaces the old table (modules and BPF programs come and go), which goes
	 * first: the two are never in memory together. */
	ember_kallsyms_free(&s->ksyms);
	err = ember_kallsyms_load_fd(fd, &s->ksyms);
	close(fd);
	if (err) {
		log_warn_errno(err, "cannot read kernel symbols: %m; kernel frames stay addresses "
		                    "until the next try in a minute");
		return;
	}
	log_debug("kernel symbols read%s: %zu", first ? "" : " again", s->ksyms.nsyms);
	if (first && s->ksyms.addresses_hidden)
		log_warn("the kernel hides its symbol addresses (kptr_restrict): kernel frames "
		         "stay addresses; `ember check` says how to change that");
}

/* One line naming a function name (no file). */
static int name_line(struct ember_symbolizer *s, const char *name, struct ember_line *line)
{
	struct ember_function fn = {0};
	int err = ember_profile_intern_cstr(s->profile, name, &fn.name);

	if (err)
		return err;
	fn.system_name = fn.name;
	memset(line, 0, sizeof(*line));
	return ember_profile_add_function(s->profile, &fn, &line->function);
}

/* Adds a location whose only line names a function (kind: as ember_profile_add_location's). */
static int named_location(struct ember_symbolizer *s, uint32_t mapping, uint32_t kind,
                          uint64_t addr, const char *name, uint32_t *out)
{
	struct ember_line line;
	int err = name_line(s, name, &line);

	return err ? err
	           : ember_profile_add_location(s->profile, mapping, kind, addr, &line, 1, out);
}

/*
 * JIT code no walker named (anonymous memory or a memfd, executable): its process's perf map
 * may name it, now or once the JIT has written the map (a location left unnamed is named
 * then). Returns 1 when it named *loc (or, loc NULL, gave it to a new location in *out).
 */
static int jit_name(struct ember_symbolizer *s, const struct ember_process *proc,
                    const struct ember_map_entry *e, uint32_t mapping, uint64_t addr,
                    uint64_t lookup, uint64_t now_ns, const uint32_t *loc, uint32_t *out)
{
	const char *name;
	struct ember_line line;
	int err;

	if ((e->kind == EMBER_MAP_FILE && !e->deleted) || !(e->perms & EMBER_MAP_X) ||
	    (loc && ember_profile_location_named(s->profile, *loc)))
		return 0;
	name = ember_perf_maps_name(&s->perf_maps, proc->pid, ember_process_exited(proc), lookup,
	                            now_ns);
	/* A perf map written later may name it: the stack is named again, not remembered. */
	s->sample_unsettled |= !name;
	if (!name)
		return 0;
	if (!loc)
		err = named_location(
		    s, mapping, EMBER_FRAME_NATIVE | (lookup != addr ? EMBER_LOCATION_CALL : 0),
		    addr, name, out);
	else if (!(err = name_line(s, name, &line)))
		err = ember_profile_name_location(s->profile, *loc, &line, 1);
	return err ? err : 1;
}

/*
 * The kernel's GNU build id, read once (the broker opens /sys/kernel/notes): the kernel's
 * mapping carries it, as every other mapping carries its file's (the OTLP specification wants
 * one on every mapping, and a backend symbolizes by it). Empty when it cannot be read.
 */
static const char *kernel_build_id(struct ember_symbolizer *s)
{
	char *notes = NULL;
	long n;
	int fd;

	if (s->kernel_id_tried)
		return s->kernel_build_id;
	s->kernel_id_tried = true;
	fd = ember_broker_request(s->broker, EMBER_BROKER_KERNEL_NOTES, 0, 0, NULL);
	if (fd < 0)
		return s->kernel_build_id;
	n = ember_read_whole_fd(fd, EMBER_KERNEL_NOTES_MAX_BYTES, &notes);
	close(fd);
	if (n <= 0 ||
	    ember_kernel_build_id(notes, (size_t)n, s->kernel_build_id, sizeof(s->kernel_build_id)))
		s->kernel_build_id[0] = '\0';
	free(notes);
	return s->kernel_build_id;
}

/* The vDSO's mapped length and build id, from the image the kernel maps into this process. */
static void read_own_vdso(struct ember_symbolizer *s)
{
	const void *image;
	size_t len = ember_vdso_image(&image);
	const Elf64_Ehdr *eh = image;
	long page = sysconf(_SC_PAGESIZE);

	if (!len || page <= 0 || eh->e_phoff > len ||
	    (size_t)eh->e_phnum * sizeof(Elf64_Phdr) > len - eh->e_phoff)
		return;
	for (unsigned int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)((const char *)image + eh->e_phoff) + i;
		uint64_t pages = (ph->p_memsz + (uint64_t)page - 1) / (uint64_t)page;

		if (ph->p_type == PT_LOAD && !ph->p_offset)
			s->vdso_vaddr = ph->p_vaddr & ~((uint64_t)page - 1);
		if (ph->p_type == PT_LOAD)
			s->vdso_len = MAX(s->vdso_len, pages * (uint64_t)page);
		else if (ph->p_type == PT_NOTE && ph->p_offset <= len &&
		         ph->p_filesz <= len - ph->p_offset &&
		         ember_kernel_build_id((const char *)image + ph->p_offset, ph->p_filesz,
		                               s->vdso_build_id, sizeof(s->vdso_build_id)))
			s->vdso_build_id[0] = '\0';
	}
}

/*
 * The vDSO's GNU build id and ELF address: every 64-bit process on the host maps the image
 * this process maps (the unwind tables rely on it too); a mapping of another size (a 32-bit
 * process's) gets neither.
 */
static int vdso_identity(struct ember_symbolizer *s, struct ember_mapping *m)
{
	if (!s->vdso_id_tried) {
		s->vdso_id_tried = true;
		read_own_vdso(s);
	}
	if (m->limit - m->start != s->vdso_len || !s->vdso_build_id[0])
		return 0;
	m->has_file_vaddr = true;
	m->file_vaddr = s->vdso_vaddr;
	return ember_profile_intern_cstr(s->profile, s->vdso_build_id, &m->gnu_build_id);
}

static int kernel_location(struct ember_symbolizer *s, uint64_t addr, bool is_return,
                           uint64_t now_ns, uint32_t *out)
{
	uint32_t place = EMBER_FRAME_KERNEL | (is_return ? EMBER_LOCATION_CALL : 0);
	const struct ember_ksym *sym;
	char name[600];
	int err;

	if (s->kernel_mapping == EMBER_NONE) {
		struct ember_mapping m = {.limit = UINT64_MAX};
		const char *id = kernel_build_id(s);

		err = ember_profile_intern_cstr(s->profile, KERNEL_MAPPING_NAME, &m.filename);
		if (!err && *id)
			err = ember_profile_intern_cstr(s->profile, id, &m.gnu_build_id);
		if (!err)
			err = ember_profile_add_mapping(s->profile, &m, &s->kernel_mapping);
		if (err)
			return err;
	}
	if (!ember_profile_find_location(s->profile, s->kernel_mapping, place, addr, out))
		return 0;
	if (!s->ksyms_tried)
		load_kallsyms(s, now_ns);
	/* A return address points after the call: look up the call itself. */
	sym = ember_kallsyms_lookup(&s->ksyms, is_return ? addr - 1 : addr);
	/* Re-read now and then for an address outside the kernel image's own text: BPF
	 * programs ("bpf_prog_... [bpf]") and modules loaded since the last read would
	 * otherwise borrow a neighbour's name. The image's symbols never change: reading
	 * 5 MB again a minute for them was the most a quiet host cost. */
	if (now_ns - s->ksyms_loaded_ns > EMBER_KALLSYMS_RELOAD_NS &&
	    !ember_kallsyms_settled(&s->ksyms, sym)) {
		log_debug("kernel address %#" PRIx64 " outside the image's text", addr);
		load_kallsyms(s, now_ns);
		sym = ember_kallsyms_lookup(&s->ksyms, is_return ? addr - 1 : addr);
	}
	if (!sym) {
		s->unsymbolized_frames++;
		return ember_profile_add_location(s->profile, s->kernel_mapping, place, addr, NULL,
		                                  0, out);
	}
	if (*ember_ksym_module(&s->ksyms, sym))
		snprintf(name, sizeof(name), "%s [%s]", ember_ksym_name(&s->ksyms, sym),
		         ember_ksym_module(&s->ksyms, sym));
	else
		snprintf(name, sizeof(name), "%s", ember_ksym_name(&s->ksyms, sym));
	return named_location(s, s->kernel_mapping, place, addr, name, out);
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

static const char *mapping_name(const struct ember_process *proc, const struct ember_map_entry *e,
                                char *buf, size_t size)
{
	const char *in_memory;

	switch (e->kind) {
	case EMBER_MAP_FILE:
		if (e->deleted &&
		    (in_memory = in_memory_name(ember_process_mapping_path(proc, e), buf, size)))
			return in_memory;
		return ember_process_mapping_path(proc, e);
	case EMBER_MAP_VDSO:
	case EMBER_MAP_VSYSCALL:
	case EMBER_MAP_OTHER:
		return ember_process_mapping_path(proc, e);
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

/* The parsed file behind a mapping, asking the broker on a cache miss (unless shedding). */
static struct ember_obj *mapped_object(struct ember_symbolizer *s, uint32_t pid,
                                       const struct ember_map_entry *e, uint64_t now_ns)
{
	struct ember_obj_key key = {makedev(e->dev_major, e->dev_minor), e->inode};
	struct ember_obj *o = ember_objcache_get(&s->objs, &key, pid, now_ns);
	struct debug_ctx ctx = {s->broker, pid, e->start};
	struct ember_debug_opener op = {&ctx, open_by_build_id, open_by_debuglink};
	int fd;

	if (o || s->shedding)
		return o;
	fd = ember_broker_mapped_file(s->broker, pid, e->start, e->dev_major, e->dev_minor,
	                              e->inode);
	o = ember_objcache_load(&s->objs, &key, fd, pid, &op, now_ns);
	if (fd >= 0)
		close(fd);
	if (o && o->error)
		log_debug_errno(o->error, "no symbols for inode %llu of pid %u: %m",
		                (unsigned long long)e->inode, pid);
	else if (o)
		log_debug("pid %u inode %llu: %zu symbols%s, debug info: %s, %zu bytes", pid,
		          (unsigned long long)e->inode, o->file.syms.nsyms,
		          o->file.has_go ? ", Go pclntab" : "",
		          o->file.dwarf ? ember_debug_source_name(o->file.dwarf_source) : "none",
		          o->bytes);
	return o;
}

void ember_symbolizer_preload(struct ember_symbolizer *s, uint32_t pid,
                              const struct ember_map_entry *e, int fd, uint64_t now_ns)
{
	struct ember_obj_key key = {makedev(e->dev_major, e->dev_minor), e->inode};
	struct debug_ctx ctx = {s->broker, pid, e->start};
	struct ember_debug_opener op = {&ctx, open_by_build_id, open_by_debuglink};
	struct ember_obj *o;

	if (s->shedding)
		return; /* over the memory budget: no file not yet read is read */
	o = ember_objcache_get(&s->objs, &key, pid, now_ns);
	if (!o || o->error)
		ember_objcache_load(&s->objs, &key, fd, pid, &op, now_ns);
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

static int symbolized_location(struct ember_symbolizer *s, uint32_t mapping, uint32_t kind,
                               uint64_t addr, const struct ember_sym_frames *frames, uint32_t *out)
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

/* The profile's mapping of map entry e, named name, of file obj (NULL: none read). */
static int profile_mapping(struct ember_symbolizer *s, const struct ember_map_entry *e,
                           const struct ember_obj *obj, const char *name, uint32_t *out)
{
	struct ember_mapping m = {.start = e->start, .limit = e->end, .file_offset = e->offset};
	int err;

	/*
	 * pprof opens the file of a mapping that says it has no functions, to
	 * symbolize it itself, and warns when it cannot. A file ember could not
	 * read (gone, not ELF, on a file system that stalled) is no better read by
	 * pprof later, which, without the build id, cannot even tell whether the
	 * file at that path on its host is the one that ran: ember's names stand.
	 */
	m.has_functions = obj || e->kind == EMBER_MAP_FILE;
	err = ember_profile_intern_cstr(s->profile, name, &m.filename);
	if (!err && obj)
		err = mapping_identity(s, obj, &m);
	/* Where the mapping starts in the file's ELF addresses: OTLP's address space. */
	if (!err && obj && !ember_elf_mapping_vaddr(&obj->file.syms, e->offset, &m.file_vaddr))
		m.has_file_vaddr = true;
	if (!err && e->kind == EMBER_MAP_VDSO)
		err = vdso_identity(s, &m);
	return err ? err : ember_profile_add_mapping(s->profile, &m, out);
}

static int user_location(struct ember_symbolizer *s, struct ember_process *proc, uint64_t addr,
                         bool is_return, uint64_t now_ns, uint32_t *out)
{
	const struct ember_map_entry *e;
	struct ember_obj *obj = NULL;
	enum ember_frame_kind kind = EMBER_FRAME_NATIVE;
	enum ember_sym_origin origin;
	uint64_t lookup = is_return ? addr - 1 : addr, vaddr;
	uint32_t place; /* the kind, and whether a call: another location than a stop there */
	struct ember_mapping_memo *memo;
	char name_buf[256];
	const char *name;
	uint32_t mapping;
	int err;

	e = ember_process_find_mapping_at(&s->procs, proc, addr, s->sample_time_ns, now_ns);
	if (!e) {
		stalled_frame(s, proc->maps_error);
		s->unknown_frames++;
		return ember_profile_add_location(s->profile, EMBER_NONE, EMBER_FRAME_UNKNOWN, addr,
		                                  NULL, 0, out);
	}
	if (e->kind == EMBER_MAP_FILE && e->inode && !e->deleted) {
		obj = mapped_object(s, proc->pid, e, now_ns);
		s->shed_frames += !obj && s->shedding;
	}
	if (obj && obj->error) {
		stalled_frame(s, obj->error);
		s->shed_frames += obj->error == -ENOBUFS; /* not read: it did not fit the budget */
		obj = NULL;
	}
	name = mapping_name(proc, e, name_buf, sizeof(name_buf));
	memo = &s->mapping_memo[(proc->pid ^ (e->start >> 12)) % EMBER_MAPPING_MEMOS];
	if (memo->valid && memo->pid == proc->pid && memo->obj == obj &&
	    memo->objcache_changes == ember_objcache_changes(&s->objs) &&
	    !memcmp(&memo->entry, e, sizeof(*e)) &&
	    !strcmp(ember_profile_str(s->profile, memo->filename), name)) {
		mapping = memo->mapping;
		kind = memo->kind;
	} else {
		err = profile_mapping(s, e, obj, name, &mapping);
		if (err)
			return err;
		if (obj && obj->file.has_go)
			kind = EMBER_FRAME_GO;
		*memo = (struct ember_mapping_memo){
		    .entry = *e,
		    .obj = obj,
		    .objcache_changes = ember_objcache_changes(&s->objs),
		    .pid = proc->pid,
		    .mapping = mapping,
		    .filename = ember_profile_mapping(s->profile, mapping)->filename,
		    .kind = (uint8_t)kind,
		    .valid = true,
		};
	}
	place = kind | (is_return ? EMBER_LOCATION_CALL : 0);
	if (!ember_profile_find_location(s->profile, mapping, place, addr, out)) {
		err = jit_name(s, proc, e, mapping, addr, lookup, now_ns, out, out);
		return err < 0 ? err : 0;
	}
	if (obj &&
	    !ember_elf_offset_to_vaddr(&obj->file.syms, lookup - e->start + e->offset, &vaddr)) {
		origin = ember_objcache_lookup(&s->objs, obj, vaddr, &s->frames_buf);
		if (origin != EMBER_SYM_NONE) {
			s->frames_by_origin[origin]++;
			return symbolized_location(s, mapping, place, addr, &s->frames_buf, out);
		}
	}
	err = jit_name(s, proc, e, mapping, addr, lookup, now_ns, NULL, out);
	if (err)
		return err < 0 ? err : 0;
	s->unsymbolized_frames++;
	return ember_profile_add_location(s->profile, mapping, place, addr, NULL, 0, out);
}

/* One line of an interpreted frame: its function (name, file, first line) and line. */
static int interp_line(struct ember_symbolizer *s, const char *name, const char *file,
                       int32_t first, int32_t at, struct ember_line *out)
{
	struct ember_function fn = {0};
	int err = ember_profile_intern_cstr(s->profile, name ? name : "[unknown]", &fn.name);

	if (!err)
		err = intern_opt(s->profile, file, &fn.filename);
	if (err)
		return err;
	fn.system_name = fn.name;
	fn.start_line = first;
	out->line = at;
	return ember_profile_add_function(s->profile, &fn, &out->function);
}

/*
 * An interpreted frame (words w0, w1): named by its runtime's reader, with its line in the
 * function's file; an unnamed one stays a frame of its kind, [unknown].
 */
static int interp_location(struct ember_symbolizer *s, uint32_t pid, uint64_t w0, uint64_t w1,
                           uint64_t now_ns, uint32_t *out)
{
	struct ember_line lines[EMBER_INTERP_MAX_INLINED + 1] = {0};
	struct ember_interp_frame f;
	enum ember_frame_kind kind;
	uint32_t n;
	int err = 0;

	ember_interps_frame(s->interps, pid, w0, w1, now_ns, &f);
	/* Markers of every reason share the addresses above the unwinder's, 256 a runtime. */
	if (f.marker)
		return named_location(s, EMBER_NONE, EMBER_FRAME_UNKNOWN,
		                      UINT64_MAX - 256 * (uint64_t)f.runtime - (w0 & 0xff),
		                      f.marker, out);
	kind = EMBER_FRAME_INTERP(f.runtime);
	/* Unnamed, a frame has a location apart: the reader may name it later (a structure
	 * found changed is read again at a later sample), and later samples get that name. */
	if (!f.name)
		return ember_profile_find_location(s->profile, EMBER_NONE, kind, ~f.key, out)
		           ? named_location(s, EMBER_NONE, kind, ~f.key, "[unknown]", out)
		           : 0;
	if (!ember_profile_find_location(s->profile, EMBER_NONE, kind, f.key, out))
		return 0;
	/* Inlined frames first (innermost), then the frame itself: one location's lines. */
	n = f.ninlined < EMBER_INTERP_MAX_INLINED ? f.ninlined : EMBER_INTERP_MAX_INLINED;
	for (uint32_t i = 0; i <= n && !err; i++) {
		const struct ember_interp_inlined in =
		    i < n ? f.inlined[i] : (struct ember_interp_inlined){f.name, f.file, f.line};

		err =
		    interp_line(s, in.name, in.file, i < n ? 0 : f.firstlineno, in.line, &lines[i]);
	}
	if (err)
		return err;
	return ember_profile_add_location(s->profile, EMBER_NONE, kind, f.key, lines, n + 1, out);
}

static int marker_location(struct ember_symbolizer *s, uint32_t reason, uint32_t *out)
{
	uint64_t addr = UINT64_MAX - reason; /* no real frame has this address */

	if (!ember_profile_find_location(s->profile, EMBER_NONE, EMBER_FRAME_UNKNOWN, addr, out))
		return 0;
	return named_location(s, EMBER_NONE, EMBER_FRAME_UNKNOWN, addr,
	                      ember_unwind_stop_marker(reason), out);
}

/*
 * What the process says of itself (OTEP 4719), read from its memory through the broker's
 * descriptor once per profile: its resource's attributes, as lines interned in *out (0: none).
 * A context that is missing, torn, too large or no ProcessContext is counted, never fatal.
 */
static int read_context(struct ember_symbolizer *s, struct ember_process *proc, uint64_t now_ns,
                        uint32_t *out)
{
	uint64_t addr = ember_process_context_addr(proc);
	struct ember_process_context *c;
	struct ember_interp_mem mem;
	int err;

	*out = 0;
	if (!addr)
		return 0;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	ember_interp_mem_init(&mem, proc->pid);
	err = ember_interp_mem_open(&mem, s->broker, now_ns);
	if (!err)
		err = ember_process_context_read(ember_interp_mem_read, &mem, addr, c);
	ember_interp_mem_close(&mem);
	if (!err) {
		s->contexts_read++;
		s->context_attrs_dropped += c->dropped;
		if (c->resource[0])
			err = ember_profile_intern_cstr(s->profile, c->resource, out);
	} else if (err != -ENOMEM) {
		s->contexts_refused++;
		err = 0; /* the process keeps ember's names */
	}
	free(c);
	return err;
}

/*
 * The span the sampled thread ran (its thread context), as the string *link (0: none). A
 * trace id of zeros is no trace (W3C): counted, left out.
 */
static int note_link(struct ember_symbolizer *s, const struct ember_sample_event *sample,
                     uint32_t *link)
{
	static const uint8_t zero[sizeof(sample->trace_id)];
	uint8_t ids[EMBER_LINK_HEX / 2];
	char hex[EMBER_LINK_HEX + 1];

	_Static_assert(sizeof(ids) == sizeof(sample->trace_id) + sizeof(sample->span_id),
	               "the link's hex is both ids");
	*link = 0;
	if (!memcmp(sample->trace_id, zero, sizeof(zero))) {
		s->links_refused++;
		return 0;
	}
	memcpy(ids, sample->trace_id, sizeof(sample->trace_id));
	memcpy(ids + sizeof(sample->trace_id), sample->span_id, sizeof(sample->span_id));
	ember_hex(ids, sizeof(ids), hex);
	s->samples_linked++;
	return ember_profile_intern_cstr(s->profile, hex, link);
}

/* What the sampled thread was doing for its program: its span's link and attributes, or its
 * goroutine's labels. */
static int note_span(struct ember_symbolizer *s, const struct ember_sample_event *sample,
                     struct ember_sample_key *key, uint64_t now_ns)
{
	const char *labels = NULL;
	int err;

	if (sample->stack_flags & EMBER_STACK_TRACE_CTX) {
		if ((err = note_link(s, sample, &key->link)) || !key->link || !sample->ctx_record ||
		    !s->interps)
			return err;
		labels = ember_interps_span_attrs(s->interps, sample->tgid, sample->ctx_record,
		                                  sample->trace_id, sample->span_id, now_ns);
	} else if ((sample->stack_flags & EMBER_STACK_GO_LABELS) && s->interps) {
		uint64_t head[2];

		memcpy(head, sample->go_labels_head, sizeof(head));
		labels = ember_interps_go_labels(s->interps, sample->tgid, sample->go_labels, head,
		                                 now_ns);
	}
	if (!labels || !labels[0])
		return 0;
	s->samples_labelled++;
	return ember_profile_intern_cstr(s->profile, labels, &key->labels);
}

/* Makes sure the current profile knows the facts about the sample's process. */
static int note_process_facts(struct ember_symbolizer *s, struct ember_process *proc,
                              uint64_t now_ns)
{
	const struct ember_process_attrs *known = ember_profile_find_process(s->profile, proc->pid);
	struct ember_process_attrs pa = {.pid = proc->pid};
	const char *exe_path, *container_id;
	int err = 0;

	/* Once per profile; again when a context appears later in the profile's time. */
	if (known && known->context_addr == ember_process_context_addr(proc))
		return 0;
	if (known) {
		pa = *known;
		pa.context_addr = ember_process_context_addr(proc);
		err = read_context(s, proc, now_ns, &pa.context);
		return err ? err : ember_profile_set_process(s->profile, &pa);
	}

	/* Not before the facts are in (the broker may have asked to come back later). */
	if (!ember_process_facts(&s->procs, proc, now_ns, &exe_path, &container_id))
		return 0;
	if (exe_path)
		err = ember_profile_intern_cstr(s->profile, exe_path, &pa.exe_path);
	if (!err && container_id[0])
		err = ember_profile_intern_cstr(s->profile, container_id, &pa.container_id);
	pa.context_addr = ember_process_context_addr(proc);
	if (!err)
		err = read_context(s, proc, now_ns, &pa.context);
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

	if (!s->ksyms_tried)
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

/*
 * A fast hash for the memo, not a keyed one: its slots hold one key each, compared whole,
 * so inputs chosen to collide cost a profiled process no more than a miss each (the stack
 * named frame by frame), never a longer search.
 */
static uint64_t memo_hash(const uint64_t *words, uint32_t n)
{
	uint64_t h = n;

	for (uint32_t i = 0; i < n; i++) {
		h = (h ^ words[i]) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	return h;
}

/* A kernel frame's location, or a user frame's in proc, named or as remembered. */
static int frame_location(struct ember_symbolizer *s, struct ember_process *proc, uint64_t addr,
                          bool is_return, uint64_t now_ns, uint32_t *out)
{
	uint64_t key[4] = {proc ? proc->pid : UINT64_MAX,
	                   proc ? ember_process_maps_generation(proc) : 0, addr, is_return};
	uint64_t unnamed_before = s->unknown_frames + s->shed_frames;
	bool stalled = s->sample_stalled, unsettled = s->sample_unsettled;
	struct ember_frame_memo *m = NULL;
	int err;

	if (!s->frame_memo)
		s->frame_memo = calloc(EMBER_FRAME_MEMOS, sizeof(*s->frame_memo));
	if (s->frame_memo && (!proc || key[1])) {
		m = &s->frame_memo[memo_hash(key, 4) % EMBER_FRAME_MEMOS];
		if (m->valid && !memcmp(m->key, key, sizeof(key))) {
			s->frame_memo_hits++;
			*out = m->location;
			return 0;
		}
	}
	s->sample_stalled = s->sample_unsettled = false;
	err = proc ? user_location(s, proc, addr, is_return, now_ns, out)
	           : kernel_location(s, addr, is_return, now_ns, out);
	/* Kept only when named for good: not for want of maps, a file or budget, nor waiting
	 * for a perf map; under the maps it was named with (read for it, perhaps). */
	if (!err && s->frame_memo && !s->sample_stalled && !s->sample_unsettled &&
	    s->unknown_frames + s->shed_frames == unnamed_before &&
	    (!proc || ember_process_maps_generation(proc))) {
		/* The maps may have been read for it: its slot is the new generation's. */
		if (!m || (proc && key[1] != ember_process_maps_generation(proc))) {
			key[1] = proc ? ember_process_maps_generation(proc) : 0;
			m = &s->frame_memo[memo_hash(key, 4) % EMBER_FRAME_MEMOS];
		}
		memcpy(m->key, key, sizeof(key));
		m->location = *out;
		m->valid = true;
	}
	s->sample_stalled |= stalled;
	s->sample_unsettled |= unsettled;
	return err;
}

/* The memo's slot for the sample's raw stack, its key in s->stack_key (*nwords words) and
 * its hash; NULL when no memo may hold it. */
static struct ember_stack_memo *stack_memo(struct ember_symbolizer *s,
                                           const struct ember_sample_event *sample,
                                           const uint64_t *frames, uint64_t generation,
                                           uint32_t *nwords, uint64_t *hash)
{
	uint32_t n = sample->kstack_len + sample->ustack_len;

	if (!generation || (sample->stack_flags & EMBER_STACK_INTERP) ||
	    n > EMBER_STACK_KEY_WORDS - 3)
		return NULL;
	s->stack_key[0] = (uint64_t)sample->tgid << 32 | sample->kind;
	s->stack_key[1] = generation;
	s->stack_key[2] = (uint64_t)sample->stack_flags << 32 | (uint32_t)sample->kstack_len << 16 |
	                  sample->ustack_len;
	memcpy(&s->stack_key[3], frames, n * sizeof(*frames));
	*nwords = n + 3;
	*hash = memo_hash(s->stack_key, *nwords);
	return &s->stack_memo[*hash % EMBER_STACK_MEMOS];
}

static bool stack_memo_holds(const struct ember_stack_memo *m, const uint64_t *key, uint32_t n,
                             uint64_t hash)
{
	return m->nwords == n && m->hash == hash && !memcmp(m->words, key, n * sizeof(*key));
}

/* Remembers the stack just named, unless a frame of it was left unnamed for want of maps, a
 * file or budget (unknown, shed and stalled frames since unnamed_before). The counters of
 * frames by source count new locations only: a stack named again would add nothing. */
static bool remember_stack(struct ember_symbolizer *s, struct ember_stack_memo *m, uint32_t n,
                           uint64_t hash, uint32_t stack, uint32_t depth, uint64_t unnamed_before)
{
	if (s->sample_stalled || s->sample_unsettled ||
	    s->unknown_frames + s->shed_frames != unnamed_before)
		return false;
	if (m->capacity < n) {
		uint64_t *words = realloc(m->words, n * sizeof(*words));

		if (!words)
			return false; /* a memo, not a need */
		m->words = words;
		m->capacity = n;
	}
	memcpy(m->words, s->stack_key, n * sizeof(*m->words));
	m->nwords = n;
	m->hash = hash;
	m->stack = stack;
	m->depth = depth;
	m->sample = EMBER_NONE;
	return true;
}

/* The sample's stack in the profile, frame by frame, or as remembered. */
static int sample_stack(struct ember_symbolizer *s, const struct ember_sample_event *sample,
                        struct ember_process *proc, const uint64_t *frames, uint64_t now_ns,
                        uint32_t *out, struct ember_stack_memo **held)
{
	uint32_t depth = 0, kn = sample->kstack_len, un = sample->ustack_len, first = 0, n = 0;
	uint64_t generation = ember_process_maps_generation(proc), hash = 0;
	uint64_t unnamed_before = s->unknown_frames + s->shed_frames;
	uint64_t sets = ember_processes_maps_sets(&s->procs);
	struct ember_stack_memo *m = stack_memo(s, sample, frames, generation, &n, &hash);
	int err;

	if (m && stack_memo_holds(m, s->stack_key, n, hash)) {
		s->stack_memo_hits++;
		s->frames += m->depth;
		*out = m->stack;
		*held = m;
		return 0;
	}
	if (sample->kind == EMBER_EV_OFF_CPU)
		first = probe_frames(s, frames, kn, now_ns);
	for (uint32_t i = first; i < kn; i++) {
		err = frame_location(s, NULL, frames[i], i > 0, now_ns, &s->stack_buf[depth++]);
		if (err)
			return err;
	}
	for (uint32_t i = 0, native = 0; i < un; i++) {
		const uint64_t *w = &frames[kn + i];

		/* Two words: an interpreted frame or marker; only walker samples have them. */
		if ((sample->stack_flags & EMBER_STACK_INTERP) && ember_interp_word_runtime(w[0]) &&
		    i + 1 < un) {
			err = interp_location(s, sample->tgid, w[0], w[1], now_ns,
			                      &s->stack_buf[depth++]);
			i++;
		} else {
			err = frame_location(s, proc, w[0], native++ > 0, now_ns,
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
	err = ember_profile_add_stack(s->profile, s->stack_buf, depth, out);
	if (err)
		return err;
	/* Its process's maps read for its first frame: remembered under them. Maps read again
	 * for a later frame (a new mapping) named those before it with the old: not kept. */
	sets = ember_processes_maps_sets(&s->procs) - sets;
	if (!generation && sets == 1)
		m = stack_memo(s, sample, frames, ember_process_maps_generation(proc), &n, &hash);
	else if (sets)
		m = NULL;
	if (m && remember_stack(s, m, n, hash, *out, depth, unnamed_before))
		*held = m;
	return 0;
}

/* The profile's string of a process's or thread's name (EMBER_COMM_LEN bytes, its end
 * NUL-padded or not). */
static int intern_comm(struct ember_symbolizer *s, const char *comm, uint32_t *out)
{
	char name[EMBER_COMM_LEN + 1] = {0};
	struct ember_comm_memo *m;
	uint64_t words[2];
	int err;

	memcpy(name, comm, strnlen(comm, EMBER_COMM_LEN));
	memcpy(words, name, sizeof(words));
	m = &s->comm_memo[memo_hash(words, 2) % EMBER_COMM_MEMOS];
	if (m->valid && !memcmp(m->name, name, EMBER_COMM_LEN)) {
		*out = m->str;
		return 0;
	}
	err = ember_profile_intern_cstr(s->profile, name, out);
	if (!err) {
		*m = (struct ember_comm_memo){.str = *out, .valid = true};
		memcpy(m->name, name, EMBER_COMM_LEN);
	}
	return err;
}

int ember_symbolizer_add_sample(struct ember_symbolizer *s, const struct ember_sample_event *sample,
                                const uint64_t *frames, uint64_t now_ns)
{
	struct ember_sample_key key = {.cpu = sample->cpu, .pid = sample->tgid, .tid = sample->tid};
	struct ember_process *proc = ember_processes_get(&s->procs, sample->tgid, now_ns);
	struct ember_stack_memo *memo = NULL;
	int err;

	if (!proc)
		return -ENOMEM;
	ember_process_learn_comm(proc, sample->comm, sample->tid == sample->tgid);
	s->samples++;
	s->sample_stalled = s->sample_unsettled = false;
	s->sample_time_ns = sample->time_ns;
	err = sample_stack(s, sample, proc, frames, now_ns, &key.stack, &memo);
	if (err)
		return err;
	s->samples_stalled += s->sample_stalled;
	/* Less and less often (it has its own clock): a context published since its maps were
	 * read, for its resource and its threads' spans. */
	if (s->unwind && ember_process_context_look_due(proc, now_ns) &&
	    ember_unwind_reread(s->unwind, proc->pid, now_ns)) {
		s->rereads_queued = true;
		s->context_looks++;
	}
	if (s->want_process_facts && (err = note_process_facts(s, proc, now_ns)))
		return err;
	err = intern_comm(s, sample->comm, &key.thread_name);
	if (!err)
		err = intern_comm(s, proc->comm, &key.comm);
	if (!err)
		err = note_span(s, sample, &key, now_ns);
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
	return ember_profile_add_sample_hinted(
	    s->profile, &key, 1, sample->time_ns + (uint64_t)s->monotonic_to_realtime_ns,
	    memo ? &memo->sample : NULL);
}

void ember_symbolizer_on_exec(struct ember_symbolizer *s, uint32_t pid, uint64_t exec_ns)
{
	ember_processes_on_exec(&s->procs, pid, exec_ns);
	ember_perf_maps_drop(&s->perf_maps, pid);
	if (s->interps)
		ember_interps_on_exec(s->interps, pid);
}

void ember_symbolizer_on_exit(struct ember_symbolizer *s, uint32_t pid, uint64_t now_ns)
{
	ember_processes_on_exit(&s->procs, pid, now_ns);
	ember_perf_maps_drop(&s->perf_maps, pid);
	if (s->interps)
		ember_interps_on_exit(s->interps, pid);
}

void ember_symbolizer_adopt_maps(struct ember_symbolizer *s, uint32_t pid, struct ember_maps *maps,
                                 uint64_t now_ns)
{
	ember_processes_adopt_maps(&s->procs, pid, maps, now_ns);
}

void ember_symbolizer_collector_memory(struct ember_symbolizer *s,
                                       const struct ember_rec_collector_memory *m)
{
	s->budget.collector_rss = m->rss_bytes;
	s->budget.collector_bpf_maps = m->bpf_map_bytes;
	s->maps_snapshots[0] = m->maps_snapshots_taken;
	s->maps_snapshots[1] = m->maps_snapshots_served;
	s->maps_snapshots[2] = m->maps_snapshots_dropped;
}

/* Lets the caches grow back towards their maximum while there is room. */
static void relax(struct ember_symbolizer *s, size_t rss)
{
	size_t limit = s->budget.limit, room = rss < limit ? limit - rss : 0;

	/* Work resumes with an eighth of the budget free, so that it does not flap. */
	if (s->shedding && room >= limit / 8) {
		s->shedding = false;
		log_info("memory: back within budget (%zu MiB resident): files are read again",
		         rss >> 20);
	}
	if (room > limit / 8) {
		ember_objcache_set_limit(&s->objs, ember_objcache_limit(&s->objs) + room / 2);
		if (s->unwind)
			ember_unwind_set_rows_limit(s->unwind,
			                            ember_unwind_rows_limit(s->unwind) + room / 4);
	}
}

static void set_room(struct ember_symbolizer *s, size_t rss, size_t exclude)
{
	size_t limit = s->budget.limit, used = rss > exclude ? rss - exclude : 0;
	size_t usable = EMBER_BUDGET_USABLE(limit), room = used < usable ? usable - used : 0;

	ember_objcache_set_room(&s->objs, room);
	/* A table built for the unwinder takes the same room (its rows, while they are
	 * built). */
	if (s->unwind)
		ember_unwind_set_build_bytes(s->unwind, room ? room : 1 /* the floor */);
}

/* Resident bytes the budget covers now. */
static size_t covered_rss(struct ember_symbolizer *s, size_t exclude)
{
	size_t rss = ember_mem_rss(&s->budget);

	return rss > exclude ? rss - exclude : 0;
}

/*
 * The caches keep an eighth of the budget free for a moment's work (a large
 * file parsed, a table built, an interval written), which the budget must
 * hold too: past EMBER_BUDGET_HIGH, memory goes back to the system, then
 * the caches shrink to EMBER_BUDGET_TARGET; past the budget itself, the
 * work is shed.
 */
#define EMBER_BUDGET_HIGH(limit)   ((limit) - (limit) / 16)
#define EMBER_BUDGET_TARGET(limit) ((limit) - (limit) / 8)

static void keep_budget(struct ember_symbolizer *s, size_t exclude, uint64_t now_ns)
{
	size_t limit = s->budget.limit, rss = covered_rss(s, exclude), over;
	size_t cache, rows, from_rows;

	if (rss <= EMBER_BUDGET_HIGH(limit)) {
		relax(s, rss);
		return;
	}
	s->budget_exceeded += rss > limit;
	ember_mem_release(&s->budget);
	rss = covered_rss(s, exclude);
	if (rss <= EMBER_BUDGET_HIGH(limit))
		return;
	over = rss - EMBER_BUDGET_TARGET(limit);
	/* The stack copies' rows and the object cache each give their share. */
	cache = ember_objcache_bytes(&s->objs);
	rows = s->unwind ? ember_unwind_rows_bytes(s->unwind) : 0;
	from_rows = rows ? (size_t)((double)over * rows / (double)(rows + cache)) : 0;
	if (s->unwind)
		from_rows = ember_unwind_set_rows_limit(s->unwind, rows - MIN(rows, from_rows));
	over -= MIN(over, from_rows);
	ember_objcache_set_limit(&s->objs, cache > over + EMBER_OBJCACHE_FLOOR_BYTES
	                                       ? cache - over
	                                       : EMBER_OBJCACHE_FLOOR_BYTES);
	if (cache < over + EMBER_OBJCACHE_FLOOR_BYTES)
		ember_processes_shrink(&s->procs, over + EMBER_OBJCACHE_FLOOR_BYTES - cache,
		                       now_ns);
	ember_mem_release(&s->budget);
	rss = ember_mem_rss(&s->budget);
	over = ember_mem_over(&s->budget, rss, exclude);
	if (over && !s->shedding) {
		s->shedding = true;
		s->budget_shed_periods++;
		log_warn(
		    "memory: %zu MiB resident, %zu MiB over the budget with the caches shrunk: "
		    "files not yet read stay unsymbolized until there is room (raise "
		    "--memory-budget to avoid this)",
		    rss >> 20, over >> 20);
	}
}

void ember_symbolizer_tick(struct ember_symbolizer *s, uint64_t now_ns, size_t exclude)
{
	if (now_ns - s->last_budget_check_ns < EMBER_BUDGET_CHECK_NS) {
		/* Met within the moment, not a second later: a large file parsed, many tables
		 * built. */
		size_t rss;

		if (s->shedding || now_ns - s->last_budget_peek_ns < EMBER_BUDGET_PEEK_NS)
			return;
		s->last_budget_peek_ns = now_ns;
		rss = ember_mem_rss(&s->budget);
		/* Near the budget, the pages lookups read of cached files go back first. */
		if (rss > exclude && rss - exclude > s->budget.limit - s->budget.limit / 8) {
			ember_objcache_release_pages(&s->objs);
			rss = ember_mem_rss(&s->budget);
		}
		set_room(s, rss, exclude);
		if (rss <= exclude || rss - exclude <= EMBER_BUDGET_HIGH(s->budget.limit))
			return;
		s->budget_peeks_over++;
	}
	s->last_budget_check_ns = now_ns;
	ember_processes_sweep(&s->procs, now_ns);
	ember_perf_maps_sweep(&s->perf_maps, now_ns);
	/* Cached files are mapped: what lookups read of them goes back each second. */
	ember_objcache_release_pages(&s->objs);
	keep_budget(s, exclude, now_ns);
	set_room(s, ember_mem_rss(&s->budget), exclude);
}

bool ember_symbolizer_shedding(const struct ember_symbolizer *s)
{
	return s->shedding;
}

void ember_symbolizer_release_memory(struct ember_symbolizer *s)
{
	ember_mem_release(&s->budget);
}

uint64_t ember_symbolizer_parse_errors(const struct ember_symbolizer *s)
{
	return ember_objcache_parse_errors(&s->objs);
}

void ember_symbolizer_report_stats(struct ember_symbolizer *s, struct ember_profile *p)
{
	/* The parts below the profile model report through a sink into p. */
	const struct ember_stat_sink sink = EMBER_PROFILE_STAT_SINK(p);
	struct ember_mem_split m;

	ember_profile_stat_set(p, "symbolizer.frames", s->frames);
	ember_profile_stat_set(p, "symbolizer.frames_unknown_mapping", s->unknown_frames);
	ember_profile_stat_set(p, "symbolizer.frames_unsymbolized", s->unsymbolized_frames);
	ember_profile_stat_set(p, "symbolizer.frames_stalled", s->frames_stalled);
	ember_profile_stat_set(p, "symbolizer.samples_stalled", s->samples_stalled);
	ember_profile_stat_set(p, "symbolizer.frames_shed", s->shed_frames);
	ember_profile_stat_set(p, "symbolizer.frames_symtab",
	                       s->frames_by_origin[EMBER_SYM_SYMTAB]);
	ember_profile_stat_set(p, "symbolizer.frames_dwarf", s->frames_by_origin[EMBER_SYM_DWARF]);
	ember_profile_stat_set(p, "symbolizer.frames_go", s->frames_by_origin[EMBER_SYM_GO]);
	ember_profile_stat_set(p, "symbolizer.inline_frames", s->inline_frames);
	ember_profile_stat_set(p, "symbolizer.samples_stack_remembered", s->stack_memo_hits);
	ember_profile_stat_set(p, "symbolizer.frames_remembered", s->frame_memo_hits);
	ember_profile_stat_set(p, "symbolizer.process_contexts", s->contexts_read);
	ember_profile_stat_set(p, "symbolizer.process_contexts_refused", s->contexts_refused);
	ember_profile_stat_set(p, "symbolizer.samples_linked", s->samples_linked);
	ember_profile_stat_set(p, "symbolizer.samples_labelled", s->samples_labelled);
	ember_profile_stat_set(p, "symbolizer.process_context_looks", s->context_looks);
	ember_profile_stat_set(p, "symbolizer.links_refused", s->links_refused);
	ember_profile_stat_set(p, "symbolizer.process_context_attrs_dropped",
	                       s->context_attrs_dropped);
	ember_profile_stat_set(p, "symbolizer.parse_errors", ember_symbolizer_parse_errors(s));
	if (p->off_cpu) {
		ember_profile_stat_set(p, "off_cpu.recorded", s->off_cpu_samples);
		ember_profile_stat_set(p, "off_cpu.recorded_ns", s->off_cpu_ns);
	}
	if (s->interps)
		ember_interps_stats(s->interps, &sink);
	ember_profile_stat_set(p, "maps.snapshots_taken", s->maps_snapshots[0]);
	ember_profile_stat_set(p, "maps.snapshots_served", s->maps_snapshots[1]);
	ember_profile_stat_set(p, "maps.snapshots_dropped", s->maps_snapshots[2]);
	ember_profile_stat_set(p, "memory.budget_exceeded", s->budget_exceeded);
	ember_profile_stat_set(p, "memory.shed_periods", s->budget_shed_periods);
	ember_profile_stat_set(p, "memory.over_between_checks", s->budget_peeks_over);
	ember_objcache_report_stats(&s->objs, &sink);
	ember_kallsyms_report_stats(&s->ksyms, &sink);
	ember_perf_maps_report_stats(&s->perf_maps, &sink);
	ember_processes_report_stats(&s->procs, &sink, s->want_process_facts);
	ember_broker_client_report_stats(s->broker, &sink);
	ember_mem_measure(&s->budget, &m);
	ember_mem_report_stats(&s->budget, &m, &sink);
}

void ember_symbolizer_memory_line(struct ember_symbolizer *s, char *buf, size_t size)
{
	struct ember_mem_split m;

	ember_mem_measure(&s->budget, &m);
	ember_mem_format(&s->budget, &m, buf, size);
}
