// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/python.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/hash.h"
#include "shared/log.h"
#include "symbolizer/interp/interp_cache.h"
#include "symbolizer/interp/interp_files.h"
#include "symbolizer/interp/interp_mem.h"
#include "symbolizer/interp/interp_procs.h"
#include "symbolizer/interp/python_code.h"
#include "symbolizer/interp/python_elf.h"
#include "symbolizer/interp/python_lines.h"

/* Counters for the statistics (python.*). */
struct ember_python_stats {
	uint64_t frames, frames_named, frames_stale, frames_unreadable, frames_no_line;
	uint64_t markers_truncated, markers_unreadable;
	uint64_t code_reads, code_read_errors;
};

struct ember_python {
	struct ember_broker_client *broker;
	struct ember_hash_key hash_key;
	struct ember_interp_files files; /* struct ember_py_elf of each file */
	struct ember_interp_procs procs; /* struct py_process, by pid */
	struct ember_interp_cache cache; /* struct py_code, by (pid, address, checksum) */
	struct ember_python_stats stats;
};

struct py_process {
	struct ember_interp_proc proc; /* pid, row sent, its memory */
	struct ember_py_proc row;
	struct ember_py_layout layout;
	struct ember_py_types types;
};

/* A code object read, or the failure to read it (then name is NULL). */
struct py_code {
	int error; /* -ESTALE: the object there now is another one; else why it was not read */
	uint8_t lines;
	uint8_t lasti_units;
	int32_t firstlineno;
	uint64_t nunits;
	char *name, *file;
	uint8_t *linetable;
	size_t linetable_len;
	/* The last offset resolved and its line: samples repeat offsets. */
	int64_t last_offset;
	int32_t last_line;
	int last_line_error;
};

static int read_file_facts(int fd, const char *path, void *facts)
{
	return ember_py_elf_read(fd, path, facts);
}

static void python_free(void *state);
static void release_code(void *value);

static int python_init(void **state, uint32_t flags, struct ember_broker_client *broker)
{
	struct ember_python *py = calloc(1, sizeof(*py));
	int err;

	(void)flags; /* nothing of this runtime's is named by signature */
	if (!py)
		return -ENOMEM;
	*state = py;
	py->broker = broker;
	err = ember_hash_key_init(&py->hash_key);
	if (!err)
		err = ember_interp_files_init(&py->files, sizeof(struct ember_py_elf),
		                              EMBER_PY_MAX_FILES, read_file_facts,
		                              EMBER_PY_FILE_RETRY_NS);
	if (!err)
		err = ember_interp_procs_init(&py->procs, sizeof(struct py_process),
		                              EMBER_PY_MAX_TRACKED, broker, EMBER_RUNTIME_PYTHON,
		                              "Python");
	if (!err)
		err = ember_interp_cache_init(&py->cache, sizeof(struct py_code),
		                              EMBER_PY_CACHE_ENTRIES, EMBER_PY_CACHE_BYTES,
		                              release_code);
	if (err) {
		python_free(py);
		*state = NULL;
	}
	return err;
}

static void release_code(void *value)
{
	struct py_code *c = value;

	free(c->name);
	free(c->file);
	free(c->linetable);
}

static void python_free(void *state)
{
	struct ember_python *py = state;

	ember_interp_cache_free(&py->cache);
	ember_interp_files_free(&py->files);
	ember_interp_procs_free(&py->procs);
	free(py);
}

/* ---- detection ---- */

static const char *basename_of(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* Files worth a look: the executable (the lowest file mapping), *python*, the C library. */
static bool candidate(const struct ember_maps *maps, const struct ember_map_entry *e, bool first)
{
	const char *base = basename_of(ember_maps_path(maps, e));

	return first || strstr(base, "python") || !strncmp(base, "libc.so", 7) ||
	       !strncmp(base, "libc-", 5) || !strncmp(base, "libpthread", 10);
}

static void fill_row(struct ember_py_proc *r, const struct ember_py_elf *elf, uint64_t bias,
                     uint16_t tsd_offset)
{
	const struct ember_py_layout *l = &elf->layout;

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < 2; i++)
		if (elf->eval[i][1]) {
			r->eval_start[i] = elf->eval[i][0] + bias;
			r->eval_end[i] = elf->eval[i][1] + bias;
		}
	r->tss_key = elf->tss_key + bias;
	r->tsd_offset = tsd_offset;
	r->tstate_frame = l->tstate_frame;
	r->cframe_frame = l->cframe_frame;
	r->code_units = l->code_units;
	r->chain = l->chain;
	r->entry = l->entry;
	r->instr = l->instr;
	r->entry_owner = l->entry_owner;
	r->frame_read = l->frame_read;
	r->frame_code = l->frame_code;
	r->frame_back = l->frame_back;
	r->frame_instr = l->frame_instr;
	r->frame_entry = l->frame_entry;
	r->code_read = l->code_read;
	r->code_argcount = l->code_argcount;
	r->code_firstlineno = l->code_firstlineno;
	r->code_name = l->code_name;
	r->code_filename = l->code_filename;
	r->version = l->minor;
}

static void python_on_maps(void *state, uint32_t pid, const struct ember_maps *maps,
                           uint64_t now_ns)
{
	struct ember_python *py = state;
	/* Copies: a later file_facts can move the cache's slots, or empty it when full. */
	struct ember_py_elf python = {0};
	bool have_python = false, have_libc = false;
	uint16_t tsd_offset = 0;
	const struct ember_map_entry *python_map = NULL;
	struct ember_py_proc row;
	struct py_process *p;
	uint64_t bias;
	bool first = true;

	for (size_t i = 0; i < maps->count; i++) {
		const struct ember_map_entry *e = &maps->entries[i];
		const struct ember_py_elf *f;

		if (e->kind != EMBER_MAP_FILE || !e->inode || e->deleted)
			continue;
		if ((e->perms & EMBER_MAP_X) && candidate(maps, e, first) &&
		    (f = ember_interp_files_get(&py->files, py->broker, pid, maps, e, now_ns))) {
			if (!have_python && f->kind != EMBER_PY_ELF_OTHER) {
				python = *f;
				have_python = true;
				python_map = e;
			}
			if (!have_libc && f->has_tsd) {
				tsd_offset = f->tsd_offset;
				have_libc = true;
			}
		}
		first = false;
	}
	p = ember_interp_procs_get(&py->procs, pid, have_python);
	if (!have_python || !p) {
		ember_interp_procs_remove_row(&py->procs, p ? &p->proc : NULL);
		return;
	}
	ember_interp_procs_seen(&py->procs, &p->proc);
	if (python.kind != EMBER_PY_ELF_PYTHON || !have_libc ||
	    !ember_elf_bias(python.segs, python.nsegs, python_map->offset, python_map->start,
	                    &bias)) {
		ember_interp_procs_unsupported(&py->procs, &p->proc,
		                               python.kind != EMBER_PY_ELF_PYTHON ? python.why
		                               : !have_libc ? "it uses a C library other than glibc"
		                                            : "its interpreter is mapped in an "
		                                              "unexpected way");
		return;
	}
	p->layout = python.layout;
	p->types = (struct ember_py_types){python.code_type + bias, python.str_type + bias,
	                                   python.bytes_type + bias};
	fill_row(&row, &python, bias, tsd_offset);
	if (ember_interp_procs_set_row(&py->procs, &p->proc, &p->row, &row, sizeof(row)))
		log_debug("pid %u: CPython 3.%u, interpreter loop at %#llx", pid, p->layout.minor,
		          (unsigned long long)row.eval_start[0]);
}

static void python_on_exit_ahead(void *state, uint32_t pid)
{
	ember_interp_procs_exit_ahead(&((struct ember_python *)state)->procs, pid);
}

static void python_on_exec(void *state, uint32_t pid)
{
	struct ember_python *py = state;

	ember_interp_cache_drop_pid(&py->cache, pid);
	ember_interp_procs_exec(&py->procs, pid);
}

static void python_on_exit(void *state, uint32_t pid)
{
	struct ember_python *py = state;

	ember_interp_cache_drop_pid(&py->cache, pid);
	ember_interp_procs_exit(&py->procs, pid);
}

/* ---- code objects ---- */

/* The cached code object of (pid, addr, checksum), read on a miss; NULL without memory.
 * Only warm (the sample just taken) reads again one found stale whose retry is due: later,
 * when the sample is named, the memory may hold anything. */
static struct py_code *code_of(struct ember_python *py, struct py_process *p, uint64_t addr,
                               uint32_t checksum, uint64_t now_ns, bool warm)
{
	struct ember_interp_key key = {p->proc.pid, checksum, addr};
	struct py_code *c = ember_interp_cache_find(&py->cache, &key, warm ? now_ns : 0), v;
	struct ember_py_code code;
	int err;

	if (c || !p->layout.major)
		return c;
	/* Not in the cache: read it, if the process can be read now. */
	err = ember_interp_mem_open(&p->proc.mem, py->broker, now_ns);
	if (err == -EAGAIN || err == -ETIMEDOUT)
		return NULL; /* the broker is busy: another sample tries again */
	py->stats.code_reads++;
	if (!err)
		err = ember_py_read_code(&p->layout, &p->types, ember_interp_mem_read, &p->proc.mem,
		                         addr, &code);
	if (err) {
		py->stats.code_read_errors++;
		memset(&code, 0, sizeof(code));
	} else if (checksum && code.checksum != checksum) {
		/* Freed and reused since the sample: remembered as unnamed, never misnamed. */
		ember_py_code_free(&code);
		err = -ESTALE;
	}
	if (code.linetable_error) {
		free(code.linetable);
		code.linetable = NULL;
	}
	v = (struct py_code){
	    .error = err,
	    .lines = p->layout.lines,
	    .lasti_units = p->layout.lasti_units,
	    .firstlineno = code.firstlineno,
	    .nunits = code.nunits,
	    .name = code.name,
	    .file = code.file,
	    .linetable = code.linetable,
	    .linetable_len = code.linetable_error ? 0 : code.linetable_len,
	    .last_offset = INT64_MIN,
	    .last_line_error = code.linetable_error ? code.linetable_error : -ENOENT,
	};
	c = ember_interp_cache_add(&py->cache, &key, &v,
	                           sizeof(v) + v.linetable_len + (v.name ? strlen(v.name) : 0) +
	                               (v.file ? strlen(v.file) : 0),
	                           ember_interp_cache_expiry(err, now_ns));
	if (!c)
		release_code(&v);
	return c;
}

static uint64_t frame_key(struct ember_python *py, uint32_t pid, uint64_t w0, uint64_t w1)
{
	uint64_t k[3] = {pid, w0, w1};

	return ember_hash(&py->hash_key, k, sizeof(k));
}

static void python_frame(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns,
                         struct ember_interp_frame *out)
{
	struct ember_python *py = state;
	struct py_process *p = ember_interp_procs_get(&py->procs, pid, false);
	uint64_t addr = w0 & EMBER_INTERP_PAYLOAD_MASK;
	uint32_t checksum = (uint32_t)w1;
	int64_t offset = (int32_t)(w1 >> 32);
	struct py_code *c = p ? code_of(py, p, addr, checksum, now_ns, false) : NULL;

	out->key = frame_key(py, pid, w0, w1);
	py->stats.frames++;
	if (!c || !c->name) {
		if (c && c->error == -ESTALE)
			py->stats.frames_stale++;
		else
			py->stats.frames_unreadable++;
		return;
	}
	py->stats.frames_named++;
	out->name = c->name;
	out->file = c->file;
	out->firstlineno = c->firstlineno;
	if (c->lasti_units)
		offset *= 2;
	if (offset != c->last_offset) {
		c->last_offset = offset;
		if (c->nunits && offset >= (int64_t)(2 * c->nunits))
			c->last_line_error = -ERANGE;
		else
			c->last_line_error =
			    c->linetable ? ember_py_line(c->lines, c->linetable, c->linetable_len,
			                                 c->firstlineno, offset, &c->last_line)
					 : -ENOENT;
	}
	if (c->last_line_error)
		py->stats.frames_no_line++;
	else
		out->line = c->last_line > 0 ? c->last_line : 0;
}

/* Code objects are read at sample time, while the process lives and before they are freed. */
static void python_warm(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns)
{
	struct ember_python *py = state;
	struct py_process *p = ember_interp_procs_get(&py->procs, pid, false);

	if (p)
		code_of(py, p, w0 & EMBER_INTERP_PAYLOAD_MASK, (uint32_t)w1, now_ns, true);
}

static const char *python_marker(void *state, uint64_t w0)
{
	struct ember_python *py = state;

	switch (w0 & 0xff) {
	case EMBER_INTERP_MARK_TRUNCATED:
		py->stats.markers_truncated++;
		return "[python frames truncated]";
	case EMBER_INTERP_MARK_UNREADABLE:
		py->stats.markers_unreadable++;
		return "[python frame not readable]";
	default:
		return "[python frames stopped]";
	}
}

static void python_stats(void *state, const struct ember_stat_sink *sink)
{
	const struct ember_python *py = state;
	const struct ember_python_stats *ps = &py->stats;

	ember_stat(sink, "python.processes", py->procs.processes);
	ember_stat(sink, "python.processes_unsupported", py->procs.unsupported);
	ember_stat(sink, "python.rows_sent", py->procs.rows_sent);
	ember_stat(sink, "python.frames", ps->frames);
	ember_stat(sink, "python.frames_named", ps->frames_named);
	ember_stat(sink, "python.frames_stale", ps->frames_stale);
	ember_stat(sink, "python.frames_unreadable", ps->frames_unreadable);
	ember_stat(sink, "python.frames_no_line", ps->frames_no_line);
	ember_stat(sink, "python.markers_truncated", ps->markers_truncated);
	ember_stat(sink, "python.markers_unreadable", ps->markers_unreadable);
	ember_stat(sink, "python.code_reads", ps->code_reads);
	ember_stat(sink, "python.code_read_errors", ps->code_read_errors);
	ember_stat(sink, "python.cache_evictions", py->cache.evictions);
	ember_stat(sink, "python.files_read", py->files.files_read);
}

const struct ember_interp_ops ember_python_ops = {
    .init = python_init,
    .free = python_free,
    .on_maps = python_on_maps,
    .on_exit_ahead = python_on_exit_ahead,
    .on_exec = python_on_exec,
    .on_exit = python_on_exit,
    .warm = python_warm,
    .frame = python_frame,
    .marker = python_marker,
    .stats = python_stats,
};
