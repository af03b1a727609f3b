// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/jvm.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/jvm.h"
#include "shared/hash.h"
#include "shared/log.h"
#include "symbolizer/interp/interp_cache.h"
#include "symbolizer/interp/interp_files.h"
#include "symbolizer/interp/interp_mem.h"
#include "symbolizer/interp/interp_procs.h"
#include "symbolizer/interp/jvm_elf.h"
#include "symbolizer/interp/jvm_method.h"
#include "symbolizer/interp/jvm_nmethod.h"

#define ADDR_MASK ((1ull << EMBER_JVM_ADDR_BITS) - 1)
/* What a cached value is, in its key's top bits (addresses are below 1 << 48). */
#define KEY_METHOD  (1ull << 56) /* an interpreted frame's Method, by the walker's checksum */
#define KEY_SCOPE   (2ull << 56) /* a Method an nmethod's debug information names */
#define KEY_NMETHOD (3ull << 56) /* an nmethod, by its compile id */
#define KEY_STUB    (4ull << 56) /* a stub's blob, by its name's first bytes */

/* Counters for the statistics (jvm.*). */
struct ember_jvm_stats {
	uint64_t frames, frames_named, frames_interpreted, frames_compiled, frames_stub;
	uint64_t frames_inlined; /* frames inlined into compiled ones, named with them */
	uint64_t frames_stale, frames_unreadable;
	uint64_t markers_truncated, markers_unreadable;
	uint64_t reads, read_errors;
};

struct ember_jvm {
	struct ember_broker_client *broker;
	struct ember_hash_key hash_key;
	struct ember_interp_files files; /* struct ember_jvm_elf of each file */
	struct ember_interp_procs procs; /* struct jvm_process, by pid */
	struct ember_interp_cache cache; /* struct jvm_value, by (pid, what, cookie) */
	struct ember_jvm_stats stats;
	struct ember_interp_inlined inlined[EMBER_INTERP_MAX_INLINED]; /* the last frame's */
	bool signatures; /* methods named with their parameter types (--signatures) */
};

struct jvm_process {
	struct ember_interp_proc proc; /* pid, row sent, its memory */
	struct ember_jvm_proc row;
	struct ember_jvm_vm vm;
	bool have_vm;
	uint64_t retry_ns; /* a VM still starting is read again from then */
};

/* A Method, an nmethod or a stub read, or the failure to read it (error). */
struct jvm_value {
	int error; /* -ESTALE: what is there now is another one; else why it was not read */
	struct ember_jvm_method m;
	char *name; /* a Method's "pkg.Class.method"; a stub's name */
	struct ember_jvm_nmethod nm;
};

static int read_file_facts(int fd, const char *path, void *facts)
{
	(void)path;
	return ember_jvm_elf_read(fd, facts);
}

static void jvm_free(void *state);
static void release_value(void *value);

static int jvm_init(void **state, uint32_t flags, struct ember_broker_client *broker)
{
	struct ember_jvm *j = calloc(1, sizeof(*j));
	int err;

	if (!j)
		return -ENOMEM;
	*state = j;
	j->broker = broker;
	j->signatures = flags & EMBER_INTERP_SIGNATURES;
	err = ember_hash_key_init(&j->hash_key);
	if (!err)
		err = ember_interp_files_init(&j->files, sizeof(struct ember_jvm_elf),
		                              EMBER_JVM_MAX_FILES, read_file_facts,
		                              EMBER_JVM_FILE_RETRY_NS);
	if (!err)
		err = ember_interp_procs_init(&j->procs, sizeof(struct jvm_process),
		                              EMBER_JVM_MAX_TRACKED, broker, EMBER_RUNTIME_JVM,
		                              "JVM");
	if (!err)
		err = ember_interp_cache_init(&j->cache, sizeof(struct jvm_value),
		                              EMBER_JVM_CACHE_ENTRIES, EMBER_JVM_CACHE_BYTES,
		                              release_value);
	if (err) {
		jvm_free(j);
		*state = NULL;
	}
	return err;
}

static void release_value(void *value)
{
	struct jvm_value *v = value;

	ember_jvm_method_free(&v->m);
	ember_jvm_nmethod_free(&v->nm);
	free(v->name);
	v->name = NULL;
}

static void jvm_free(void *state)
{
	struct ember_jvm *j = state;

	ember_interp_cache_free(&j->cache);
	ember_interp_files_free(&j->files);
	ember_interp_procs_free(&j->procs);
	free(j);
}

/* ---- detection ---- */

static bool is_libjvm(const struct ember_maps *maps, const struct ember_map_entry *e)
{
	const char *path = ember_maps_path(maps, e), *base = strrchr(path, '/');

	return !strcmp(base ? base + 1 : path, "libjvm.so");
}

/* Whether each offset the walker reads in a blob lies in its window. */
static bool in_window(const struct ember_jvm_proc *r)
{
	const uint16_t at[] = {
	    r->blob_name,     r->blob_frame_complete, r->blob_frame_size,   r->blob_code_begin,
	    r->blob_code_end, r->nm_compile_id,       r->nm_orig_pc_offset, r->nm_deopt};

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		if (at[i] + 8u > EMBER_JVM_BLOB_WINDOW)
			return false;
	return true;
}

/* The walker's row from the VM's description: 0, or -ENOTSUP. */
static int fill_row(struct ember_jvm_proc *r, const struct ember_jvm_vm *vm)
{
	bool offsets = vm->blob_code_offset != EMBER_JVM_ABSENT;

	memset(r, 0, sizeof(*r));
	for (uint32_t i = 0; i < vm->nheaps && i < EMBER_JVM_HEAPS; i++) {
		if (vm->heaps[i].log2_segment != vm->heaps[0].log2_segment)
			return -ENOTSUP;
		r->heap_start[i] = vm->heaps[i].low;
		r->heap_end[i] = vm->heaps[i].high;
		r->segmap[i] = vm->heaps[i].segmap;
	}
	r->segment_shift = (uint8_t)vm->heaps[0].log2_segment;
	r->heap_block = (uint8_t)vm->heap_block_size;
	r->code_is_offset = offsets;
	r->complete_width = offsets ? 2 : 4; /* JDK 23 made it an int16 with the offsets */
	r->deopt_is_offset = vm->nm_deopt_offset != EMBER_JVM_ABSENT;
	r->version = vm->version[0] > 255 ? 255 : (uint8_t)vm->version[0];
	r->blob_name = (uint16_t)vm->blob_name;
	r->blob_frame_complete = (uint16_t)vm->blob_frame_complete;
	r->blob_frame_size = (uint16_t)vm->blob_frame_size;
	r->blob_code_begin = (uint16_t)(offsets ? vm->blob_code_offset : vm->blob_code_begin);
	r->blob_code_end = (uint16_t)(offsets ? vm->blob_data_offset : vm->blob_code_end);
	r->nm_compile_id = (uint16_t)vm->nm_compile_id;
	r->nm_orig_pc_offset = (uint16_t)vm->nm_orig_pc_offset;
	r->nm_deopt = (uint16_t)(r->deopt_is_offset ? vm->nm_deopt_offset : vm->nm_deopt_begin);
	r->method_const_method = (uint16_t)vm->method_const_method;
	r->const_method_size = (uint16_t)vm->cm_size_of;
	return vm->nheaps && in_window(r) ? 0 : -ENOTSUP;
}

/* libjvm's facts (a copy) and its mapping among maps; false without one. */
static bool find_libjvm(struct ember_jvm *j, uint32_t pid, const struct ember_maps *maps,
                        uint64_t now_ns, struct ember_jvm_elf *elf,
                        const struct ember_map_entry **map)
{
	for (size_t i = 0; i < maps->count; i++) {
		const struct ember_map_entry *e = &maps->entries[i];
		const struct ember_jvm_elf *f;

		if (e->kind != EMBER_MAP_FILE || !e->inode || e->deleted ||
		    !(e->perms & EMBER_MAP_X) || !is_libjvm(maps, e) ||
		    !(f = ember_interp_files_get(&j->files, j->broker, pid, maps, e, now_ns)))
			continue;
		*elf = *f;
		*map = e;
		return true;
	}
	return false;
}

/* Reads the VM and sends its row; a VM still starting is read again later. */
static void read_vm(struct ember_jvm *j, struct jvm_process *p, const struct ember_jvm_elf *elf,
                    uint64_t bias, uint64_t now_ns)
{
	char why[EMBER_JVM_WHY];
	struct ember_jvm_proc row;
	int err;

	if (!p->have_vm) {
		if (now_ns < p->retry_ns)
			return;
		err = ember_interp_mem_open(&p->proc.mem, j->broker, now_ns);
		if (err == -EAGAIN || err == -ETIMEDOUT)
			return; /* the broker is busy: the next reading of the maps tries again */
		if (!err)
			err = ember_jvm_vm_read(elf, bias, ember_interp_mem_read, &p->proc.mem,
			                        &p->vm, why);
		if (err == -EAGAIN || err == -EFAULT) {
			p->retry_ns = now_ns + EMBER_JVM_VM_RETRY_NS;
			return;
		}
		if (err) {
			ember_interp_procs_unsupported(
			    &j->procs, &p->proc,
			    err == -ENOTSUP ? why : "its memory cannot be read");
			return;
		}
		p->have_vm = true;
	}
	if (fill_row(&row, &p->vm)) {
		ember_interp_procs_unsupported(
		    &j->procs, &p->proc,
		    "its code blobs are laid out beyond what the walker reads");
		return;
	}
	if (ember_interp_procs_set_row(&j->procs, &p->proc, &p->row, &row, sizeof(row)))
		log_debug("pid %u: JVM %u.%u.%u (%s), %u code heaps", p->proc.pid, p->vm.version[0],
		          p->vm.version[1], p->vm.version[2], p->vm.release, p->vm.nheaps);
}

static void jvm_on_maps(void *state, uint32_t pid, const struct ember_maps *maps, uint64_t now_ns)
{
	struct ember_jvm *j = state;
	const struct ember_map_entry *map = NULL;
	struct ember_jvm_elf elf;
	struct jvm_process *p;
	bool found = find_libjvm(j, pid, maps, now_ns, &elf, &map);
	uint64_t bias = 0;

	p = ember_interp_procs_get(&j->procs, pid, found);
	if (!found || !p) {
		ember_interp_procs_remove_row(&j->procs, p ? &p->proc : NULL);
		return;
	}
	ember_interp_procs_seen(&j->procs, &p->proc);
	if (elf.kind != EMBER_JVM_ELF_HOTSPOT ||
	    !ember_elf_bias(elf.segs, elf.nsegs, map->offset, map->start, &bias)) {
		ember_interp_procs_unsupported(
		    &j->procs, &p->proc,
		    elf.kind != EMBER_JVM_ELF_HOTSPOT
			? (elf.why ? elf.why : "its libjvm.so is no HotSpot VM")
			: "its libjvm.so is mapped in an unexpected way");
		return;
	}
	read_vm(j, p, &elf, bias, now_ns);
}

static void jvm_on_exit_ahead(void *state, uint32_t pid)
{
	ember_interp_procs_exit_ahead(&((struct ember_jvm *)state)->procs, pid);
}

static void jvm_on_exec(void *state, uint32_t pid)
{
	struct ember_jvm *j = state;

	ember_interp_cache_drop_pid(&j->cache, pid);
	ember_interp_procs_exec(&j->procs, pid);
}

static void jvm_on_exit(void *state, uint32_t pid)
{
	struct ember_jvm *j = state;

	ember_interp_cache_drop_pid(&j->cache, pid);
	ember_interp_procs_exit(&j->procs, pid);
}

/* ---- frames ---- */

/* Reads what key names into v (a method's name with its parameter types if signatures): 0,
 * or why not (-ESTALE: something else is there now). */
static int read_value(struct jvm_process *p, const struct ember_interp_key *k, bool signatures,
                      struct jvm_value *v)
{
	uint64_t what = k->addr & ~ADDR_MASK, addr = k->addr & ADDR_MASK;
	char name[EMBER_JVM_MAX_STUB_NAME];
	int err;

	if (what == KEY_NMETHOD) {
		err = ember_jvm_nmethod_read(&p->vm, ember_interp_mem_read, &p->proc.mem, addr,
		                             &v->nm);
		return !err && v->nm.compile_id != k->checksum ? -ESTALE : err;
	}
	if (what == KEY_STUB) {
		uint8_t ptr[8];
		uint64_t at;

		if (ember_interp_mem_read(&p->proc.mem, addr + p->vm.blob_name, ptr, sizeof(ptr)))
			return -EFAULT;
		memcpy(&at, ptr, sizeof(at));
		if (!at || ember_interp_mem_read(&p->proc.mem, at, name, sizeof(name) - 1))
			return -EFAULT;
		name[sizeof(name) - 1] = '\0';
		if (strlen(name) < 4 || memcmp(name, &k->checksum, 4))
			return -ESTALE;
		for (char *c = name; *c; c++)
			if (*c < 0x20 || *c > 0x7e)
				*c = '?';
		v->name = malloc(strlen(name) + 3);
		if (!v->name)
			return -ENOMEM;
		sprintf(v->name, "[%s]", name);
		return 0;
	}
	err = ember_jvm_method_read(&p->vm, ember_interp_mem_read, &p->proc.mem, addr, &v->m);
	if (!err && what == KEY_METHOD &&
	    ember_interp_checksum(addr, v->m.const_method, EMBER_JVM_FRAME_INTERPRETED) !=
	        k->checksum)
		err = -ESTALE;
	if (!err) {
		char params[EMBER_JVM_MAX_PARAMS] = "";
		size_t len;

		/* A descriptor that does not parse, or is too long, leaves the name bare. */
		if (signatures &&
		    ember_jvm_signature_params(v->m.signature, params, sizeof(params)))
			params[0] = '\0';
		len = strlen(v->m.klass) + strlen(v->m.name) + strlen(params) + 2;
		v->name = malloc(len);
		if (!v->name)
			return -ENOMEM;
		snprintf(v->name, len, "%s.%s%s", v->m.klass, v->m.name, params);
	}
	return err;
}

/* The cached value of key, read on a miss; NULL without memory. */
static struct jvm_value *value_of(struct ember_jvm *j, struct jvm_process *p, uint64_t what,
                                  uint64_t addr, uint32_t cookie, uint64_t now_ns, bool warm)
{
	struct ember_interp_key key = {p->proc.pid, cookie, what | (addr & ADDR_MASK)};
	struct jvm_value v = {0}, *c = ember_interp_cache_find(&j->cache, &key, warm ? now_ns : 0);
	size_t bytes;
	int err;

	if (c || !p->have_vm)
		return c;
	err = ember_interp_mem_open(&p->proc.mem, j->broker, now_ns);
	if (err == -EAGAIN || err == -ETIMEDOUT)
		return NULL; /* the broker is busy: another sample tries again */
	j->stats.reads++;
	if (!err)
		err = read_value(p, &key, j->signatures, &v);
	if (err && err != -ESTALE)
		j->stats.read_errors++;
	if (err)
		release_value(&v);
	v.error = err;
	bytes = sizeof(v) + (v.name ? strlen(v.name) : 0) + v.m.lines_len +
	        (v.m.klass ? strlen(v.m.klass) + strlen(v.m.name) + strlen(v.m.signature) : 0) +
	        v.nm.npcs * v.nm.pc_size + v.nm.scopes_len + v.nm.nmetadata * 8;
	c = ember_interp_cache_add(&j->cache, &key, &v, bytes,
	                           ember_interp_cache_expiry(err, now_ns));
	if (!c)
		release_value(&v);
	return c;
}

/* The scopes a Java frame runs, innermost first: an interpreted frame's Method and bci; a
 * compiled frame's chain of inlined methods at its pc (jvm_nmethod.h), or without debug
 * information there the method compiled. How many; 0 when the nmethod is not read. */
static int scopes_of(struct ember_jvm *j, struct jvm_process *p, uint64_t w0, uint64_t w1,
                     uint64_t now_ns, bool warm, struct ember_jvm_scope *scope)
{
	uint64_t kind = w0 >> EMBER_JVM_ADDR_BITS & 0xf, addr = w0 & ADDR_MASK;
	struct jvm_value *nm;
	int n;

	if (kind == EMBER_JVM_FRAME_INTERPRETED) {
		scope[0].method = addr;
		scope[0].bci = (uint32_t)(w1 >> 32) == EMBER_JVM_NO_BCI ? -1 : (int32_t)(w1 >> 32);
		return 1;
	}
	nm = value_of(j, p, KEY_NMETHOD, addr, (uint32_t)w1, now_ns, warm);
	if (!nm || nm->error)
		return 0;
	n = ember_jvm_nmethod_scopes(&nm->nm, w1 >> 32, scope, EMBER_JVM_MAX_SCOPES);
	if (n <= 0) {
		scope[0] = (struct ember_jvm_scope){nm->nm.method, -1};
		n = 1;
	}
	return n;
}

/* The Method of scope i of a frame of kind (an interpreted frame's is checked against the
 * walker's checksum, cookie). */
static struct jvm_value *scope_method(struct ember_jvm *j, struct jvm_process *p, uint64_t kind,
                                      const struct ember_jvm_scope *scope, uint32_t cookie,
                                      uint64_t now_ns, bool warm)
{
	if (kind == EMBER_JVM_FRAME_INTERPRETED)
		return value_of(j, p, KEY_METHOD, scope->method, cookie, now_ns, warm);
	return value_of(j, p, KEY_SCOPE, scope->method, 0, now_ns, warm);
}

/* Names a stub: its blob's name. */
static void stub_frame(struct ember_jvm *j, struct jvm_process *p, uint32_t pid, uint64_t w0,
                       uint64_t w1, uint64_t now_ns, struct ember_interp_frame *out)
{
	struct jvm_value *v = value_of(j, p, KEY_STUB, w0 & ADDR_MASK, (uint32_t)w1, now_ns, false);
	uint64_t k[3] = {pid, EMBER_JVM_FRAME_STUB, w0};

	out->key = ember_hash(&j->hash_key, k, sizeof(k));
	if (!v || !v->name) {
		j->stats.frames_unreadable++;
		return;
	}
	j->stats.frames_named++;
	j->stats.frames_stub++;
	out->name = v->name;
}

static void jvm_frame(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns,
                      struct ember_interp_frame *out)
{
	struct ember_jvm *j = state;
	struct jvm_process *p = ember_interp_procs_get(&j->procs, pid, false);
	uint64_t kind = w0 >> EMBER_JVM_ADDR_BITS & 0xf,
		 k[2 + 2 * EMBER_JVM_MAX_SCOPES] = {pid, kind};
	struct ember_jvm_scope scope[EMBER_JVM_MAX_SCOPES];
	struct jvm_value *v = NULL;
	int n = 0, stale = 0;

	j->stats.frames++;
	if (p && kind == EMBER_JVM_FRAME_STUB) {
		stub_frame(j, p, pid, w0, w1, now_ns, out);
		return;
	}
	if (p)
		n = scopes_of(j, p, w0, w1, now_ns, false, scope);
	/* The outermost scope names the frame; the inner ones were inlined into it. */
	for (int i = n - 1; i >= 0; i--) {
		struct ember_interp_inlined in = {NULL, NULL, 0};
		int32_t line = 0;

		v = scope_method(j, p, kind, &scope[i], (uint32_t)w1, now_ns, false);
		stale |= v && v->error == -ESTALE;
		if (v && v->name) {
			in = (struct ember_interp_inlined){v->name, v->m.file, 0};
			if (scope[i].bci >= 0 &&
			    !ember_jvm_method_line(&p->vm, &v->m, (uint32_t)scope[i].bci, &line))
				in.line = line;
		}
		k[2 + 2 * i] = v && v->name ? v->m.const_method : scope[i].method;
		k[3 + 2 * i] = (uint64_t)in.line;
		if (i == n - 1) {
			out->name = in.name;
			out->file = in.file;
			out->line = in.line;
		} else if ((uint32_t)i < EMBER_INTERP_MAX_INLINED) {
			j->inlined[i] = in;
		}
	}
	out->inlined = n > 1 ? j->inlined : NULL;
	out->ninlined = n > 1 ? (uint32_t)(n - 1 < (int)EMBER_INTERP_MAX_INLINED
	                                       ? n - 1
	                                       : (int)EMBER_INTERP_MAX_INLINED)
	                      : 0;
	out->key = ember_hash(&j->hash_key, k, sizeof(uint64_t) * (2 + 2 * (size_t)(n ? n : 1)));
	if (!out->name) {
		if (n == 0) {
			k[2] = w0;
			k[3] = w1;
			out->key = ember_hash(&j->hash_key, k, 4 * sizeof(uint64_t));
		}
		out->inlined = NULL;
		out->ninlined = 0;
		if (stale)
			j->stats.frames_stale++;
		else
			j->stats.frames_unreadable++;
		return;
	}
	j->stats.frames_named++;
	j->stats.frames_inlined += out->ninlined;
	j->stats.frames_interpreted += kind == EMBER_JVM_FRAME_INTERPRETED;
	j->stats.frames_compiled +=
	    kind == EMBER_JVM_FRAME_COMPILED || kind == EMBER_JVM_FRAME_NATIVE;
}

/* Frames are read at sample time, while the Methods and compiled code are still there. */
static void jvm_warm(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns)
{
	struct ember_jvm *j = state;
	struct jvm_process *p = ember_interp_procs_get(&j->procs, pid, false);
	uint64_t kind = w0 >> EMBER_JVM_ADDR_BITS & 0xf;
	struct ember_jvm_scope scope[EMBER_JVM_MAX_SCOPES];
	int n;

	if (!p)
		return;
	if (kind == EMBER_JVM_FRAME_STUB) {
		value_of(j, p, KEY_STUB, w0 & ADDR_MASK, (uint32_t)w1, now_ns, true);
		return;
	}
	n = scopes_of(j, p, w0, w1, now_ns, true, scope);
	for (int i = 0; i < n; i++)
		scope_method(j, p, kind, &scope[i], (uint32_t)w1, now_ns, true);
}

static const char *jvm_marker(void *state, uint64_t w0)
{
	struct ember_jvm *j = state;

	switch (w0 & 0xff) {
	case EMBER_INTERP_MARK_TRUNCATED:
		j->stats.markers_truncated++;
		return "[jvm frames truncated]";
	case EMBER_INTERP_MARK_UNREADABLE:
		j->stats.markers_unreadable++;
		return "[jvm frame not readable]";
	default:
		return "[jvm frames stopped]";
	}
}

static void jvm_stats(void *state, const struct ember_stat_sink *sink)
{
	const struct ember_jvm *j = state;
	const struct ember_jvm_stats *s = &j->stats;

	ember_stat(sink, "jvm.processes", j->procs.processes);
	ember_stat(sink, "jvm.processes_unsupported", j->procs.unsupported);
	ember_stat(sink, "jvm.rows_sent", j->procs.rows_sent);
	ember_stat(sink, "jvm.frames", s->frames);
	ember_stat(sink, "jvm.frames_named", s->frames_named);
	ember_stat(sink, "jvm.frames_interpreted", s->frames_interpreted);
	ember_stat(sink, "jvm.frames_compiled", s->frames_compiled);
	ember_stat(sink, "jvm.frames_stub", s->frames_stub);
	ember_stat(sink, "jvm.frames_inlined", s->frames_inlined);
	ember_stat(sink, "jvm.frames_stale", s->frames_stale);
	ember_stat(sink, "jvm.frames_unreadable", s->frames_unreadable);
	ember_stat(sink, "jvm.markers_truncated", s->markers_truncated);
	ember_stat(sink, "jvm.markers_unreadable", s->markers_unreadable);
	ember_stat(sink, "jvm.reads", s->reads);
	ember_stat(sink, "jvm.read_errors", s->read_errors);
	ember_stat(sink, "jvm.cache_evictions", j->cache.evictions);
	ember_stat(sink, "jvm.files_read", j->files.files_read);
}

const struct ember_interp_ops ember_jvm_ops = {
    .init = jvm_init,
    .free = jvm_free,
    .on_maps = jvm_on_maps,
    .on_exit_ahead = jvm_on_exit_ahead,
    .on_exec = jvm_on_exec,
    .on_exit = jvm_on_exit,
    .warm = jvm_warm,
    .frame = jvm_frame,
    .marker = jvm_marker,
    .stats = jvm_stats,
};
