// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/php.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "shared/hash.h"
#include "shared/log.h"
#include "symbolizer/interp/interp_cache.h"
#include "symbolizer/interp/interp_files.h"
#include "symbolizer/interp/interp_mem.h"
#include "symbolizer/interp/interp_procs.h"
#include "symbolizer/interp/php_elf.h"
#include "symbolizer/interp/php_frames.h"

#define ADDR_MASK ((1ull << EMBER_PHP_ADDR_BITS) - 1)

/* Counters for the statistics (php.*). */
struct ember_php_stats {
	uint64_t frames, frames_named, frames_stale, frames_unreadable, frames_internal;
	uint64_t markers_truncated, markers_unreadable;
	uint64_t reads, read_errors;
};

struct ember_php {
	struct ember_broker_client *broker;
	struct ember_hash_key hash_key;
	struct ember_interp_files files; /* struct ember_php_elf of each file */
	struct ember_interp_procs procs; /* struct php_process, by pid */
	struct ember_interp_cache cache; /* struct php_frame, by (pid, function, checksum) */
	struct ember_php_stats stats;
};

struct php_process {
	struct ember_interp_proc proc; /* pid, row sent, its memory */
	struct ember_php_proc row;
	struct ember_php_layout layout;
};

/* A function read, or the failure to read it (then func.name is NULL). */
struct php_frame {
	int error; /* -ESTALE: the function there now is another one; else why it was not read */
	struct ember_php_func func;
};

static int read_file_facts(int fd, const char *path, void *facts)
{
	(void)path;
	return ember_php_elf_read(fd, facts);
}

static void php_free(void *state);
static void release_frame(void *value);

static int php_init(void **state, uint32_t flags, struct ember_broker_client *broker)
{
	struct ember_php *ph = calloc(1, sizeof(*ph));
	int err;

	(void)flags; /* nothing of this runtime's is named by signature */
	if (!ph)
		return -ENOMEM;
	*state = ph;
	ph->broker = broker;
	err = ember_hash_key_init(&ph->hash_key);
	if (!err)
		err = ember_interp_files_init(&ph->files, sizeof(struct ember_php_elf),
		                              EMBER_PHP_MAX_FILES, read_file_facts,
		                              EMBER_PHP_FILE_RETRY_NS);
	if (!err)
		err = ember_interp_procs_init(&ph->procs, sizeof(struct php_process),
		                              EMBER_PHP_MAX_TRACKED, broker, EMBER_RUNTIME_PHP,
		                              "PHP");
	if (!err)
		err = ember_interp_cache_init(&ph->cache, sizeof(struct php_frame),
		                              EMBER_PHP_CACHE_ENTRIES, EMBER_PHP_CACHE_BYTES,
		                              release_frame);
	if (err) {
		php_free(ph);
		*state = NULL;
	}
	return err;
}

static void release_frame(void *value)
{
	ember_php_func_free(&((struct php_frame *)value)->func);
}

static void php_free(void *state)
{
	struct ember_php *ph = state;

	ember_interp_cache_free(&ph->cache);
	ember_interp_files_free(&ph->files);
	ember_interp_procs_free(&ph->procs);
	free(ph);
}

/* ---- detection ---- */

/* Files worth a look: the executable (the lowest file mapping), *php* (libphp.so). */
static bool candidate(const struct ember_maps *maps, const struct ember_map_entry *e, bool first)
{
	const char *path = ember_maps_path(maps, e), *base = strrchr(path, '/');

	return first || strstr(base ? base + 1 : path, "php");
}

static void fill_row(struct ember_php_proc *r, const struct ember_php_elf *elf, uint64_t bias)
{
	const struct ember_php_layout *l = &elf->layout;

	memset(r, 0, sizeof(*r));
	r->loop_start = elf->loop[0] + bias;
	r->loop_end = elf->loop[1] + bias;
	r->current_ex = elf->executor_globals + bias + l->eg_current_ex;
	r->ex_read = l->ex_read;
	r->ex_opline = l->ex_opline;
	r->ex_func = l->ex_func;
	r->ex_call_info = l->ex_call_info;
	r->ex_prev = l->ex_prev;
	r->fn_read = l->fn_read;
	r->fn_type = l->fn_type;
	r->fn_name = l->fn_name;
	r->fn_scope = l->fn_scope;
	r->fn_handler = l->fn_handler;
	r->fn_opcodes = l->fn_opcodes;
	r->fn_last = l->fn_last;
	r->fn_filename = l->fn_filename;
	r->fn_lines = l->fn_lines;
	r->op_size = l->op_size;
	r->op_lineno = l->op_lineno;
	r->str_hash = (uint8_t)l->string_hash;
	r->version = (uint8_t)(l->major << 4 | (l->minor & 0xf));
}

static void php_on_maps(void *state, uint32_t pid, const struct ember_maps *maps, uint64_t now_ns)
{
	struct ember_php *ph = state;
	/* A copy: a later lookup can move the cache's slots, or empty it when full. */
	struct ember_php_elf php = {0};
	const struct ember_map_entry *php_map = NULL;
	struct ember_php_proc row;
	struct php_process *p;
	uint64_t bias = 0;

	for (size_t i = 0; i < maps->count && !php_map; i++) {
		const struct ember_map_entry *e = &maps->entries[i];
		const struct ember_php_elf *f;

		if (e->kind != EMBER_MAP_FILE || !e->inode || e->deleted ||
		    !(e->perms & EMBER_MAP_X) || !candidate(maps, e, !i) ||
		    !(f = ember_interp_files_get(&ph->files, ph->broker, pid, maps, e, now_ns)) ||
		    f->kind == EMBER_PHP_ELF_OTHER)
			continue;
		php = *f;
		php_map = e;
	}
	p = ember_interp_procs_get(&ph->procs, pid, php_map != NULL);
	if (!php_map || !p) {
		ember_interp_procs_remove_row(&ph->procs, p ? &p->proc : NULL);
		return;
	}
	ember_interp_procs_seen(&ph->procs, &p->proc);
	if (php.kind != EMBER_PHP_ELF_PHP ||
	    !ember_elf_bias(php.segs, php.nsegs, php_map->offset, php_map->start, &bias)) {
		ember_interp_procs_unsupported(&ph->procs, &p->proc,
		                               php.kind != EMBER_PHP_ELF_PHP
		                                   ? php.why
		                                   : "its engine is mapped in an unexpected way");
		return;
	}
	p->layout = php.layout;
	fill_row(&row, &php, bias);
	if (ember_interp_procs_set_row(&ph->procs, &p->proc, &p->row, &row, sizeof(row)))
		log_debug("pid %u: PHP %u.%u.%u, interpreter loop at %#llx", pid, php.layout.major,
		          php.layout.minor, php.release, (unsigned long long)row.loop_start);
}

static void php_on_exit_ahead(void *state, uint32_t pid)
{
	ember_interp_procs_exit_ahead(&((struct ember_php *)state)->procs, pid);
}

static void php_on_exec(void *state, uint32_t pid)
{
	struct ember_php *ph = state;

	ember_interp_cache_drop_pid(&ph->cache, pid);
	ember_interp_procs_exec(&ph->procs, pid);
}

static void php_on_exit(void *state, uint32_t pid)
{
	struct ember_php *ph = state;

	ember_interp_cache_drop_pid(&ph->cache, pid);
	ember_interp_procs_exit(&ph->procs, pid);
}

/* ---- frames ---- */

/* The cached frame of (pid, w0, checksum), read on a miss; NULL without memory. Only warm
 * (the sample just taken) reads again a frame found stale whose retry is due: later, when
 * the sample is named, the memory may hold anything. */
static struct php_frame *frame_of(struct ember_php *ph, struct php_process *p, uint64_t w0,
                                  uint32_t checksum, uint64_t now_ns, bool warm)
{
	struct ember_interp_key key = {p->proc.pid, checksum, w0 & EMBER_INTERP_PAYLOAD_MASK};
	struct php_frame f = {0}, *c = ember_interp_cache_find(&ph->cache, &key, warm ? now_ns : 0);
	int err;

	if (c || !p->layout.major)
		return c;
	/* Not in the cache: read it, if the process can be read now. */
	err = ember_interp_mem_open(&p->proc.mem, ph->broker, now_ns);
	if (err == -EAGAIN || err == -ETIMEDOUT)
		return NULL; /* the broker is busy: another sample tries again */
	ph->stats.reads++;
	if (!err)
		err = ember_php_read_func(&p->layout, ember_interp_mem_read, &p->proc.mem,
		                          key.addr & ADDR_MASK, &f.func);
	if (!err && f.func.checksum != checksum) {
		ember_php_func_free(&f.func);
		err = -ESTALE;
	}
	if (err && err != -ESTALE)
		ph->stats.read_errors++;
	f.error = err;
	c = ember_interp_cache_add(&ph->cache, &key, &f,
	                           sizeof(f) + (f.func.name ? strlen(f.func.name) : 0) +
	                               (f.func.file ? strlen(f.func.file) : 0),
	                           ember_interp_cache_expiry(err, now_ns));
	if (!c)
		release_frame(&f);
	return c;
}

static void php_frame(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns,
                      struct ember_interp_frame *out)
{
	struct ember_php *ph = state;
	struct php_process *p = ember_interp_procs_get(&ph->procs, pid, false);
	struct php_frame *f = p ? frame_of(ph, p, w0, (uint32_t)w1, now_ns, false) : NULL;
	uint64_t k[3] = {pid, w0, w1};

	out->key = ember_hash(&ph->hash_key, k, sizeof(k));
	ph->stats.frames++;
	if (!f || !f->func.name) {
		if (f && f->error == -ESTALE)
			ph->stats.frames_stale++;
		else
			ph->stats.frames_unreadable++;
		return;
	}
	ph->stats.frames_named++;
	out->name = f->func.name;
	if (f->func.type == EMBER_PHP_FUNC_INTERNAL) {
		ph->stats.frames_internal++;
		return; /* C: no file, no line */
	}
	out->file = f->func.file;
	out->firstlineno = f->func.line_start;
	out->line = (int32_t)(w1 >> 32);
}

/* Functions are read at sample time, while the process lives and before they are freed. */
static void php_warm(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns)
{
	struct ember_php *ph = state;
	struct php_process *p = ember_interp_procs_get(&ph->procs, pid, false);

	if (p)
		frame_of(ph, p, w0, (uint32_t)w1, now_ns, true);
}

static const char *php_marker(void *state, uint64_t w0)
{
	struct ember_php *ph = state;

	switch (w0 & 0xff) {
	case EMBER_INTERP_MARK_TRUNCATED:
		ph->stats.markers_truncated++;
		return "[php frames truncated]";
	case EMBER_INTERP_MARK_UNREADABLE:
		ph->stats.markers_unreadable++;
		return "[php frame not readable]";
	default:
		return "[php frames stopped]";
	}
}

static void php_stats(void *state, const struct ember_stat_sink *sink)
{
	const struct ember_php *ph = state;
	const struct ember_php_stats *ps = &ph->stats;

	ember_stat(sink, "php.processes", ph->procs.processes);
	ember_stat(sink, "php.processes_unsupported", ph->procs.unsupported);
	ember_stat(sink, "php.rows_sent", ph->procs.rows_sent);
	ember_stat(sink, "php.frames", ps->frames);
	ember_stat(sink, "php.frames_named", ps->frames_named);
	ember_stat(sink, "php.frames_internal", ps->frames_internal);
	ember_stat(sink, "php.frames_stale", ps->frames_stale);
	ember_stat(sink, "php.frames_unreadable", ps->frames_unreadable);
	ember_stat(sink, "php.markers_truncated", ps->markers_truncated);
	ember_stat(sink, "php.markers_unreadable", ps->markers_unreadable);
	ember_stat(sink, "php.reads", ps->reads);
	ember_stat(sink, "php.read_errors", ps->read_errors);
	ember_stat(sink, "php.cache_evictions", ph->cache.evictions);
	ember_stat(sink, "php.files_read", ph->files.files_read);
}

const struct ember_interp_ops ember_php_ops = {
    .init = php_init,
    .free = php_free,
    .on_maps = php_on_maps,
    .on_exit_ahead = php_on_exit_ahead,
    .on_exec = php_on_exec,
    .on_exit = php_on_exit,
    .warm = php_warm,
    .frame = php_frame,
    .marker = php_marker,
    .stats = php_stats,
};
