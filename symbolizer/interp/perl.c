// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/perl.h"

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
#include "symbolizer/interp/perl_elf.h"
#include "symbolizer/interp/perl_frames.h"

#define ADDR_MASK ((1ull << EMBER_PERL_ADDR_BITS) - 1)

/* Counters for the statistics (perl.*). */
struct ember_perl_stats {
	uint64_t frames, frames_named, frames_stale, frames_unreadable, frames_eval;
	uint64_t markers_truncated, markers_unreadable;
	uint64_t reads, read_errors;
};

struct ember_perl {
	struct ember_broker_client *broker;
	struct ember_hash_key hash_key;
	struct ember_interp_files files; /* struct ember_perl_elf of each file */
	struct ember_interp_procs procs; /* struct perl_process, by pid */
	struct ember_interp_cache cache; /* struct perl_frame, by (pid, CV or COP, checksum) */
	struct ember_perl_stats stats;
};

struct perl_process {
	struct ember_interp_proc proc; /* pid, row sent, its memory */
	struct ember_perl_proc row;
	struct ember_perl_layout layout;
};

/* A frame read, or the failure to read it (then sub.name is NULL). */
struct perl_frame {
	int error; /* -ESTALE: the structure there now is another one; else why it was not read */
	struct ember_perl_sub sub;
};

static int read_file_facts(int fd, const char *path, void *facts)
{
	(void)path;
	return ember_perl_elf_read(fd, facts);
}

static void perl_free(void *state);
static void release_frame(void *value);

static int perl_init(void **state, uint32_t flags, struct ember_broker_client *broker)
{
	struct ember_perl *pl = calloc(1, sizeof(*pl));
	int err;

	(void)flags; /* nothing of this runtime's is named by signature */
	if (!pl)
		return -ENOMEM;
	*state = pl;
	pl->broker = broker;
	err = ember_hash_key_init(&pl->hash_key);
	if (!err)
		err = ember_interp_files_init(&pl->files, sizeof(struct ember_perl_elf),
		                              EMBER_PERL_MAX_FILES, read_file_facts,
		                              EMBER_PERL_FILE_RETRY_NS);
	if (!err)
		err = ember_interp_procs_init(&pl->procs, sizeof(struct perl_process),
		                              EMBER_PERL_MAX_TRACKED, broker, EMBER_RUNTIME_PERL,
		                              "Perl");
	if (!err)
		err = ember_interp_cache_init(&pl->cache, sizeof(struct perl_frame),
		                              EMBER_PERL_CACHE_ENTRIES, EMBER_PERL_CACHE_BYTES,
		                              release_frame);
	if (err) {
		perl_free(pl);
		*state = NULL;
	}
	return err;
}

static void release_frame(void *value)
{
	ember_perl_sub_free(&((struct perl_frame *)value)->sub);
}

static void perl_free(void *state)
{
	struct ember_perl *pl = state;

	ember_interp_cache_free(&pl->cache);
	ember_interp_files_free(&pl->files);
	ember_interp_procs_free(&pl->procs);
	free(pl);
}

/* ---- detection ---- */

/* Files worth a look: the executable (the lowest file mapping), *perl* (libperl.so) and
 * libc (the key slots). */
static bool candidate(const struct ember_maps *maps, const struct ember_map_entry *e, bool first)
{
	const char *path = ember_maps_path(maps, e), *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return first || strstr(base, "perl") || !strncmp(base, "libc.so", 7) ||
	       !strncmp(base, "libc-", 5);
}

static void fill_row(struct ember_perl_proc *r, const struct ember_perl_elf *elf, uint64_t bias,
                     uint16_t tsd_offset)
{
	const struct ember_perl_layout *l = &elf->layout;

	*r = (struct ember_perl_proc){
	    .loop_start = elf->loop[0] + bias,
	    .loop_end = elf->loop[1] + bias,
	    .thr_key = elf->thr_key + bias,
	    .tsd_offset = tsd_offset,
	    .i_curstackinfo = l->i_curstackinfo,
	    .i_curcop = l->i_curcop,
	    .cx_size = l->cx_size,
	    .si_read = l->si_read,
	    .si_cxstack = l->si_cxstack,
	    .si_prev = l->si_prev,
	    .si_cxix = l->si_cxix,
	    .si_cxsubix = l->si_cxsubix,
	    .cx_read = l->cx_read,
	    .cx_type = l->cx_type,
	    .cx_oldcop = l->cx_oldcop,
	    .cx_retop = l->cx_retop,
	    .cx_subix = l->cx_subix,
	    .cx_cv = l->cx_cv,
	    .cop_read = l->cop_read,
	    .cop_line = l->cop_line,
	    .cop_file = l->cop_file,
	    .cop_stash = l->cop_stash,
	    .cv_read = l->cv_read,
	    .cv_gv = l->cv_gv,
	    .cv_file = l->cv_file,
	    .version = l->version,
	};
}

/* The interpreter's file (its facts and mapping) and glibc's key slots among maps. */
struct found {
	struct ember_perl_elf perl; /* a copy: later lookups can move the files' cache */
	const struct ember_map_entry *map;
	bool have_libc;
	uint16_t tsd_offset;
};

static void find_files(struct ember_perl *pl, uint32_t pid, const struct ember_maps *maps,
                       uint64_t now_ns, struct found *out)
{
	for (size_t i = 0; i < maps->count && !(out->map && out->have_libc); i++) {
		const struct ember_map_entry *e = &maps->entries[i];
		const struct ember_perl_elf *f;

		if (e->kind != EMBER_MAP_FILE || !e->inode || e->deleted ||
		    !(e->perms & EMBER_MAP_X) || !candidate(maps, e, !i) ||
		    !(f = ember_interp_files_get(&pl->files, pl->broker, pid, maps, e, now_ns)))
			continue;
		if (!out->map && f->kind != EMBER_PERL_ELF_OTHER) {
			out->perl = *f;
			out->map = e;
		}
		if (!out->have_libc && f->has_tsd) {
			out->tsd_offset = f->tsd_offset;
			out->have_libc = true;
		}
	}
}

static void perl_on_maps(void *state, uint32_t pid, const struct ember_maps *maps, uint64_t now_ns)
{
	struct ember_perl *pl = state;
	struct found f = {0};
	struct ember_perl_proc row;
	struct perl_process *p;
	uint64_t bias = 0;

	find_files(pl, pid, maps, now_ns, &f);
	p = ember_interp_procs_get(&pl->procs, pid, f.map != NULL);
	if (!f.map || !p) {
		ember_interp_procs_remove_row(&pl->procs, p ? &p->proc : NULL);
		return;
	}
	ember_interp_procs_seen(&pl->procs, &p->proc);
	if (f.perl.kind != EMBER_PERL_ELF_PERL || !f.have_libc ||
	    !ember_elf_bias(f.perl.segs, f.perl.nsegs, f.map->offset, f.map->start, &bias)) {
		ember_interp_procs_unsupported(&pl->procs, &p->proc,
		                               f.perl.kind != EMBER_PERL_ELF_PERL ? f.perl.why
		                               : !f.have_libc
		                                   ? "it uses a C library other than glibc"
		                                   : "its interpreter is mapped in an "
		                                     "unexpected way");
		return;
	}
	p->layout = f.perl.layout;
	fill_row(&row, &f.perl, bias, f.tsd_offset);
	if (ember_interp_procs_set_row(&pl->procs, &p->proc, &p->row, &row, sizeof(row)))
		log_debug("pid %u: Perl %u.%u.%u, interpreter loop at %#llx", pid,
		          f.perl.version[0], f.perl.version[1], f.perl.version[2],
		          (unsigned long long)row.loop_start);
}

static void perl_on_exit_ahead(void *state, uint32_t pid)
{
	ember_interp_procs_exit_ahead(&((struct ember_perl *)state)->procs, pid);
}

static void perl_on_exec(void *state, uint32_t pid)
{
	struct ember_perl *pl = state;

	ember_interp_cache_drop_pid(&pl->cache, pid);
	ember_interp_procs_exec(&pl->procs, pid);
}

static void perl_on_exit(void *state, uint32_t pid)
{
	struct ember_perl *pl = state;

	ember_interp_cache_drop_pid(&pl->cache, pid);
	ember_interp_procs_exit(&pl->procs, pid);
}

/* ---- frames ---- */

/* The cached frame of (pid, w0, checksum), read on a miss; NULL without memory. Only warm
 * (the sample just taken) reads again a frame found stale whose retry is due: later, when
 * the sample is named, the memory may hold anything. */
static struct perl_frame *frame_of(struct ember_perl *pl, struct perl_process *p, uint64_t w0,
                                   uint32_t checksum, uint64_t now_ns, bool warm)
{
	struct ember_interp_key key = {p->proc.pid, checksum, w0 & EMBER_INTERP_PAYLOAD_MASK};
	struct perl_frame f = {0},
			  *c = ember_interp_cache_find(&pl->cache, &key, warm ? now_ns : 0);
	int err;

	if (c || !p->layout.version)
		return c;
	err = ember_interp_mem_open(&p->proc.mem, pl->broker, now_ns);
	if (err == -EAGAIN || err == -ETIMEDOUT)
		return NULL; /* the broker is busy: another sample tries again */
	pl->stats.reads++;
	if (!err)
		err = ember_perl_read_frame(&p->layout, ember_interp_mem_read, &p->proc.mem,
		                            (unsigned int)(key.addr >> EMBER_PERL_ADDR_BITS),
		                            key.addr & ADDR_MASK, &f.sub);
	if (!err && f.sub.checksum != checksum) {
		ember_perl_sub_free(&f.sub);
		err = -ESTALE;
	}
	if (err && err != -ESTALE)
		pl->stats.read_errors++;
	f.error = err;
	c = ember_interp_cache_add(&pl->cache, &key, &f,
	                           sizeof(f) + (f.sub.name ? strlen(f.sub.name) : 0) +
	                               (f.sub.file ? strlen(f.sub.file) : 0),
	                           ember_interp_cache_expiry(err, now_ns));
	if (!c)
		release_frame(&f);
	return c;
}

static void perl_frame(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns,
                       struct ember_interp_frame *out)
{
	struct ember_perl *pl = state;
	struct perl_process *p = ember_interp_procs_get(&pl->procs, pid, false);
	struct perl_frame *f = p ? frame_of(pl, p, w0, (uint32_t)w1, now_ns, false) : NULL;
	uint64_t k[3] = {pid, w0, w1};

	out->key = ember_hash(&pl->hash_key, k, sizeof(k));
	pl->stats.frames++;
	if (!f || !f->sub.name) {
		if (f && f->error == -ESTALE)
			pl->stats.frames_stale++;
		else
			pl->stats.frames_unreadable++;
		return;
	}
	pl->stats.frames_named++;
	if ((w0 >> EMBER_PERL_ADDR_BITS & 0xff) == EMBER_PERL_FRAME_EVAL)
		pl->stats.frames_eval++;
	out->name = f->sub.name;
	out->file = f->sub.file;
	out->line = (int32_t)(w1 >> 32);
}

/* Frames are read at sample time, while the process lives and before evals free them. */
static void perl_warm(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns)
{
	struct ember_perl *pl = state;
	struct perl_process *p = ember_interp_procs_get(&pl->procs, pid, false);

	if (p)
		frame_of(pl, p, w0, (uint32_t)w1, now_ns, true);
}

static const char *perl_marker(void *state, uint64_t w0)
{
	struct ember_perl *pl = state;

	switch (w0 & 0xff) {
	case EMBER_INTERP_MARK_TRUNCATED:
		pl->stats.markers_truncated++;
		return "[perl frames truncated]";
	case EMBER_INTERP_MARK_UNREADABLE:
		pl->stats.markers_unreadable++;
		return "[perl frame not readable]";
	default:
		return "[perl frames stopped]";
	}
}

static void perl_stats(void *state, const struct ember_stat_sink *sink)
{
	const struct ember_perl *pl = state;
	const struct ember_perl_stats *ps = &pl->stats;

	ember_stat(sink, "perl.processes", pl->procs.processes);
	ember_stat(sink, "perl.processes_unsupported", pl->procs.unsupported);
	ember_stat(sink, "perl.rows_sent", pl->procs.rows_sent);
	ember_stat(sink, "perl.frames", ps->frames);
	ember_stat(sink, "perl.frames_named", ps->frames_named);
	ember_stat(sink, "perl.frames_eval", ps->frames_eval);
	ember_stat(sink, "perl.frames_stale", ps->frames_stale);
	ember_stat(sink, "perl.frames_unreadable", ps->frames_unreadable);
	ember_stat(sink, "perl.markers_truncated", ps->markers_truncated);
	ember_stat(sink, "perl.markers_unreadable", ps->markers_unreadable);
	ember_stat(sink, "perl.reads", ps->reads);
	ember_stat(sink, "perl.read_errors", ps->read_errors);
	ember_stat(sink, "perl.cache_evictions", pl->cache.evictions);
	ember_stat(sink, "perl.files_read", pl->files.files_read);
}

const struct ember_interp_ops ember_perl_ops = {
    .init = perl_init,
    .free = perl_free,
    .on_maps = perl_on_maps,
    .on_exit_ahead = perl_on_exit_ahead,
    .on_exec = perl_on_exec,
    .on_exit = perl_on_exit,
    .warm = perl_warm,
    .frame = perl_frame,
    .marker = perl_marker,
    .stats = perl_stats,
};
