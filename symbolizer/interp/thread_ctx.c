// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/thread_ctx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shared/log.h"
#include "symbolizer/interp/go_labels.h"
#include "symbolizer/interp/interp_cache.h"
#include "symbolizer/interp/interp_files.h"
#include "symbolizer/interp/interp_procs.h"
#include "symbolizer/process/process_context.h"

_Static_assert((int)EMBER_ELF_TLS_LE == EMBER_TCTX_LE && (int)EMBER_ELF_TLS_IE == EMBER_TCTX_IE &&
                   (int)EMBER_ELF_TLS_DESC == EMBER_TCTX_DESC &&
                   (int)EMBER_ELF_TLS_GD == EMBER_TCTX_GD,
               "one numbering of the ways to a TLS variable");

#define GLIBC_DTV_SHIFT 4   /* the vector's head check (thread_ctx.bpf.h) is glibc's layout */

enum wanted { W_CTX, W_TLS_GET_ADDR, W_COUNT };

static const char *const wanted_names[W_COUNT] = {
    [W_CTX] = EMBER_TCTX_SYMBOL,
    [W_TLS_GET_ADDR] = "__tls_get_addr",
};

struct ember_thread_ctx {
	struct ember_broker_client *broker;
	struct ember_interp_files files;    /* struct ember_tctx_elf of each file */
	struct ember_interp_files go_files; /* struct ember_go_elf of each program */
	struct ember_interp_procs procs;    /* struct tctx_process, by pid */
	struct ember_interp_cache labels;   /* struct go_label_set, by (pid, address) */
	uint64_t label_reads, label_errors;
	uint64_t attr_reads, attr_errors, attrs_stale, attrs_unnamed;
};

struct tctx_process {
	struct ember_interp_proc proc; /* pid, row sent, its memory */
	struct ember_tctx_proc row;
	uint8_t go_minor;      /* a Go program's version (1.minor); 0: not Go */
	uint64_t context_addr; /* its process context's (for its attributes' names) */
};

/* A goroutine label set read (text NULL: it could not be). */
struct go_label_set {
	char *text; /* "key=value\n" lines */
};

static int read_elf(Elf *elf, void *facts)
{
	struct ember_tctx_elf *out = facts;
	struct ember_elf_sym syms[W_COUNT];
	struct ember_elf_image f;
	int err;

	memset(out, 0, sizeof(*out));
	err = ember_elf_image_start(elf, &f, out->segs, &out->nsegs, wanted_names, W_COUNT, syms);
	if (err)
		return err;
	out->executable = f.executable;
	out->has_dtv =
	    ember_elf_image_dtv(&f, &syms[W_TLS_GET_ADDR], &out->dtv_offset, &out->dtv_shift);
	/* The OTEP's variable: a pointer, thread-local. */
	out->defines = syms[W_CTX].type == STT_TLS && syms[W_CTX].size == 8;
	out->reachable =
	    out->defines && !ember_elf_tls_ref(&f, EMBER_TCTX_SYMBOL, syms[W_CTX].addr, &out->ref);
	return 0;
}

int ember_tctx_elf_read(int fd, struct ember_tctx_elf *out)
{
	return ember_elf_read_fd(fd, read_elf, out);
}

int ember_tctx_elf_read_mem(const void *image, size_t len, struct ember_tctx_elf *out)
{
	return ember_elf_read_memory(image, len, read_elf, out);
}

int ember_tctx_row(const struct ember_tctx_elf *elf, uint64_t bias, const struct ember_tctx_elf *ld,
                   struct ember_tctx_proc *row, const char **why)
{
	memset(row, 0, sizeof(*row));
	*why = NULL;
	if (!elf->reachable)
		*why = "its otel_thread_ctx_v1 is reached in a way ember does not read (local "
		       "dynamic TLS, or no relocation names it)";
	else if ((elf->ref.mode == EMBER_TCTX_DESC || elf->ref.mode == EMBER_TCTX_GD) &&
	         (!ld || !ld->has_dtv || ld->dtv_shift != GLIBC_DTV_SHIFT))
		*why = "it uses a dynamic linker other than glibc's";
	if (*why)
		return -ENOENT;
	row->mode = elf->ref.mode;
	row->offset = elf->ref.offset;
	if (elf->ref.mode != EMBER_TCTX_LE)
		row->slot = elf->ref.slot + bias;
	if (ld && ld->has_dtv) {
		row->dtv_offset = ld->dtv_offset;
		row->dtv_shift = ld->dtv_shift;
	}
	return 0;
}

static int read_file_facts(int fd, const char *path, void *facts)
{
	(void)path;
	return ember_tctx_elf_read(fd, facts);
}

static int read_go_facts(int fd, const char *path, void *facts)
{
	(void)path;
	return ember_go_elf_read(fd, facts);
}

static void release_labels(void *value)
{
	free(((struct go_label_set *)value)->text);
}

static void tctx_free(void *state)
{
	struct ember_thread_ctx *t = state;

	ember_interp_cache_free(&t->labels);
	ember_interp_files_free(&t->files);
	ember_interp_files_free(&t->go_files);
	ember_interp_procs_free(&t->procs);
	free(t);
}

static int tctx_init(void **state, uint32_t flags, struct ember_broker_client *broker)
{
	struct ember_thread_ctx *t = calloc(1, sizeof(*t));
	int err;

	(void)flags;
	if (!t)
		return -ENOMEM;
	t->broker = broker;
	err =
	    ember_interp_files_init(&t->files, sizeof(struct ember_tctx_elf), EMBER_TCTX_MAX_FILES,
	                            read_file_facts, EMBER_TCTX_FILE_RETRY_NS);
	if (!err)
		err = ember_interp_files_init(&t->go_files, sizeof(struct ember_go_elf),
		                              EMBER_TCTX_MAX_FILES, read_go_facts,
		                              EMBER_TCTX_FILE_RETRY_NS);
	if (!err)
		err = ember_interp_cache_init(&t->labels, sizeof(struct go_label_set),
		                              EMBER_TCTX_LABEL_SETS, EMBER_TCTX_LABEL_BYTES,
		                              release_labels);
	if (!err)
		err = ember_interp_procs_init(&t->procs, sizeof(struct tctx_process),
		                              EMBER_INTERP_MAX_PROCS, broker, EMBER_ROW_THREAD_CTX,
		                              "thread context");
	if (err) {
		tctx_free(t);
		t = NULL;
	}
	*state = t;
	return err;
}

/* A Go program (its executable mapped at e): the row to its goroutines' labels. */
static void go_on_maps(struct ember_thread_ctx *t, uint32_t pid, const struct ember_go_elf *go)
{
	struct tctx_process *p = ember_interp_procs_get(&t->procs, pid, true);
	struct ember_tctx_proc row = {.mode = EMBER_TCTX_GO, .offset = go->tls_g};

	if (!p)
		return;
	ember_interp_procs_seen(&t->procs, &p->proc);
	if (!go->minor || ember_go_offsets(go->minor, &row.go_m, &row.go_curg, &row.go_labels)) {
		ember_interp_procs_unsupported(&t->procs, &p->proc,
		                               "a Go version ember has no offsets for (it reads "
		                               "goroutine labels of Go 1.17 to 1.26)");
		return;
	}
	if (!go->has_tls) {
		ember_interp_procs_unsupported(
		    &t->procs, &p->proc,
		    "a stripped Go program linked statically with C (where "
		    "its goroutine is kept is not known)");
		return;
	}
	p->go_minor = go->minor;
	if (ember_interp_procs_set_row(&t->procs, &p->proc, &p->row, &row, sizeof(row)))
		log_debug("pid %u: Go 1.%u, goroutine labels read (g at tp%+lld)", pid, go->minor,
		          (long long)row.offset);
}

static void tctx_on_maps(void *state, uint32_t pid, const struct ember_maps *maps, uint64_t now_ns)
{
	struct ember_thread_ctx *t = state;
	/* Copies: a later lookup can move the cache's slots, or empty it when full. */
	struct ember_tctx_elf def = {0}, ld = {0};
	const struct ember_map_entry *def_map = NULL;
	struct ember_tctx_proc row;
	struct tctx_process *p;
	const char *why = NULL;
	uint64_t bias = 0;

	/* The program first (the lowest file mapping): Go has its goroutines' labels instead. */
	for (size_t i = 0; i < maps->count; i++) {
		const struct ember_map_entry *e = &maps->entries[i];
		const struct ember_go_elf *go;

		if (e->kind != EMBER_MAP_FILE)
			continue;
		if (e->inode && !e->deleted &&
		    (go = ember_interp_files_get(&t->go_files, t->broker, pid, maps, e, now_ns)) &&
		    go->is_go) {
			go_on_maps(t, pid, go);
			return;
		}
		break;
	}
	/* No process context, no thread context (its schema is the process context's). */
	for (size_t i = 0; maps->context_addr && i < maps->count; i++) {
		const struct ember_map_entry *e = &maps->entries[i];
		const struct ember_tctx_elf *f;

		if (e->kind != EMBER_MAP_FILE || !e->inode || e->deleted ||
		    !(e->perms & EMBER_MAP_X) ||
		    !(f = ember_interp_files_get(&t->files, t->broker, pid, maps, e, now_ns)))
			continue;
		if (f->defines && (!def_map || (f->executable && !def.executable))) {
			if (def_map && !def.executable)
				log_debug("pid %u: more than one file defines %s: the program's is "
				          "read",
				          pid, EMBER_TCTX_SYMBOL);
			def = *f;
			def_map = e;
		}
		if (!ld.has_dtv && f->has_dtv)
			ld = *f;
	}
	p = ember_interp_procs_get(&t->procs, pid, def_map != NULL);
	if (!def_map || !p) {
		ember_interp_procs_remove_row(&t->procs, p ? &p->proc : NULL);
		return;
	}
	ember_interp_procs_seen(&t->procs, &p->proc);
	if (!ember_elf_bias(def.segs, def.nsegs, def_map->offset, def_map->start, &bias))
		why = "the file that defines otel_thread_ctx_v1 is mapped in an unexpected way";
	if (why || ember_tctx_row(&def, bias, &ld, &row, &why)) {
		ember_interp_procs_unsupported(&t->procs, &p->proc, why);
		return;
	}
	if (p->context_addr != maps->context_addr)
		ember_interp_cache_drop_pid(&t->labels, pid); /* names read from the old one */
	p->context_addr = maps->context_addr;
	if (ember_interp_procs_set_row(&t->procs, &p->proc, &p->row, &row, sizeof(row)))
		log_debug("pid %u: thread contexts read (mode %u, slot %#llx, offset %lld)", pid,
		          row.mode, (unsigned long long)row.slot, (long long)row.offset);
}

static void tctx_on_exit_ahead(void *state, uint32_t pid)
{
	ember_interp_procs_exit_ahead(&((struct ember_thread_ctx *)state)->procs, pid);
}

static void tctx_on_exec(void *state, uint32_t pid)
{
	struct ember_thread_ctx *t = state;

	ember_interp_cache_drop_pid(&t->labels, pid);
	ember_interp_procs_exec(&t->procs, pid);
}

static void tctx_on_exit(void *state, uint32_t pid)
{
	struct ember_thread_ctx *t = state;

	ember_interp_cache_drop_pid(&t->labels, pid);
	ember_interp_procs_exit(&t->procs, pid);
}

/* Keeps text (malloc'd, or NULL for "could not be read": err) under key; the cached copy. */
static const char *keep_text(struct ember_thread_ctx *t, const struct ember_interp_key *key,
                             char *text, int err, uint64_t now_ns)
{
	struct go_label_set set = {text};
	struct go_label_set *c =
	    ember_interp_cache_add(&t->labels, key, &set, sizeof(set) + (text ? strlen(text) : 0),
	                           ember_interp_cache_expiry(err, now_ns));

	if (!c) {
		free(text);
		return NULL;
	}
	return c->text;
}

const char *ember_tctx_go_labels(void *state, uint32_t pid, uint64_t addr, const uint64_t head[2],
                                 uint64_t now_ns)
{
	struct ember_thread_ctx *t = state;
	struct tctx_process *p = ember_interp_procs_get(&t->procs, pid, false);
	struct ember_interp_key key = {pid, 0, addr};
	struct go_label_set *c;
	uint64_t now[2] = {0};
	/* What identifies the set at addr: a slice header (Go 1.24 and later), or the map's
	 * address (the 8 bytes after it are another object's). */
	size_t same = p && p->go_minor >= 24 ? 16 : 8;
	char *text;
	int err;

	if (!p || !p->go_minor)
		return NULL;
	/* The set's first bytes in the key: another set made at a freed one's address. */
	key.checksum = ember_interp_checksum(head[0], same > 8 ? head[1] : 0, addr);
	if ((c = ember_interp_cache_find(&t->labels, &key, now_ns)))
		return c->text;
	err = ember_interp_mem_open(&p->proc.mem, t->broker, now_ns);
	if (err == -EAGAIN || err == -ETIMEDOUT)
		return NULL; /* the broker is busy: another sample tries again */
	text = malloc(EMBER_GO_LABELS_TEXT);
	t->label_reads++;
	/* Still the set the sample saw (the garbage collector may have freed it since). */
	if (!err && !(err = ember_interp_mem_read(&p->proc.mem, addr, now, same)) &&
	    memcmp(now, head, same))
		err = -ESTALE;
	if (!err)
		err = text ? ember_go_read_labels(ember_interp_mem_read, &p->proc.mem, p->go_minor,
		                                  addr, text, EMBER_GO_LABELS_TEXT)
		           : -ENOMEM;
	if (err) {
		t->label_errors++;
		free(text);
		text = NULL;
	}
	/* A set is never changed once made: kept until the process execs or exits. */
	return keep_text(t, &key, text, err, now_ns);
}

/* The names of p's thread contexts' attributes, one a line by index, from its process
 * context (cached under checksum 1, address 0); NULL: none. */
static const char *attr_names(struct ember_thread_ctx *t, struct tctx_process *p, uint64_t now_ns)
{
	struct ember_interp_key key = {p->proc.pid, 1, 0};
	struct go_label_set *c = ember_interp_cache_find(&t->labels, &key, now_ns);
	struct ember_process_context *pc;
	char *text = NULL;
	size_t used = 0;
	int err;

	if (c)
		return c->text;
	pc = malloc(sizeof(*pc));
	err = pc ? ember_process_context_read(ember_interp_mem_read, &p->proc.mem, p->context_addr,
	                                      pc)
	         : -ENOMEM;
	if (!err && !(text = malloc(pc->nkeys * (EMBER_PROCESS_CONTEXT_MAX_KEY + 2) + 1)))
		err = -ENOMEM;
	for (uint32_t i = 0; !err && i < pc->nkeys; i++) {
		size_t n = strlen(pc->keys[i]);

		memcpy(text + used, pc->keys[i], n);
		text[used + n] = '\n';
		used += n + 1;
	}
	if (text)
		text[used] = '\0';
	free(pc);
	return keep_text(t, &key, text, err, now_ns);
}

void ember_tctx_attr_lines(const uint8_t *data, size_t len, const char *names, char *out,
                           size_t size, uint64_t *unnamed)
{
	const uint8_t *value[EMBER_PROCESS_CONTEXT_MAX_KEYS] = {0};
	uint8_t vlen[EMBER_PROCESS_CONTEXT_MAX_KEYS] = {0};
	size_t used = 0;

	for (size_t at = 0; at + 2 <= len && at + 2 + data[at + 1] <= len; at += 2 + data[at + 1]) {
		if (data[at] >= EMBER_PROCESS_CONTEXT_MAX_KEYS) {
			(*unnamed)++;
			continue;
		}
		value[data[at]] = data + at + 2;
		vlen[data[at]] = data[at + 1];
	}
	out[0] = '\0';
	for (unsigned k = 0; k < EMBER_PROCESS_CONTEXT_MAX_KEYS && names; k++) {
		const char *name = names, *end;
		size_t nl;

		for (unsigned i = 0; i < k && name; i++)
			name = (end = strchr(name, '\n')) ? end + 1 : NULL;
		if (!value[k])
			continue;
		nl = name && (end = strchr(name, '\n')) ? (size_t)(end - name) : 0;
		if (!nl) {
			(*unnamed)++;
			continue;
		}
		if (used + nl + vlen[k] + 3 > size)
			break;
		memcpy(out + used, name, nl);
		out[used + nl] = '=';
		for (unsigned i = 0; i < vlen[k]; i++) {
			char ch = (char)value[k][i];

			out[used + nl + 1 + i] = ch == '\n' || ch == '\r' || !ch ? ' ' : ch;
		}
		used += nl + 1 + vlen[k];
		out[used++] = '\n';
		out[used] = '\0';
	}
}

const char *ember_tctx_attrs(void *state, uint32_t pid, uint64_t record, const uint8_t trace_id[16],
                             const uint8_t span_id[8], uint64_t now_ns)
{
	struct ember_thread_ctx *t = state;
	uint64_t w[3];
	struct ember_interp_key key = {pid, 0, record};
	uint8_t buf[EMBER_TCTX_HEADER + EMBER_TCTX_MAX_ATTRS], again[EMBER_TCTX_HEADER];
	struct tctx_process *p;
	struct go_label_set *c;
	const char *names;
	char *text = NULL;
	uint16_t n;
	int err;

	/* The span's ids in the key: a record is reused from span to span. */
	memcpy(w, trace_id, 16);
	memcpy(w + 2, span_id, 8);
	key.checksum = ember_interp_checksum(w[0], w[1], w[2]);
	if ((c = ember_interp_cache_find(&t->labels, &key, now_ns)))
		return c->text;
	p = ember_interp_procs_get(&t->procs, pid, false);
	if (!p || !p->context_addr)
		return NULL;
	err = ember_interp_mem_open(&p->proc.mem, t->broker, now_ns);
	if (err == -EAGAIN || err == -ETIMEDOUT)
		return NULL;
	t->attr_reads++;
	if (!err)
		err = ember_interp_mem_read(&p->proc.mem, record, buf, EMBER_TCTX_HEADER);
	n = 0;
	if (!err)
		memcpy(&n, buf + 26, sizeof(n));
	if (n > EMBER_TCTX_MAX_ATTRS)
		n = EMBER_TCTX_MAX_ATTRS;
	if (!err && n)
		err = ember_interp_mem_read(&p->proc.mem, record + EMBER_TCTX_HEADER,
		                            buf + EMBER_TCTX_HEADER, n);
	/* And the header again: a writer that moved the record on to its next span between the
	 * two reads (it clears it, then writes ids, attributes and valid) left the ids read
	 * first beside the next span's attributes; once cached, every sample of the span would
	 * carry them. */
	if (!err && n)
		err = ember_interp_mem_read(&p->proc.mem, record, again, EMBER_TCTX_HEADER);
	if (!err && n && memcmp(buf, again, EMBER_TCTX_HEADER))
		buf[24] = 0; /* stale: below */
	/* The record must still be the sample's span's: else its attributes are another's. */
	if (!err && (memcmp(buf, trace_id, 16) || memcmp(buf + 16, span_id, 8) || buf[24] != 1)) {
		t->attrs_stale++;
		err = -ESTALE;
	}
	names = err ? NULL : attr_names(t, p, now_ns);
	if (!err && (text = malloc(EMBER_TCTX_ATTRS_TEXT)))
		ember_tctx_attr_lines(buf + EMBER_TCTX_HEADER, n, names, text,
		                      EMBER_TCTX_ATTRS_TEXT, &t->attrs_unnamed);
	else if (!err)
		err = -ENOMEM;
	t->attr_errors += err && err != -ESTALE;
	return keep_text(t, &key, text, err, now_ns);
}

/* It has no frames: the registry never passes it a frame word (no tag names it). */
static void tctx_warm(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns)
{
	(void)state, (void)pid, (void)w0, (void)w1, (void)now_ns;
}

static void tctx_frame(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns,
                       struct ember_interp_frame *out)
{
	(void)state, (void)pid, (void)w0, (void)w1, (void)now_ns, (void)out;
}

static const char *tctx_marker(void *state, uint64_t w0)
{
	(void)state, (void)w0;
	return NULL;
}

static void tctx_stats(void *state, const struct ember_stat_sink *sink)
{
	const struct ember_thread_ctx *t = state;

	ember_stat(sink, "thread_ctx.processes", t->procs.processes);
	ember_stat(sink, "thread_ctx.processes_unsupported", t->procs.unsupported);
	ember_stat(sink, "thread_ctx.rows_sent", t->procs.rows_sent);
	ember_stat(sink, "thread_ctx.files_read", t->files.files_read);
	ember_stat(sink, "go.label_sets_read", t->label_reads);
	ember_stat(sink, "go.label_sets_unreadable", t->label_errors);
	ember_stat(sink, "thread_ctx.attribute_reads", t->attr_reads);
	ember_stat(sink, "thread_ctx.attributes_unreadable", t->attr_errors);
	ember_stat(sink, "thread_ctx.attributes_stale", t->attrs_stale);
	ember_stat(sink, "thread_ctx.attributes_unnamed", t->attrs_unnamed);
}

const struct ember_interp_ops ember_thread_ctx_ops = {
    .init = tctx_init,
    .free = tctx_free,
    .on_maps = tctx_on_maps,
    .on_exit_ahead = tctx_on_exit_ahead,
    .on_exec = tctx_on_exec,
    .on_exit = tctx_on_exit,
    .warm = tctx_warm,
    .frame = tctx_frame,
    .marker = tctx_marker,
    .stats = tctx_stats,
};
