// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/v8.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/v8.h"
#include "shared/hash.h"
#include "shared/log.h"
#include "symbolizer/interp/interp_cache.h"
#include "symbolizer/interp/interp_files.h"
#include "symbolizer/interp/interp_mem.h"
#include "symbolizer/interp/interp_procs.h"
#include "symbolizer/interp/v8_code.h"
#include "symbolizer/interp/v8_elf.h"
#include "symbolizer/interp/v8_function.h"

#define ADDR_MASK ((1ull << EMBER_V8_ADDR_BITS) - 1)
/* What a cached value is, in its key's top bits (addresses are below 1 << 48). */
#define KEY_FUNCTION (1ull << 56) /* a frame's function, by the walker's checksum */
#define KEY_CODE     (2ull << 56) /* a Code, by the walker's checksum */
#define KEY_SCOPE    (3ull << 56) /* a function a Code names, by that Code's checksum */
#define KEY_SCRIPT   (4ull << 56) /* a script, by its source's and line ends' addresses */

/* Counters for the statistics (v8.*). */
struct ember_v8_stats {
	uint64_t frames, frames_named, frames_interpreted, frames_compiled, frames_function;
	uint64_t frames_inlined, frames_stale, frames_unreadable;
	uint64_t markers_truncated, markers_unreadable;
	uint64_t reads, read_errors;
};

struct ember_v8 {
	struct ember_broker_client *broker;
	struct ember_hash_key hash_key;
	struct ember_interp_files files; /* struct ember_v8_elf of each file */
	struct ember_interp_procs procs; /* struct v8_process, by pid */
	struct ember_interp_cache cache; /* struct v8_value, by (pid, what, checksum) */
	struct ember_v8_stats stats;
	struct ember_interp_inlined inlined[EMBER_INTERP_MAX_INLINED]; /* the last frame's */
};

#define CODE_RANGES 64 /* Code objects a process's frames were found in by their pc */

struct v8_process {
	struct ember_interp_proc proc; /* pid, row sent, its memory */
	struct ember_v8_proc row;
	struct ember_v8_layout layout;
	/* The map of the objects in code space that hold instructions, learnt from the first
	 * Code read; and the Codes found by a pc, by their instructions' range. */
	uint64_t code_space_map;
	struct {
		uint64_t start, end, code;
		uint32_t checksum;
	} ranges[CODE_RANGES];
	uint32_t next_range;
};

/* A function (its name, file and the lines of its own source range), a script, a Code, or
 * the failure to read one (error). */
struct v8_value {
	int error; /* -ESTALE: what is there now is another one; else why it was not read */
	char *name, *file;
	int32_t start, end, first_line;
	int32_t *ends; /* the line ends inside [start, end) */
	uint32_t nends;
	uint8_t *table; /* an interpreted function's bytecode position table */
	uint32_t table_len;
	struct ember_v8_script script;
	struct ember_v8_code code;
};

static int read_file_facts(int fd, const char *path, void *facts)
{
	(void)path;
	return ember_v8_elf_read(fd, facts);
}

static void v8_free(void *state);

static void release_value(void *value)
{
	struct v8_value *v = value;

	free(v->name);
	free(v->file);
	free(v->ends);
	free(v->table);
	ember_v8_script_free(&v->script);
	ember_v8_code_free(&v->code);
	v->name = v->file = NULL;
	v->ends = NULL;
	v->table = NULL;
}

static int v8_init(void **state, uint32_t flags, struct ember_broker_client *broker)
{
	struct ember_v8 *v = calloc(1, sizeof(*v));
	int err;

	(void)flags;
	if (!v)
		return -ENOMEM;
	*state = v;
	v->broker = broker;
	err = ember_hash_key_init(&v->hash_key);
	if (!err)
		err = ember_interp_files_init(&v->files, sizeof(struct ember_v8_elf),
		                              EMBER_V8_MAX_FILES, read_file_facts,
		                              EMBER_V8_FILE_RETRY_NS);
	if (!err)
		err = ember_interp_procs_init(&v->procs, sizeof(struct v8_process),
		                              EMBER_V8_MAX_TRACKED, broker, EMBER_RUNTIME_V8, "V8");
	if (!err)
		err = ember_interp_cache_init(&v->cache, sizeof(struct v8_value),
		                              EMBER_V8_CACHE_ENTRIES, EMBER_V8_CACHE_BYTES,
		                              release_value);
	if (err) {
		v8_free(v);
		*state = NULL;
	}
	return err;
}

static void v8_free(void *state)
{
	struct ember_v8 *v = state;

	ember_interp_cache_free(&v->cache);
	ember_interp_files_free(&v->files);
	ember_interp_procs_free(&v->procs);
	free(v);
}

/* ---- detection ---- */

static bool is_node(const struct ember_maps *maps, const struct ember_map_entry *e)
{
	const char *path = ember_maps_path(maps, e), *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strcmp(base, "node") || !strncmp(base, "libnode.so", 10);
}

/* node's (or libnode's) facts (a copy) and its executable mapping; false without one. */
static bool find_node(struct ember_v8 *v, uint32_t pid, const struct ember_maps *maps,
                      uint64_t now_ns, struct ember_v8_elf *elf, const struct ember_map_entry **map)
{
	for (size_t i = 0; i < maps->count; i++) {
		const struct ember_map_entry *e = &maps->entries[i];
		const struct ember_v8_elf *f;

		/* Debian's node is a small program on libnode, which holds V8: the first file
		 * with a V8 in it. */
		if (e->kind != EMBER_MAP_FILE || !e->inode || e->deleted ||
		    !(e->perms & EMBER_MAP_X) || !is_node(maps, e) ||
		    !(f = ember_interp_files_get(&v->files, v->broker, pid, maps, e, now_ns)) ||
		    f->kind == EMBER_V8_ELF_OTHER)
			continue;
		*elf = *f;
		*map = e;
		return true;
	}
	return false;
}

/*
 * The code range: the process's anonymous executable mappings (V8's code space) and the
 * builtins' copy, spanning at most EMBER_V8_CODE_RANGE from the first. V8 reserves its code
 * range whole and commits pages in it as code needs them: every such mapping of the
 * process is in it but for other JITs' (a wasm module's), which the walker then reads as
 * frames without a function. Twice V8's largest range: Node 24 maps a 509.5 MiB range and
 * further code 2 MiB past its end, where mmap happens to put it (511.75 MiB from the
 * range's start here), and a bound at 512 MiB would leave that code out on some runs.
 */
static void code_range(const struct ember_maps *maps, const uint64_t copy[2], uint64_t out[2])
{
	uint64_t lo = copy[0], hi = copy[1];

	for (size_t i = 0; i < maps->count; i++) {
		const struct ember_map_entry *e = &maps->entries[i];
		uint64_t nlo, nhi;

		if (e->kind != EMBER_MAP_ANON || !(e->perms & EMBER_MAP_X))
			continue;
		nlo = lo && lo < e->start ? lo : e->start;
		nhi = hi > e->end ? hi : e->end;
		if (nhi - nlo > EMBER_V8_CODE_RANGE)
			continue;
		lo = nlo;
		hi = nhi;
	}
	out[0] = lo;
	out[1] = hi;
}

/*
 * Where the builtins run when V8 copied them into its code range (short builtin calls,
 * Node 20 on, on hosts with 4 GiB of memory or more): V8 maps the blob's pages of node
 * (the same file) there again, and keeps that address in the isolate, while the global
 * current_embedded_blob_code_ may still name the original. The copy is an executable
 * mapping of node whose pages, at that offset, are not where the file's own load put them
 * and hold the whole blob: its address, or 0.
 */
static uint64_t blob_copy(const struct ember_maps *maps, const struct ember_map_entry *node,
                          const struct ember_v8_elf *elf, uint64_t bias)
{
	for (size_t i = 0; i < maps->count; i++) {
		const struct ember_map_entry *e = &maps->entries[i];
		uint64_t b;

		if (e->kind != EMBER_MAP_FILE || e->inode != node->inode ||
		    e->dev_major != node->dev_major || e->dev_minor != node->dev_minor ||
		    !(e->perms & EMBER_MAP_X) ||
		    !ember_elf_bias(elf->segs, elf->nsegs, e->offset, e->start, &b) || b == bias)
			continue;
		if (elf->blob_code + b >= e->start &&
		    elf->blob_code + b + elf->blob_code_size <= e->end)
			return elf->blob_code + b;
	}
	return 0;
}

/* The row: V8's builtins where the file has them and where the running V8 uses them, its
 * code range, and the layout's offsets. */
static int fill_row(struct v8_process *p, const struct ember_v8_elf *elf, uint64_t bias,
                    const struct ember_maps *maps, const struct ember_map_entry *node,
                    struct ember_v8_proc *r)
{
	const struct ember_v8_layout *l = &elf->layout;
	uint64_t current = 0, copy[2] = {0, 0}, range[2];

	memset(r, 0, sizeof(*r));
	if (elf->current_blob_var &&
	    ember_interp_mem_read(&p->proc.mem, elf->current_blob_var + bias, &current,
	                          sizeof(current)))
		return -EFAULT;
	r->code_start[0] = elf->blob_code + bias;
	r->code_end[0] = r->code_start[0] + elf->blob_code_size;
	if (!current || current == r->code_start[0])
		current = blob_copy(maps, node, elf, bias);
	if (current && current != r->code_start[0] && current < EMBER_INTERP_USER_LIMIT) {
		copy[0] = current;
		copy[1] = current + elf->blob_code_size;
		r->code_start[1] = copy[0];
		r->code_end[1] = copy[1];
	}
	/* V8 13: the dispatch table's base, from the isolate group, set up while V8 starts. */
	if (elf->isolate_group_var) {
		uint64_t group = 0;

		if (ember_interp_mem_read(&p->proc.mem, elf->isolate_group_var + bias, &group,
		                          sizeof(group)) ||
		    (group &&
		     ember_interp_mem_read(&p->proc.mem, group + elf->dispatch_table_offset,
		                           &r->dispatch_table, sizeof(r->dispatch_table))))
			return -EFAULT;
		/* Not set up yet: read again at the next reading of the maps. */
		if (!group || !r->dispatch_table || r->dispatch_table >= EMBER_INTERP_USER_LIMIT)
			return -EAGAIN;
	}
	code_range(maps, copy, range);
	/* The copy, when there is one, lies in the code range: range 2 holds it too, and the
	 * walker looks at range 1 first. */
	r->code_start[2] = range[0];
	r->code_end[2] = range[1];
	r->fp_marker = (int16_t)l->fp_marker;
	r->fp_function = (int16_t)l->fp_function;
	r->fp_bytecode_array = (int16_t)l->fp_bytecode_array;
	r->fp_bytecode_offset = (int16_t)l->fp_bytecode_offset;
	r->map_instance_type = (uint16_t)l->map_instance_type;
	r->type_sfi = (uint16_t)l->type_sfi;
	r->type_bytecode_array = (uint16_t)l->type_bytecode_array;
	r->type_code = (uint16_t)l->type_code;
	r->fn_shared = (uint16_t)l->fn_shared;
	r->fn_code = (uint16_t)l->fn_code;
	r->sfi_name_or_scope_info = (uint16_t)l->sfi_name_or_scope_info;
	r->sfi_script_or_debug_info = (uint16_t)l->sfi_script;
	r->code_instruction_start = (uint16_t)l->code_instruction_start;
	r->code_instruction_size = (uint16_t)l->code_instruction_size;
	r->code_flags = (uint16_t)l->code_flags;
	r->code_kind_mask = (uint8_t)l->code_kind_mask;
	r->code_kind_shift = (uint8_t)l->code_kind_shift;
	r->code_kind_baseline = (uint8_t)l->code_kind_baseline;
	r->code_start_inline = l->code_start_inline;
	r->bytecode_data = (uint8_t)l->bytecode_data;
	r->version = (uint8_t)((l->version[0] > 15 ? 15 : l->version[0]) << 4 |
	                       (l->version[1] > 15 ? 15 : l->version[1]));
	return 0;
}

static void v8_on_maps(void *state, uint32_t pid, const struct ember_maps *maps, uint64_t now_ns)
{
	struct ember_v8 *v = state;
	const struct ember_map_entry *map = NULL;
	struct ember_v8_elf elf;
	struct ember_v8_proc row;
	struct v8_process *p;
	bool found = find_node(v, pid, maps, now_ns, &elf, &map);
	uint64_t bias = 0;
	int err;

	p = ember_interp_procs_get(&v->procs, pid, found);
	if (!found || !p) {
		ember_interp_procs_remove_row(&v->procs, p ? &p->proc : NULL);
		return;
	}
	ember_interp_procs_seen(&v->procs, &p->proc);
	if (elf.kind != EMBER_V8_ELF_V8 ||
	    !ember_elf_bias(elf.segs, elf.nsegs, map->offset, map->start, &bias)) {
		ember_interp_procs_unsupported(&v->procs, &p->proc,
		                               elf.kind == EMBER_V8_ELF_UNSUPPORTED
		                                   ? elf.why
		                                   : "its node is mapped in an unexpected way");
		return;
	}
	err = ember_interp_mem_open(&p->proc.mem, v->broker, now_ns);
	if (err == -EAGAIN || err == -ETIMEDOUT)
		return; /* the broker is busy: the next reading of the maps tries again */
	if (!err)
		err = fill_row(p, &elf, bias, maps, map, &row);
	if (err == -EAGAIN)
		return;
	if (err) {
		ember_interp_procs_unsupported(&v->procs, &p->proc, "its memory cannot be read");
		return;
	}
	p->layout = elf.layout;
	if (ember_interp_procs_set_row(&v->procs, &p->proc, &p->row, &row, sizeof(row)))
		log_debug("pid %u: V8 %u.%u.%u, builtins' copy %#llx, code range %#llx-%#llx", pid,
		          elf.layout.version[0], elf.layout.version[1], elf.layout.version[2],
		          (unsigned long long)row.code_start[1],
		          (unsigned long long)row.code_start[2],
		          (unsigned long long)row.code_end[2]);
}

static void v8_on_exit_ahead(void *state, uint32_t pid)
{
	ember_interp_procs_exit_ahead(&((struct ember_v8 *)state)->procs, pid);
}

static void v8_on_exec(void *state, uint32_t pid)
{
	struct ember_v8 *v = state;

	ember_interp_cache_drop_pid(&v->cache, pid);
	ember_interp_procs_exec(&v->procs, pid);
}

static void v8_on_exit(void *state, uint32_t pid)
{
	struct ember_v8 *v = state;

	ember_interp_cache_drop_pid(&v->cache, pid);
	ember_interp_procs_exit(&v->procs, pid);
}

/* ---- reading ---- */

static struct v8_value *value_of(struct ember_v8 *v, struct v8_process *p, uint64_t what,
                                 uint64_t addr, uint32_t checksum, uint64_t now_ns, bool warm);

/* The SharedFunctionInfo's checksum, as the walker makes it. */
static int sfi_checksum(const struct ember_v8_heap *h, uint64_t sfi, uint32_t *sum)
{
	uint64_t a, b;

	if (ember_v8_field(h, sfi + 1, h->l->sfi_name_or_scope_info, &a) ||
	    ember_v8_field(h, sfi + 1, h->l->sfi_script, &b))
		return -EFAULT;
	*sum = ember_interp_checksum(sfi, a, b);
	return 0;
}

/* The lines of the function's source range, from its script (read through the cache). */
static void function_lines(struct ember_v8 *v, struct v8_process *p, const struct ember_v8_heap *h,
                           const struct ember_v8_function *f, uint64_t now_ns, struct v8_value *out)
{
	uint64_t source = 0, ends = 0;
	struct v8_value *s;
	uint32_t first = 0, last;

	if (!f->script || ember_v8_field(h, f->script, h->l->script_source, &source) ||
	    ember_v8_field(h, f->script, h->l->script_line_ends, &ends))
		return;
	s = value_of(v, p, KEY_SCRIPT, f->script - 1,
	             ember_interp_checksum(f->script, source, ends), now_ns, true);
	if (!s || s->error || !s->script.name)
		return;
	out->file = strdup(s->script.name);
	if (f->start < 0)
		return;
	out->first_line = ember_v8_script_line(&s->script, f->start);
	while (first < s->script.nends && s->script.ends[first] < f->start)
		first++;
	last = first;
	while (last < s->script.nends && s->script.ends[last] < f->end)
		last++;
	if (last > first && (out->ends = malloc(sizeof(int32_t) * (last - first))) != NULL) {
		memcpy(out->ends, s->script.ends + first, sizeof(int32_t) * (last - first));
		out->nends = last - first;
	}
}

/* Reads a function (its name, file, lines; its bytecode's positions when bytecode): 0 or
 * why not (-ESTALE: another object is there now). */
static int read_function(struct ember_v8 *v, struct v8_process *p, const struct ember_v8_heap *h,
                         uint64_t sfi, uint32_t checksum, bool check, uint64_t now_ns,
                         struct v8_value *out)
{
	struct ember_v8_function f;
	uint32_t sum;
	int err;

	if (check) {
		err = sfi_checksum(h, sfi, &sum);
		if (err)
			return err;
		if (sum != checksum)
			return -ESTALE;
	}
	err = ember_v8_function_read(h, sfi, &f);
	if (err)
		return err == -EINVAL ? -ESTALE : err;
	out->name = f.name;
	out->start = f.start;
	out->end = f.end;
	function_lines(v, p, h, &f, now_ns, out);
	err = ember_v8_bytecode_table(h, sfi, &out->table, &out->table_len);
	return err == -ENOENT ? 0 : err;
}

static int read_value(struct ember_v8 *v, struct v8_process *p, const struct ember_interp_key *k,
                      uint64_t now_ns, struct v8_value *out)
{
	const struct ember_v8_heap h = {&p->layout, ember_interp_mem_read, &p->proc.mem};
	uint64_t what = k->addr & ~ADDR_MASK, addr = k->addr & ADDR_MASK;
	int err;

	if (what == KEY_SCRIPT)
		return ember_v8_script_read(&h, addr + 1, &out->script);
	if (what == KEY_CODE) {
		err = ember_v8_code_read(&h, addr, &out->code);
		if (!err &&
		    ember_interp_checksum(addr, out->code.start, out->code.sfi) != k->checksum)
			err = -ESTALE;
		if (!err && !p->code_space_map)
			p->code_space_map = out->code.code_space_map;
		return err == -EINVAL ? -ESTALE : err;
	}
	return read_function(v, p, &h, addr, k->checksum, what == KEY_FUNCTION, now_ns, out);
}

static size_t value_bytes(const struct v8_value *v)
{
	return sizeof(*v) + (v->name ? strlen(v->name) : 0) + (v->file ? strlen(v->file) : 0) +
	       v->nends * 4 + v->table_len + v->code.table_len + v->script.nends * 4 +
	       (v->script.name ? strlen(v->script.name) : 0);
}

/* The cached value of key, read on a miss; NULL without memory. */
static struct v8_value *value_of(struct ember_v8 *v, struct v8_process *p, uint64_t what,
                                 uint64_t addr, uint32_t checksum, uint64_t now_ns, bool warm)
{
	struct ember_interp_key key = {p->proc.pid, checksum, what | (addr & ADDR_MASK)};
	struct v8_value val = {0}, *c = ember_interp_cache_find(&v->cache, &key, warm ? now_ns : 0);
	int err;

	if (c)
		return c;
	err = ember_interp_mem_open(&p->proc.mem, v->broker, now_ns);
	if (err == -EAGAIN || err == -ETIMEDOUT)
		return NULL; /* the broker is busy: another sample tries again */
	v->stats.reads++;
	if (!err)
		err = read_value(v, p, &key, now_ns, &val);
	if (err && err != -ESTALE)
		v->stats.read_errors++;
	if (err)
		release_value(&val);
	val.error = err;
	c = ember_interp_cache_add(&v->cache, &key, &val, value_bytes(&val),
	                           ember_interp_cache_expiry(err, now_ns));
	if (!c)
		release_value(&val);
	return c;
}

/* The line of script offset `offset` in the function f (read with its lines); 0: unknown. */
static int32_t line_in(const struct v8_value *f, int32_t offset)
{
	uint32_t n = 0;

	if (!f->first_line || offset < f->start || offset > f->end)
		return 0;
	while (n < f->nends && f->ends[n] < offset)
		n++;
	return f->first_line + (int32_t)n;
}

/* ---- frames ---- */

/* The Code holding pc, read at sample time: the function's own baseline code (its function
 * data, which needs no map learned first), else the nearest Code header before pc
 * (ember_v8_code_at, once a Code read in the process gave its map). */
static int find_code(const struct ember_v8_heap *h, const struct v8_process *p, uint64_t sfi,
                     uint64_t pc, struct ember_v8_code *found)
{
	uint64_t data;

	if (!ember_v8_field(h, sfi + 1, p->layout.sfi_function_data, &data) &&
	    ember_v8_is_object(data) && !ember_v8_code_read(h, data - 1, found)) {
		if (pc >= found->start && pc - found->start < found->size)
			return 0;
		ember_v8_code_free(found);
	}
	if (!p->code_space_map)
		return -ENOENT;
	return ember_v8_code_at(h, p->code_space_map, pc, found);
}

/* The Code holding pc, for a frame known by its function (sfi): found once at sample time
 * (find_code), then by the range its instructions cover. NULL when none is found. */
static struct v8_value *code_at(struct ember_v8 *v, struct v8_process *p, uint64_t sfi, uint64_t pc,
                                uint64_t now_ns, bool warm)
{
	const struct ember_v8_heap h = {&p->layout, ember_interp_mem_read, &p->proc.mem};
	struct ember_v8_code found;
	uint64_t code;
	uint32_t i;

	for (i = 0; i < CODE_RANGES; i++) {
		struct v8_value *c;

		if (pc < p->ranges[i].start || pc >= p->ranges[i].end)
			continue;
		c = value_of(v, p, KEY_CODE, p->ranges[i].code, p->ranges[i].checksum, now_ns,
		             warm);
		/* Code that is not there any more (freed, moved): its range goes, and the pc is
		 * looked for again at sample time. */
		if (!c || !c->error || !warm)
			return c;
		p->ranges[i].end = 0;
		break;
	}
	if (!warm || ember_interp_mem_open(&p->proc.mem, v->broker, now_ns))
		return NULL;
	v->stats.reads++;
	if (find_code(&h, p, sfi, pc, &found))
		return NULL;
	code = found.code;
	i = p->next_range++ % CODE_RANGES;
	p->ranges[i].start = found.start;
	p->ranges[i].end = found.start + found.size;
	p->ranges[i].code = code;
	p->ranges[i].checksum = ember_interp_checksum(code, found.start, found.sfi);
	ember_v8_code_free(&found);
	return value_of(v, p, KEY_CODE, code, p->ranges[i].checksum, now_ns, warm);
}

/* The script offset a function's baseline code c runs at pc_offset, through its bytecode
 * (the bytecode offset the pc stands for, then the bytecode's position): -1 when not known,
 * or when c is not the function's baseline code (its function data, read now). */
static int32_t baseline_position(struct ember_v8 *v, struct v8_process *p, uint64_t sfi,
                                 uint32_t checksum, const struct ember_v8_code *c,
                                 uint32_t pc_offset, uint64_t now_ns, bool warm)
{
	const struct ember_v8_heap h = {&p->layout, ember_interp_mem_read, &p->proc.mem};
	int32_t off = ember_v8_baseline_offset(&p->layout, c, pc_offset);
	struct v8_value *f;
	uint64_t data, raw;

	if (off < 0 || ember_v8_field(&h, sfi + 1, p->layout.sfi_function_data, &data) ||
	    data != c->code + 1)
		return -1;
	f = value_of(v, p, KEY_FUNCTION, sfi, checksum, now_ns, warm);
	if (!f || f->error || !f->table ||
	    ember_v8_position_at(f->table, f->table_len, (uint32_t)off, &raw))
		return -1;
	return ember_v8_position_decode(raw).script_offset;
}

/* The functions a frame runs, innermost first, with their script offsets: its own for an
 * interpreted or function frame; the Code's scopes at its pc (a function frame's, when
 * its pc is in a Code of that function: *via_code). How many; 0 when not read. */
static int scopes_of(struct ember_v8 *v, struct v8_process *p, uint64_t w0, uint64_t w1,
                     uint64_t now_ns, bool warm, struct ember_v8_scope *scope, bool *via_code)
{
	uint64_t kind = w0 >> EMBER_V8_ADDR_BITS & 0xf, addr = w0 & ADDR_MASK;
	struct v8_value *c;

	*via_code = false;
	if (kind == EMBER_V8_FRAME_FUNCTION && (w1 >> 32) && p->row.code_end[2]) {
		uint64_t pc = p->row.code_start[2] + (w1 >> 32) - 1;

		c = code_at(v, p, addr, pc, now_ns, warm);
		if (c && !c->error && c->code.sfi == addr) {
			*via_code = true;
			return ember_v8_code_scopes(&c->code, (uint32_t)(pc - c->code.start), scope,
			                            EMBER_V8_MAX_SCOPES);
		}
		if (c && !c->error && c->code.baseline) {
			scope[0] = (struct ember_v8_scope){addr, -1};
			scope[0].script_offset =
			    baseline_position(v, p, addr, (uint32_t)w1, &c->code,
			                      (uint32_t)(pc - c->code.start), now_ns, warm);
			return 1;
		}
	}
	if (kind == EMBER_V8_FRAME_CODE) {
		c = value_of(v, p, KEY_CODE, addr, (uint32_t)w1, now_ns, warm);
		if (!c || c->error)
			return 0;
		return ember_v8_code_scopes(&c->code, (uint32_t)(w1 >> 32), scope,
		                            EMBER_V8_MAX_SCOPES);
	}
	scope[0] = (struct ember_v8_scope){addr, -1};
	if (kind == EMBER_V8_FRAME_BYTECODE) {
		struct v8_value *f = value_of(v, p, KEY_FUNCTION, addr, (uint32_t)w1, now_ns, warm);
		int32_t off = ember_v8_bytecode_offset(&p->layout, (int32_t)(w1 >> 32));
		uint64_t raw;

		if (f && !f->error && f->table && off >= 0 &&
		    !ember_v8_position_at(f->table, f->table_len, (uint32_t)off, &raw))
			scope[0].script_offset = ember_v8_position_decode(raw).script_offset;
	}
	return 1;
}

/* The function of scope i of a frame: checked against the walker's checksum (cookie) for
 * an interpreted or function frame, tied to the Code's for a compiled one. */
static struct v8_value *scope_function(struct ember_v8 *v, struct v8_process *p, uint64_t kind,
                                       const struct ember_v8_scope *scope, uint32_t cookie,
                                       uint64_t now_ns, bool warm)
{
	if (!scope->sfi)
		return NULL;
	return value_of(v, p, kind == EMBER_V8_FRAME_CODE ? KEY_SCOPE : KEY_FUNCTION, scope->sfi,
	                cookie, now_ns, warm);
}

static void v8_frame(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns,
                     struct ember_interp_frame *out)
{
	struct ember_v8 *v = state;
	struct v8_process *p = ember_interp_procs_get(&v->procs, pid, false);
	uint64_t kind = w0 >> EMBER_V8_ADDR_BITS & 0xf,
		 k[2 + 2 * EMBER_V8_MAX_SCOPES] = {pid, kind};
	struct ember_v8_scope scope[EMBER_V8_MAX_SCOPES];
	int n = 0, stale = 0;
	bool via_code = false;

	v->stats.frames++;
	if (p)
		n = scopes_of(v, p, w0, w1, now_ns, false, scope, &via_code);
	/* The outermost scope names the frame; the inner ones were inlined into it. */
	for (int i = n - 1; i >= 0; i--) {
		struct v8_value *f = scope_function(v, p, via_code ? EMBER_V8_FRAME_CODE : kind,
		                                    &scope[i], (uint32_t)w1, now_ns, false);
		struct ember_interp_inlined in = {NULL, NULL, 0};

		stale |= f && f->error == -ESTALE;
		if (f && !f->error && f->name) {
			in = (struct ember_interp_inlined){f->name, f->file ? f->file : "", 0};
			in.line = scope[i].script_offset >= 0 ? line_in(f, scope[i].script_offset)
			                                      : f->first_line;
			if (i == n - 1)
				out->firstlineno = f->first_line;
		}
		k[2 + 2 * i] = in.name ? scope[i].sfi : 0;
		k[3 + 2 * i] = (uint64_t)in.line;
		if (i == n - 1) {
			out->name = in.name;
			out->file = in.file;
			out->line = in.line;
		} else if ((uint32_t)i < EMBER_INTERP_MAX_INLINED) {
			v->inlined[i] = in;
		}
	}
	if (n > 1 && out->name)
		for (int i = 0; i < n - 1 && (uint32_t)i < EMBER_INTERP_MAX_INLINED; i++)
			if (!v->inlined[i].name)
				v->inlined[i] = (struct ember_interp_inlined){"[unknown]", "", 0};
	out->inlined = n > 1 ? v->inlined : NULL;
	out->ninlined = n > 1 ? (uint32_t)(n - 1 < (int)EMBER_INTERP_MAX_INLINED
	                                       ? n - 1
	                                       : (int)EMBER_INTERP_MAX_INLINED)
	                      : 0;
	out->key = ember_hash(&v->hash_key, k, sizeof(uint64_t) * (2 + 2 * (size_t)(n ? n : 1)));
	if (!out->name) {
		k[2] = w0;
		k[3] = w1;
		out->key = ember_hash(&v->hash_key, k, 4 * sizeof(uint64_t));
		out->inlined = NULL;
		out->ninlined = 0;
		if (stale)
			v->stats.frames_stale++;
		else
			v->stats.frames_unreadable++;
		return;
	}
	v->stats.frames_named++;
	v->stats.frames_inlined += out->ninlined;
	v->stats.frames_interpreted += kind == EMBER_V8_FRAME_BYTECODE;
	v->stats.frames_compiled += kind == EMBER_V8_FRAME_CODE || via_code;
	v->stats.frames_function += kind == EMBER_V8_FRAME_FUNCTION && !via_code;
}

/* Frames are read at sample time, while their functions and Code are where they were. */
static void v8_warm(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns)
{
	struct ember_v8 *v = state;
	struct v8_process *p = ember_interp_procs_get(&v->procs, pid, false);
	uint64_t kind = w0 >> EMBER_V8_ADDR_BITS & 0xf;
	struct ember_v8_scope scope[EMBER_V8_MAX_SCOPES];
	bool via_code;
	int n;

	if (!p)
		return;
	n = scopes_of(v, p, w0, w1, now_ns, true, scope, &via_code);
	for (int i = 0; i < n; i++)
		scope_function(v, p, via_code ? EMBER_V8_FRAME_CODE : kind, &scope[i], (uint32_t)w1,
		               now_ns, true);
}

static const char *v8_marker(void *state, uint64_t w0)
{
	struct ember_v8 *v = state;

	switch (w0 & 0xff) {
	case EMBER_INTERP_MARK_TRUNCATED:
		v->stats.markers_truncated++;
		return "[v8 frames truncated]";
	case EMBER_INTERP_MARK_UNREADABLE:
		v->stats.markers_unreadable++;
		return "[v8 frame not readable]";
	default:
		return "[v8 frames stopped]";
	}
}

static void v8_stats(void *state, const struct ember_stat_sink *sink)
{
	const struct ember_v8 *v = state;
	const struct ember_v8_stats *s = &v->stats;

	ember_stat(sink, "v8.processes", v->procs.processes);
	ember_stat(sink, "v8.processes_unsupported", v->procs.unsupported);
	ember_stat(sink, "v8.rows_sent", v->procs.rows_sent);
	ember_stat(sink, "v8.frames", s->frames);
	ember_stat(sink, "v8.frames_named", s->frames_named);
	ember_stat(sink, "v8.frames_interpreted", s->frames_interpreted);
	ember_stat(sink, "v8.frames_compiled", s->frames_compiled);
	ember_stat(sink, "v8.frames_function", s->frames_function);
	ember_stat(sink, "v8.frames_inlined", s->frames_inlined);
	ember_stat(sink, "v8.frames_stale", s->frames_stale);
	ember_stat(sink, "v8.frames_unreadable", s->frames_unreadable);
	ember_stat(sink, "v8.markers_truncated", s->markers_truncated);
	ember_stat(sink, "v8.markers_unreadable", s->markers_unreadable);
	ember_stat(sink, "v8.reads", s->reads);
	ember_stat(sink, "v8.read_errors", s->read_errors);
	ember_stat(sink, "v8.cache_evictions", v->cache.evictions);
	ember_stat(sink, "v8.files_read", v->files.files_read);
}

const struct ember_interp_ops ember_v8_ops = {
    .init = v8_init,
    .free = v8_free,
    .on_maps = v8_on_maps,
    .on_exit_ahead = v8_on_exit_ahead,
    .on_exec = v8_on_exec,
    .on_exit = v8_on_exit,
    .warm = v8_warm,
    .frame = v8_frame,
    .marker = v8_marker,
    .stats = v8_stats,
};
