// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/ruby.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/hash.h"
#include "shared/log.h"
#include "symbolizer/interp/interp_cache.h"
#include "symbolizer/interp/interp_files.h"
#include "symbolizer/interp/interp_mem.h"
#include "symbolizer/interp/interp_procs.h"
#include "symbolizer/interp/ruby_elf.h"
#include "symbolizer/interp/ruby_frames.h"

#define ADDR_MASK ((1ull << EMBER_RB_ADDR_BITS) - 1)

/* Counters for the statistics (ruby.*). */
struct ember_ruby_stats {
	uint64_t frames, frames_named, frames_stale, frames_unreadable, frames_no_line;
	uint64_t markers_truncated, markers_unreadable;
	uint64_t reads, read_errors;
};

struct ember_ruby {
	struct ember_broker_client *broker;
	struct ember_hash_key hash_key;
	struct ember_interp_files files; /* struct ember_rb_elf of each file */
	struct ember_interp_procs procs; /* struct rb_process, by pid */
	struct ember_interp_cache cache; /* struct rb_frame, by (pid, kind and address, checksum) */
	struct ember_ruby_stats stats;
};

struct rb_process {
	struct ember_interp_proc proc; /* pid, row sent, its memory */
	struct ember_rb_proc row;
	struct ember_rb_layout layout;
	struct ember_rb_symbols syms;
};

/* A frame read, or the failure to read it (then name is NULL). */
struct rb_frame {
	int error; /* -ESTALE: the structure there now is another one; else why it was not read */
	bool has_iseq;
	struct ember_rb_iseq iseq; /* Ruby code */
	char *name;
	/* A method or C function named without its class because the class could not be read
	 * (as while GC.compact moves it): named again at each of its next
	 * EMBER_RB_CLASS_TRIES uses, then at the first use after class_retry_ns. */
	bool unqualified;
	uint8_t class_tries; /* tried again at once, at first: a compaction passes in moments */
	uint64_t class_retry_ns;
	/* The last instruction resolved and its line: samples repeat them. */
	uint32_t last_pos;
	int32_t last_line;
	int last_line_error;
};

static int read_file_facts(int fd, const char *path, void *facts)
{
	(void)path;
	return ember_rb_elf_read(fd, facts);
}

static void ruby_free(void *state);
static void release_frame(void *value);

static int ruby_init(void **state, uint32_t flags, struct ember_broker_client *broker)
{
	struct ember_ruby *rb = calloc(1, sizeof(*rb));
	int err;

	(void)flags; /* nothing of this runtime's is named by signature */
	if (!rb)
		return -ENOMEM;
	*state = rb;
	rb->broker = broker;
	err = ember_hash_key_init(&rb->hash_key);
	if (!err)
		err = ember_interp_files_init(&rb->files, sizeof(struct ember_rb_elf),
		                              EMBER_RB_MAX_FILES, read_file_facts,
		                              EMBER_RB_FILE_RETRY_NS);
	if (!err)
		err = ember_interp_procs_init(&rb->procs, sizeof(struct rb_process),
		                              EMBER_RB_MAX_TRACKED, broker, EMBER_RUNTIME_RUBY,
		                              "Ruby");
	if (!err)
		err = ember_interp_cache_init(&rb->cache, sizeof(struct rb_frame),
		                              EMBER_RB_CACHE_ENTRIES, EMBER_RB_CACHE_BYTES,
		                              release_frame);
	if (err) {
		ruby_free(rb);
		*state = NULL;
	}
	return err;
}

static void release_frame(void *value)
{
	struct rb_frame *f = value;

	if (f->has_iseq)
		ember_rb_iseq_free(&f->iseq);
	free(f->name);
}

static void ruby_free(void *state)
{
	struct ember_ruby *rb = state;

	ember_interp_cache_free(&rb->cache);
	ember_interp_files_free(&rb->files);
	ember_interp_procs_free(&rb->procs);
	free(rb);
}

/* ---- detection ---- */

static const char *basename_of(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* Files worth a look: the executable (the lowest file mapping), *ruby*, the dynamic linker. */
static bool candidate(const struct ember_maps *maps, const struct ember_map_entry *e, bool first)
{
	const char *base = basename_of(ember_maps_path(maps, e));

	return first || strstr(base, "ruby") || !strncmp(base, "ld-linux", 8);
}

static void fill_row(struct ember_rb_proc *r, const struct ember_rb_elf *elf, uint64_t bias,
                     const struct ember_rb_elf *ld)
{
	const struct ember_rb_layout *l = &elf->layout;

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < 2; i++) {
		r->loop_start[i] = elf->loop[i][0] + bias;
		r->loop_end[i] = elf->loop[i][1] + bias;
	}
	r->modid_slot = elf->modid_slot + bias;
	r->dtv_offset = ld->dtv_offset;
	r->dtv_shift = ld->dtv_shift;
	r->tls_offset = elf->tls_offset;
	r->ec_read = l->ec_read;
	r->ec_vm_stack = l->ec_vm_stack;
	r->ec_vm_stack_size = l->ec_vm_stack_size;
	r->ec_cfp = l->ec_cfp;
	r->cfp_read = l->cfp_read;
	r->cfp_pc = l->cfp_pc;
	r->cfp_iseq = l->cfp_iseq;
	r->cfp_ep = l->cfp_ep;
	r->iseq_read = l->iseq_read;
	r->iseq_body = l->iseq_body;
	r->body_read = l->body_read;
	r->body_type = l->body_type;
	r->body_size = l->body_size;
	r->body_encoded = l->body_encoded;
	r->body_first_lineno = l->body_first_lineno;
	r->cme_read = l->cme_read;
	r->cme_def = l->cme_def;
	r->cme_called_id = l->cme_called_id;
	r->cme_owner = l->cme_owner;
	r->version = (uint8_t)(l->major << 4 | (l->minor & 0xf));
}

static void ruby_on_maps(void *state, uint32_t pid, const struct ember_maps *maps, uint64_t now_ns)
{
	struct ember_ruby *rb = state;
	/* Copies: a later lookup can move the cache's slots, or empty it when full. */
	struct ember_rb_elf ruby = {0}, ld = {0};
	const struct ember_map_entry *ruby_map = NULL;
	struct ember_rb_proc row;
	struct rb_process *p;
	const char *why;
	uint64_t bias = 0;

	for (size_t i = 0; i < maps->count; i++) {
		const struct ember_map_entry *e = &maps->entries[i];
		const struct ember_rb_elf *f;

		if (e->kind != EMBER_MAP_FILE || !e->inode || e->deleted ||
		    !(e->perms & EMBER_MAP_X) || !candidate(maps, e, !i) ||
		    !(f = ember_interp_files_get(&rb->files, rb->broker, pid, maps, e, now_ns)))
			continue;
		if (!ruby_map && f->kind != EMBER_RB_ELF_OTHER) {
			ruby = *f;
			ruby_map = e;
		}
		if (!ld.has_dtv && f->has_dtv)
			ld = *f;
	}
	p = ember_interp_procs_get(&rb->procs, pid, ruby_map != NULL);
	if (!ruby_map || !p) {
		ember_interp_procs_remove_row(&rb->procs, p ? &p->proc : NULL);
		return;
	}
	ember_interp_procs_seen(&rb->procs, &p->proc);
	why = ruby.kind != EMBER_RB_ELF_RUBY ? ruby.why
	      : !ld.has_dtv                  ? "it uses a dynamic linker other than glibc's"
	      : !ember_elf_bias(ruby.segs, ruby.nsegs, ruby_map->offset, ruby_map->start, &bias)
	          ? "its interpreter is mapped in an unexpected way"
	          : NULL;
	if (why) {
		ember_interp_procs_unsupported(&rb->procs, &p->proc, why);
		return;
	}
	p->layout = ruby.layout;
	ember_rb_symbols_init(&ruby.layout, ruby.global_symbols ? ruby.global_symbols + bias : 0,
	                      &p->syms);
	fill_row(&row, &ruby, bias, &ld);
	if (ember_interp_procs_set_row(&rb->procs, &p->proc, &p->row, &row, sizeof(row)))
		log_debug("pid %u: Ruby %u.%u.%u, interpreter loop at %#llx", pid,
		          ruby.layout.major, ruby.layout.minor, ruby.teeny,
		          (unsigned long long)row.loop_start[0]);
}

static void ruby_on_exit_ahead(void *state, uint32_t pid)
{
	ember_interp_procs_exit_ahead(&((struct ember_ruby *)state)->procs, pid);
}

static void ruby_on_exec(void *state, uint32_t pid)
{
	struct ember_ruby *rb = state;

	ember_interp_cache_drop_pid(&rb->cache, pid);
	ember_interp_procs_exec(&rb->procs, pid);
}

static void ruby_on_exit(void *state, uint32_t pid)
{
	struct ember_ruby *rb = state;

	ember_interp_cache_drop_pid(&rb->cache, pid);
	ember_interp_procs_exit(&rb->procs, pid);
}

/* ---- frames ---- */

/* Names the Ruby code in f as a method of the class of the method entry at cme (0: none). */
static int name_iseq(struct rb_process *p, struct rb_frame *f, uint64_t cme, uint64_t now_ns)
{
	char *class_path = NULL, *name = NULL;
	bool singleton = false;
	int err = cme ? ember_rb_method_class(&p->layout, ember_interp_mem_read, &p->proc.mem,
	                                      &p->syms, cme, &class_path, &singleton)
	              : -ENOENT;

	/* Anonymous classes (-ENOENT) stay unqualified; a class not readable now is tried
	 * again later. */
	f->unqualified = err && err != -ENOENT;
	f->class_retry_ns = now_ns + EMBER_RB_CLASS_RETRY_NS;
	err = ember_rb_iseq_name(&f->iseq, class_path, singleton, &name);
	free(class_path);
	if (err)
		return err;
	free(f->name);
	f->name = name;
	return 0;
}

/* Reads the frame w0 (with its checksum) names into f: 0, or why not (-ESTALE: another). */
static int read_frame(struct rb_process *p, uint64_t w0, uint32_t checksum, uint64_t now_ns,
                      struct rb_frame *f)
{
	const struct ember_rb_layout *l = &p->layout;
	uint32_t kind = (uint32_t)(w0 >> EMBER_RB_ADDR_BITS) & 0xff;
	uint64_t addr = w0 & ADDR_MASK, body = addr;
	struct ember_rb_cfunc c;
	int err;

	if (kind == EMBER_RB_FRAME_CFUNC) {
		err =
		    ember_rb_read_cfunc(l, ember_interp_mem_read, &p->proc.mem, &p->syms, addr, &c);
		if (!err && c.checksum != checksum) {
			ember_rb_cfunc_free(&c);
			err = -ESTALE;
		}
		if (err)
			return err;
		f->name = c.name;
		/* As for a method: a class not readable now (GC.compact) is tried again. */
		f->unqualified = c.class_error && c.class_error != -ENOENT;
		f->class_retry_ns = now_ns + EMBER_RB_CLASS_RETRY_NS;
		return 0;
	}
	if (kind == EMBER_RB_FRAME_METHOD)
		err = ember_rb_method_body(l, ember_interp_mem_read, &p->proc.mem, addr, &body);
	else
		err = kind == EMBER_RB_FRAME_ISEQ ? 0 : -EBADMSG;
	if (!err)
		err = ember_rb_read_iseq(l, ember_interp_mem_read, &p->proc.mem, body, &f->iseq);
	if (err)
		return err;
	f->has_iseq = true;
	if (f->iseq.checksum != checksum)
		return -ESTALE;
	return name_iseq(p, f, kind == EMBER_RB_FRAME_METHOD ? addr : 0, now_ns);
}

/* Names again a frame named without its class: a method by its entry, a C function by
 * reading its entry again (a failure keeps the name it has). */
static void requalify(struct rb_process *p, struct rb_frame *f, uint64_t w0, uint32_t checksum,
                      uint64_t now_ns)
{
	struct rb_frame again = {0};

	if (f->has_iseq) {
		name_iseq(p, f, w0 & ADDR_MASK, now_ns);
		return;
	}
	if (read_frame(p, w0, checksum, now_ns, &again)) {
		f->class_retry_ns = now_ns + EMBER_RB_CLASS_RETRY_NS;
		return;
	}
	free(f->name);
	f->name = again.name;
	f->unqualified = again.unqualified;
	f->class_retry_ns = again.class_retry_ns;
}

/* The cached frame of (pid, w0, checksum), read on a miss; NULL without memory. Only warm
 * (the sample just taken) reads again a frame found stale whose retry is due: later, when
 * the sample is named, the memory may hold anything. */
static struct rb_frame *frame_of(struct ember_ruby *rb, struct rb_process *p, uint64_t w0,
                                 uint32_t checksum, uint64_t now_ns, bool warm)
{
	struct ember_interp_key key = {p->proc.pid, checksum, w0 & EMBER_INTERP_PAYLOAD_MASK};
	struct rb_frame f = {.last_pos = UINT32_MAX},
			*c = ember_interp_cache_find(&rb->cache, &key, warm ? now_ns : 0);
	size_t bytes;
	int err;

	if (c && c->unqualified &&
	    (c->class_tries < EMBER_RB_CLASS_TRIES ? ++c->class_tries
	                                           : now_ns >= c->class_retry_ns) &&
	    !ember_interp_mem_open(&p->proc.mem, rb->broker, now_ns))
		requalify(p, c, key.addr, checksum, now_ns);
	if (c || !p->layout.major)
		return c;
	/* Not in the cache: read it, if the process can be read now. */
	err = ember_interp_mem_open(&p->proc.mem, rb->broker, now_ns);
	if (err == -EAGAIN || err == -ETIMEDOUT)
		return NULL; /* the broker is busy: another sample tries again */
	rb->stats.reads++;
	if (!err)
		err = read_frame(p, key.addr, checksum, now_ns, &f);
	if (err && err != -ESTALE)
		rb->stats.read_errors++;
	f.error = err;
	if (err && f.has_iseq) {
		ember_rb_iseq_free(&f.iseq);
		f.has_iseq = false;
	}
	bytes = sizeof(f) + (f.name ? strlen(f.name) : 0) +
	        (f.has_iseq ? f.iseq.nlines * sizeof(*f.iseq.lines) + f.iseq.succ_len +
	                          (f.iseq.path ? strlen(f.iseq.path) : 0)
	                    : 0);
	c = ember_interp_cache_add(&rb->cache, &key, &f, bytes,
	                           ember_interp_cache_expiry(err, now_ns));
	if (!c)
		release_frame(&f);
	return c;
}

static void ruby_frame(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns,
                       struct ember_interp_frame *out)
{
	struct ember_ruby *rb = state;
	struct rb_process *p = ember_interp_procs_get(&rb->procs, pid, false);
	uint32_t pos = (uint32_t)(w1 >> 32);
	struct rb_frame *f = p ? frame_of(rb, p, w0, (uint32_t)w1, now_ns, false) : NULL;
	uint64_t k[3] = {pid, w0, w1};

	out->key = ember_hash(&rb->hash_key, k, sizeof(k));
	rb->stats.frames++;
	if (!f || !f->name) {
		if (f && f->error == -ESTALE)
			rb->stats.frames_stale++;
		else
			rb->stats.frames_unreadable++;
		return;
	}
	rb->stats.frames_named++;
	out->name = f->name;
	if (!f->has_iseq)
		return; /* a C function: no file, no line */
	out->file = f->iseq.path;
	out->firstlineno = f->iseq.first_lineno;
	if (pos != f->last_pos) {
		f->last_pos = pos;
		f->last_line_error = ember_rb_iseq_line(&f->iseq, pos, &f->last_line);
	}
	if (f->last_line_error)
		rb->stats.frames_no_line++;
	else
		out->line = f->last_line;
}

/* Frames are read at sample time, while the process lives and before they are freed. */
static void ruby_warm(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns)
{
	struct ember_ruby *rb = state;
	struct rb_process *p = ember_interp_procs_get(&rb->procs, pid, false);

	if (p)
		frame_of(rb, p, w0, (uint32_t)w1, now_ns, true);
}

static const char *ruby_marker(void *state, uint64_t w0)
{
	struct ember_ruby *rb = state;

	switch (w0 & 0xff) {
	case EMBER_INTERP_MARK_TRUNCATED:
		rb->stats.markers_truncated++;
		return "[ruby frames truncated]";
	case EMBER_INTERP_MARK_UNREADABLE:
		rb->stats.markers_unreadable++;
		return "[ruby frame not readable]";
	default:
		return "[ruby frames stopped]";
	}
}

static void ruby_stats(void *state, const struct ember_stat_sink *sink)
{
	const struct ember_ruby *rb = state;
	const struct ember_ruby_stats *rs = &rb->stats;

	ember_stat(sink, "ruby.processes", rb->procs.processes);
	ember_stat(sink, "ruby.processes_unsupported", rb->procs.unsupported);
	ember_stat(sink, "ruby.rows_sent", rb->procs.rows_sent);
	ember_stat(sink, "ruby.frames", rs->frames);
	ember_stat(sink, "ruby.frames_named", rs->frames_named);
	ember_stat(sink, "ruby.frames_stale", rs->frames_stale);
	ember_stat(sink, "ruby.frames_unreadable", rs->frames_unreadable);
	ember_stat(sink, "ruby.frames_no_line", rs->frames_no_line);
	ember_stat(sink, "ruby.markers_truncated", rs->markers_truncated);
	ember_stat(sink, "ruby.markers_unreadable", rs->markers_unreadable);
	ember_stat(sink, "ruby.reads", rs->reads);
	ember_stat(sink, "ruby.read_errors", rs->read_errors);
	ember_stat(sink, "ruby.cache_evictions", rb->cache.evictions);
	ember_stat(sink, "ruby.files_read", rb->files.files_read);
}

const struct ember_interp_ops ember_ruby_ops = {
    .init = ruby_init,
    .free = ruby_free,
    .on_maps = ruby_on_maps,
    .on_exit_ahead = ruby_on_exit_ahead,
    .on_exec = ruby_on_exec,
    .on_exit = ruby_on_exit,
    .warm = ruby_warm,
    .frame = ruby_frame,
    .marker = ruby_marker,
    .stats = ruby_stats,
};
