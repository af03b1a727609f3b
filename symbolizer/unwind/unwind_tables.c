// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/unwind/unwind_tables.h"
#include "symbolizer/symbols/sigbus_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/param.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "symbolizer/unwind/cfi.h"
#include "symbolizer/unwind/stack_unwind.h"
#include "symbolizer/process/maps_parser.h"
#include "symbolizer/process/process_table.h"
#include "shared/clock.h"
#include "shared/log.h"
#include "symbolizer/memory/mem_owners.h"

#define VDSO_DEV       UINT64_MAX /* no file has this device: the key of the vDSO's table */
#define VDSO_MAX_BYTES (1u << 20)
#define FILE_RETRY_NS  (30ull * 1000000000ull)
#define STALL_RETRY_NS (2ull * 1000000000ull) /* a file not read in time, or not with room */
#define SWEEP_EVERY_NS 1000000000ull
#define PAGE_MASK_4K   (~(uint64_t)4095)

static const char *const stop_names[EMBER_UNWIND_STOP_MAX] = {
    [EMBER_UNWIND_COMPLETE] = "complete",
    [EMBER_UNWIND_STOP_BAD_CFI] = "unsupported CFI",
    [EMBER_UNWIND_STOP_READ] = "stack not readable",
    [EMBER_UNWIND_STOP_NO_MAPPING] = "pc outside mappings",
    [EMBER_UNWIND_STOP_NO_TABLE] = "table not loaded",
    [EMBER_UNWIND_STOP_BAD_FRAME] = "bad frame",
    [EMBER_UNWIND_STOP_DEPTH] = "depth limit",
    [EMBER_UNWIND_STOP_NO_REGS] = "no user registers",
    [EMBER_UNWIND_STOP_UNCHECKED] = "no tables yet",
    [EMBER_UNWIND_STOP_COPY_SHORT] = "stack copy too short",
    [EMBER_UNWIND_STOP_COPY_BUDGET] = "copy budget spent",
    [EMBER_UNWIND_STOP_NO_MAPS] = "maps not read",
};

const char *ember_unwind_stop_marker(uint32_t reason)
{
	static const char *const markers[EMBER_UNWIND_STOP_MAX] = {
	    [EMBER_UNWIND_STOP_BAD_CFI] = "[unwind stopped: unsupported CFI]",
	    [EMBER_UNWIND_STOP_READ] = "[unwind stopped: stack not readable]",
	    [EMBER_UNWIND_STOP_NO_MAPPING] = "[unwind stopped: pc outside mappings]",
	    [EMBER_UNWIND_STOP_NO_TABLE] = "[unwind stopped: table not loaded]",
	    [EMBER_UNWIND_STOP_BAD_FRAME] = "[unwind stopped: bad frame]",
	    [EMBER_UNWIND_STOP_DEPTH] = "[unwind stopped: depth limit]",
	    [EMBER_UNWIND_STOP_NO_REGS] = "[unwind stopped: no user registers]",
	    [EMBER_UNWIND_STOP_UNCHECKED] = "[unwind stopped: no tables yet]",
	    [EMBER_UNWIND_STOP_COPY_SHORT] = "[unwind stopped: stack copy too short]",
	    [EMBER_UNWIND_STOP_COPY_BUDGET] = "[unwind stopped: no tables yet, copy budget spent]",
	    [EMBER_UNWIND_STOP_NO_MAPS] = "[unwind stopped: maps not read]",
	};

	if (reason < EMBER_UNWIND_STOP_MAX && markers[reason])
		return markers[reason];
	return "[unwind stopped: unknown reason]";
}

static bool file_eq(const void *ctx, uint32_t slot, const void *key, size_t len)
{
	const struct ember_unwind_file *f = ember_slots_at(ctx, slot);

	return len == sizeof(f->key) && !memcmp(&f->key, key, len);
}

static bool proc_eq(const void *ctx, uint32_t slot, const void *key, size_t len)
{
	const struct ember_unwind_process *p =
	    *(struct ember_unwind_process *const *)ember_slots_at(ctx, slot);

	return len == sizeof(p->pid) && !memcmp(&p->pid, key, len);
}

/* The table in slot, which is in use. */
static struct ember_unwind_file *file_at(const struct ember_unwind *u, uint32_t slot)
{
	return ember_slots_at(&u->files, slot);
}

/* The process in slot, or NULL for a free slot. */
static struct ember_unwind_process *proc_at(const struct ember_unwind *u, uint32_t slot)
{
	struct ember_unwind_process **p = ember_slots_get(&u->procs, slot);

	return p ? *p : NULL;
}

int ember_unwind_init(struct ember_unwind *u, struct ember_broker_client *broker)
{
	EMBER_MEM_SCOPE(EMBER_MEM_UNWIND);
	int err;

	memset(u, 0, sizeof(*u));
	u->broker = broker;
	u->rows_limit = EMBER_UNWIND_KEEP_ROWS_BYTES;
	err = ember_slots_init(&u->files, sizeof(struct ember_unwind_file), EMBER_UNWIND_MAX_TABLES,
	                       file_eq);
	if (!err)
		err = ember_slots_init(&u->procs, sizeof(struct ember_unwind_process *),
		                       EMBER_UNWIND_MAX_PROCS, proc_eq);
	return err;
}

void ember_unwind_free(struct ember_unwind *u)
{
	EMBER_MEM_SCOPE(EMBER_MEM_UNWIND);
	struct ember_unwind_process *p;

	for (uint32_t i = 0; i < ember_slots_end(&u->procs); i++)
		if ((p = proc_at(u, i))) {
			free(p->files);
			free(p->maps);
			free(p);
		}
	for (uint32_t i = 0; i < ember_slots_end(&u->files); i++)
		if (ember_slots_get(&u->files, i))
			ember_unwind_rows_free(&file_at(u, i)->rows);
	for (; u->npreloads; u->npreloads--, u->preloads_head++)
		close(u->preloads[u->preloads_head % EMBER_UNWIND_MAX_PRELOADS].fd);
	free(u->running);
	ember_slots_free(&u->procs);
	ember_slots_free(&u->files);
	memset(u, 0, sizeof(*u));
}

/* ---- messages to the collector ---- */

static int send(struct ember_unwind *u, union ember_msg *m)
{
	int err = ember_broker_client_send(u->broker, m);

	if (err) {
		u->disabled = true;
		log_debug_errno(err, "unwind tables: the collector connection failed: %m");
	}
	return err;
}

static int send_table_op(struct ember_unwind *u, uint32_t slot, uint32_t op, uint32_t nrows)
{
	union ember_msg m;

	ember_msg_init(&m, EMBER_MSG_UNWIND_TABLE, 0);
	m.unwind_table.table = slot;
	m.unwind_table.op = op;
	m.unwind_table.nrows = nrows;
	return send(u, &m);
}

static int send_table(struct ember_unwind *u, uint32_t slot, const struct ember_unwind_rows *r)
{
	union ember_msg m;
	int err = send_table_op(u, slot, EMBER_UNWIND_TABLE_CREATE, (uint32_t)r->count);

	for (size_t first = 0; !err && first < r->count; first += EMBER_UNWIND_ROWS_PER_MSG) {
		size_t n = r->count - first;

		if (n > EMBER_UNWIND_ROWS_PER_MSG)
			n = EMBER_UNWIND_ROWS_PER_MSG;
		ember_msg_init(&m, EMBER_MSG_UNWIND_ROWS, 0);
		m.unwind_rows.table = slot;
		m.unwind_rows.first = (uint32_t)first;
		m.unwind_rows.count = (uint32_t)n;
		memcpy(m.unwind_rows.rows, r->rows + first, n * sizeof(*r->rows));
		err = send(u, &m);
	}
	if (!err)
		err = send_table_op(u, slot, EMBER_UNWIND_TABLE_COMMIT, 0);
	return err;
}

static int send_proc(struct ember_unwind *u, uint32_t pid, const struct ember_unwind_mapping *maps,
                     uint32_t n, uint64_t read_ns)
{
	union ember_msg m;
	uint32_t first = 0;
	int err;

	do {
		uint32_t count = n - first > EMBER_UNWIND_MAPPINGS_PER_MSG
		                     ? EMBER_UNWIND_MAPPINGS_PER_MSG
		                     : n - first;

		ember_msg_init(&m, EMBER_MSG_UNWIND_PROC, 0);
		m.unwind_proc.pid = pid;
		m.unwind_proc.first = first;
		m.unwind_proc.count = count;
		m.unwind_proc.total = n;
		m.unwind_proc.read_ns = read_ns;
		if (count)
			memcpy(m.unwind_proc.mappings, maps + first, count * sizeof(*maps));
		err = send(u, &m);
		first += count;
	} while (!err && first < n);
	return err;
}

/* ---- file tables ---- */

static int read_segments(Elf *elf, struct ember_unwind_file *f)
{
	size_t n;

	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	f->nsegs = 0;
	for (size_t i = 0; i < n && f->nsegs < EMBER_UNWIND_MAX_SEGMENTS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		f->segs[f->nsegs++] =
		    (struct ember_unwind_segment){ph.p_offset, ph.p_vaddr, ph.p_filesz};
	}
	return f->nsegs ? 0 : -ENOEXEC;
}

size_t ember_vdso_image(const void **out)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Phdr *ph;
	size_t len;

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	len = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	ph = (const Elf64_Phdr *)((const char *)eh + eh->e_phoff);
	for (unsigned int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > len)
			len = ph[i].p_offset + ph[i].p_filesz;
	*out = eh;
	return len <= VDSO_MAX_BYTES ? len : 0;
}

/* The collector stores whole blocks: the last is filled up with copies of the last row. */
static int pad_to_blocks(struct ember_unwind_rows *r)
{
	size_t n = (r->count + EMBER_UNWIND_BLOCK_ROWS - 1) / EMBER_UNWIND_BLOCK_ROWS *
	           EMBER_UNWIND_BLOCK_ROWS;
	struct ember_unwind_row *rows = realloc(r->rows, n * sizeof(*rows));

	if (!rows)
		return -ENOMEM;
	for (size_t i = r->count; i < n; i++)
		rows[i] = rows[r->count - 1];
	r->rows = rows;
	r->count = n;
	return 0;
}

/* Forgets the rows kept of a file (its table in the collector stays). */
static void drop_rows(struct ember_unwind *u, struct ember_unwind_file *f)
{
	u->rows_bytes -= f->rows.count * sizeof(*f->rows.rows);
	ember_unwind_rows_free(&f->rows);
}

/* Drops the least recently used rows, of those last used before used_before_ns, until `bytes`
 * more fit within the cap; returns how many. */
static uint64_t make_room_for_rows(struct ember_unwind *u, uint64_t bytes, uint64_t used_before_ns)
{
	uint64_t dropped = 0;

	while (u->rows_bytes && u->rows_bytes + bytes > u->rows_limit) {
		struct ember_unwind_file *oldest = NULL, *g;

		for (uint32_t i = 0; i < ember_slots_end(&u->files); i++)
			if ((g = ember_slots_get(&u->files, i)) && g->rows.rows &&
			    g->rows_used_ns < used_before_ns &&
			    (!oldest || g->rows_used_ns < oldest->rows_used_ns))
				oldest = g;
		if (!oldest)
			break;
		drop_rows(u, oldest);
		dropped++;
	}
	return dropped;
}

/* Keeps rows for stack copies, within u->rows_limit: the least recently used go. */
static void keep_rows(struct ember_unwind *u, struct ember_unwind_file *f,
                      struct ember_unwind_rows *rows, uint64_t now_ns)
{
	uint64_t bytes = rows->count * sizeof(*rows->rows);

	drop_rows(u, f);
	/* Rows that could never fit make no room: the others stay. */
	if (bytes > u->rows_limit) {
		ember_unwind_rows_free(rows);
		return;
	}
	u->rows_evicted += make_room_for_rows(u, bytes, UINT64_MAX);
	f->rows = *rows;
	f->rows_used_ns = now_ns;
	u->rows_bytes += bytes;
	memset(rows, 0, sizeof(*rows));
}

/* The rows of the file open at fd, or of the vDSO when fd < 0. */
static int file_rows(struct ember_unwind *u, struct ember_unwind_file *f, int fd,
                     struct ember_unwind_rows *rows)
{
	size_t max_rows = u->build_bytes ? u->build_bytes / EMBER_CFI_BUILD_BYTES_PER_ROW : 0;
	const void *image = NULL;
	size_t len = fd < 0 ? ember_vdso_image(&image) : 0;
	uint64_t faults = ember_sigbus_guard_count();
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	if (fd < 0 && !len)
		return -ENOENT;
	elf = fd < 0 ? elf_memory((char *)image, len) : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = read_segments(elf, f);
	elf_end(elf);
	if (!err)
		err = fd < 0 ? ember_cfi_from_elf(image, len, max_rows, rows)
		             : ember_cfi_from_fd(fd, max_rows, rows);
	/* Not the file's own size but the room left now (-ENOSPC): tried again soon. */
	if (err == -E2BIG && max_rows && max_rows < EMBER_UNWIND_MAX_TABLE_ROWS) {
		u->tables_deferred_for_budget++;
		err = -ENOSPC;
	}
	if (!err && (!rows->count || rows->count > EMBER_UNWIND_MAX_TABLE_ROWS))
		err = -E2BIG;
	/* The file shrank while it was read: the rows may hold its lost pages as
	 * zeros (sigbus_guard.h). Tried again later, from the file as it is then. */
	if (!err && ember_sigbus_guard_count() != faults)
		err = -ESTALE;
	if (!err)
		err = pad_to_blocks(rows);
	if (err)
		ember_unwind_rows_free(rows);
	return err;
}

/*
 * A table that did not fit the room the memory budget leaves is worth more than
 * rows kept for stack copies that no copy used for EMBER_UNWIND_REBUILD_NS (rebuilt
 * when one needs them): the least recently used go until the file's rows would fit
 * (at most a row per 50 bytes of file, 40 bytes each while built: cc1's 479,243 rows
 * of its 30 MB took 19 MB), and the room grows by what they held. Rows in use stay:
 * the copies that need them are mostly of processes gone, through which they could not
 * be built again ('table not loaded'). Returns whether any went.
 */
static bool room_from_kept_rows(struct ember_unwind *u, int fd, uint64_t now_ns)
{
	uint64_t want, keep, held = u->rows_bytes;
	struct stat st;

	if (fd < 0 || !u->build_bytes || !held || fstat(fd, &st))
		return false;
	want = (uint64_t)st.st_size / 50 * EMBER_CFI_BUILD_BYTES_PER_ROW;
	if (want <= u->build_bytes)
		return false;
	keep = held > want - u->build_bytes ? held - (want - u->build_bytes) : 0;
	u->rows_evicted_for_budget += make_room_for_rows(
	    u, u->rows_limit > keep ? u->rows_limit - keep : 0,
	    now_ns > EMBER_UNWIND_REBUILD_NS ? now_ns - EMBER_UNWIND_REBUILD_NS : 0);
	if (u->rows_bytes == held)
		return false;
	ember_unwind_set_build_bytes(u, u->build_bytes + (held - u->rows_bytes));
	return true;
}

/* Builds the table of the file open at fd (or of the vDSO when fd < 0) and sends it. */
static int build_table(struct ember_unwind *u, uint32_t slot, int fd, uint64_t now_ns)
{
	struct ember_unwind_file *f = file_at(u, slot);
	struct ember_unwind_rows rows = {0};
	int err = file_rows(u, f, fd, &rows);

	if (err == -ENOSPC && room_from_kept_rows(u, fd, now_ns))
		err = file_rows(u, f, fd, &rows);
	if (!err)
		err = send_table(u, slot, &rows);
	if (!err) {
		/* Until the budget's room is measured again, what the build kept is no
		 * longer room (the floor still lets the next small table through). */
		if (u->build_bytes)
			ember_unwind_set_build_bytes(
			    u, u->build_bytes - MIN(u->build_bytes - 1,
			                            rows.count * EMBER_CFI_BUILD_BYTES_PER_ROW));
		f->nrows = (uint32_t)rows.count;
		u->tables_built++;
		u->rows_sent += rows.count;
		keep_rows(u, f, &rows, now_ns);
	}
	ember_unwind_rows_free(&rows);
	return err;
}

/* The kernel's number for a device (MKDEV): what an inode's super block holds. */
static uint32_t kernel_dev(uint32_t major, uint32_t minor)
{
	return major << 20 | (minor & 0xfffff);
}

/* The entry of file f for the unwinder, its table in slot `table` (or none). st: the file as
 * its table was built from it; NULL for the vDSO of mapping e, whose check is its size. */
static void fill_entry(struct ember_unwind_file *f, const struct ember_map_entry *e,
                       const struct stat *st, uint32_t table)
{
	struct ember_file_entry *x = &f->entry;

	memset(x, 0, sizeof(*x));
	memset(&f->kkey, 0, sizeof(f->kkey));
	x->table = table;
	x->size = st ? (uint64_t)st->st_size : e->end - e->start;
	if (st) {
		f->kkey =
		    (struct ember_file_key){e->inode, kernel_dev(e->dev_major, e->dev_minor), 0};
		x->mtime_sec = st->st_mtim.tv_sec;
		x->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	}
	x->exe_start = UINT64_MAX;
	for (uint32_t i = 0; i < f->nsegs && x->nsegs < EMBER_UNWIND_FILE_SEGS; i++) {
		const struct ember_unwind_segment *g = &f->segs[i];
		uint64_t start = g->offset & PAGE_MASK_4K, end = g->offset + g->filesz;

		/* In order and apart, as the collector checks (segments sharing a page, in
		 * the order the file lists them: the later one gives up the shared part). */
		if (x->nsegs && start < x->segs[x->nsegs - 1].end)
			start = x->segs[x->nsegs - 1].end;
		if (start >= end)
			continue;
		x->segs[x->nsegs++] =
		    (struct ember_file_seg){start, end, (int64_t)(g->vaddr - g->offset)};
		x->exe_start = MIN(x->exe_start, g->vaddr);
	}
	/* The executable's code starts at its lowest executable segment; the vDSO's image at
	 * its byte 0. */
	x->exe_start = !st && x->nsegs              ? (uint64_t)x->segs[0].delta
	               : x->exe_start == UINT64_MAX ? 0
	                                            : x->exe_start;
}

/* Tells the collector which file f's table is for (or that it has none): the unwinder
 * finds it from the file behind a pc, in every process, from its first sample. */
static void name_file(struct ember_unwind *u, struct ember_unwind_file *f,
                      const struct ember_map_entry *e, const struct stat *st, uint32_t table)
{
	union ember_msg m;

	fill_entry(f, e, st, table);
	if (u->hold_back_procs)
		return; /* tests: every sample carries a stack copy */
	ember_msg_init(&m, EMBER_MSG_UNWIND_FILE, 0);
	m.unwind_file.op = EMBER_UNWIND_FILE_SET;
	m.unwind_file.key = f->kkey;
	m.unwind_file.file = f->entry;
	f->named = !send(u, &m);
	u->files_named += f->named;
}

/* The unwinder forgets f's file (before its table goes). */
static int forget_file(struct ember_unwind *u, const struct ember_unwind_file *f)
{
	union ember_msg m;

	ember_msg_init(&m, EMBER_MSG_UNWIND_FILE, 0);
	m.unwind_file.op = EMBER_UNWIND_FILE_DROP;
	m.unwind_file.key = f->kkey;
	return send(u, &m);
}

/* Whether the file open at fd is no longer the one f's table was built from. */
static bool file_changed(const struct ember_unwind_file *f, int fd)
{
	struct stat st;

	return f->named && !fstat(fd, &st) &&
	       (st.st_mtim.tv_sec != f->entry.mtime_sec ||
	        (uint32_t)st.st_mtim.tv_nsec != f->entry.mtime_nsec ||
	        (uint64_t)st.st_size != f->entry.size);
}

/* Builds f's table from fd (the vDSO's if fd < 0) and names its file; a file that is no
 * x86-64 ELF or has no CFI is named as having no table (frame pointers). */
static void build_and_name(struct ember_unwind *u, uint32_t slot, const struct ember_map_entry *e,
                           int fd, uint64_t now_ns)
{
	struct ember_unwind_file *f = file_at(u, slot);
	struct stat st;
	bool stat_ok = fd >= 0 && !fstat(fd, &st);

	f->error = build_table(u, slot, fd, now_ns);
	if (!f->error && (stat_ok || fd < 0))
		name_file(u, f, e, fd < 0 ? NULL : &st, slot);
	else if ((f->error == -ENOEXEC || f->error == -ENOENT) && stat_ok)
		name_file(u, f, e, &st, EMBER_UNWIND_NO_TABLE);
}

/* A new program's file whose symbols are read ahead once its tables are out (on_file). */
static void queue_preload(struct ember_unwind *u, uint32_t pid, const struct ember_map_entry *e,
                          int fd)
{
	struct ember_unwind_preload *q;

	if (u->npreloads == EMBER_UNWIND_MAX_PRELOADS) {
		u->preloads_dropped++; /* symbolization opens it when it gets there */
		return;
	}
	q = &u->preloads[(u->preloads_head + u->npreloads) % EMBER_UNWIND_MAX_PRELOADS];
	q->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (q->fd < 0)
		return;
	q->pid = pid;
	q->e = *e;
	u->npreloads++;
}

/*
 * The slot of the file behind mapping e of pid, building its table on first
 * sight; with share, the file goes to on_file too (see load_process). With
 * recheck (the unwinder found the file changed), a file with a table is opened
 * again, and rebuilt if it is not the file its table was built from.
 */
static int file_slot(struct ember_unwind *u, uint32_t pid, const struct ember_map_entry *e,
                     bool share, bool recheck, uint64_t now_ns)
{
	struct ember_obj_key key = {VDSO_DEV, 0};
	struct ember_unwind_file *f;
	bool has_table;
	uint32_t slot;
	int fd = -1, r;

	if (e->kind != EMBER_MAP_VDSO)
		key = (struct ember_obj_key){makedev(e->dev_major, e->dev_minor), e->inode};
	r = ember_slots_add(&u->files, &key, sizeof(key), &slot);
	if (r < 0)
		return r;
	f = file_at(u, slot);
	if (r == 1)
		f->key = key;
	has_table = r != 1 && !f->error;
	if (has_table ? !(recheck && f->named && e->kind != EMBER_MAP_VDSO)
	              : r != 1 && !(f->failed_pid && f->failed_pid != pid) &&
	                    now_ns - f->idle_since_ns <
	                        (f->error == -ETIMEDOUT || f->error == -ENOSPC ? STALL_RETRY_NS
	                                                                       : FILE_RETRY_NS))
		return (int)slot;
	if (e->kind != EMBER_MAP_VDSO)
		fd = ember_broker_mapped_file(u->broker, pid, e->start, e->dev_major, e->dev_minor,
		                              e->inode);
	/* Checked again: the same file (or one that cannot be opened now) keeps its table. */
	if (has_table && (fd < 0 || !file_changed(f, fd))) {
		if (fd >= 0)
			close(fd);
		return (int)slot;
	}
	/* Rebuilt: the old table, and the file's entry with it, go first. */
	if (has_table) {
		u->files_changed++;
		f->error = (f->named && forget_file(u, f)) ||
		                   send_table_op(u, slot, EMBER_UNWIND_TABLE_DROP, 0)
		               ? -EPIPE
		               : -ESTALE;
		f->named = false;
	}
	if (fd < 0 && e->kind != EMBER_MAP_VDSO) {
		/* Not opened through this process (gone: its maps a snapshot; no longer mapping it;
		 * no worker free; stalled, its memory-map lock held): not the file's fault, and a
		 * live process of the same program must not be left without its table. A stalled
		 * file system's files are refused at once, through any process (the broker's list).
		 */
		f->error = fd;
		f->failed_pid = pid;
	} else {
		f->failed_pid = 0;
		build_and_name(u, slot, e, fd, now_ns);
	}
	if (fd >= 0 && share && u->on_file)
		queue_preload(u, pid, e, fd);
	if (fd >= 0)
		close(fd);
	/* For a failed file this is when it failed: it is retried after FILE_RETRY_NS. */
	f->idle_since_ns = now_ns;
	if (f->error) {
		u->table_errors++;
		log_debug_errno(f->error, "no unwind table for inode %llu of pid %u: %m",
		                (unsigned long long)e->inode, pid);
	}
	return (int)slot;
}

/* The bias that turns a pc in mapping e into an address of the file's table. */
static bool mapping_bias(const struct ember_unwind_file *f, const struct ember_map_entry *e,
                         __u64 *bias)
{
	for (uint32_t i = 0; i < f->nsegs; i++) {
		const struct ember_unwind_segment *s = &f->segs[i];

		if (e->offset >= (s->offset & PAGE_MASK_4K) && e->offset < s->offset + s->filesz) {
			*bias = e->start - (s->vaddr + (e->offset - s->offset));
			return true;
		}
	}
	return false;
}

static void release_file(struct ember_unwind *u, uint32_t slot, uint64_t now_ns)
{
	struct ember_unwind_file *f = file_at(u, slot);

	if (f->refs && !--f->refs)
		f->idle_since_ns = now_ns;
}

static void remove_proc(struct ember_unwind *u, uint32_t slot, uint64_t now_ns);

/* Forgets processes whose loads gave nothing for EMBER_UNWIND_RELOAD_MAX_NS: refused (gone
 * already, most likely), they hold nothing here or in the collector. */
static void sweep_procs(struct ember_unwind *u, uint64_t now_ns)
{
	struct ember_unwind_process *p;

	for (uint32_t slot = 0; slot < ember_slots_end(&u->procs); slot++)
		if ((p = proc_at(u, slot)) && !p->nmaps && !p->nfiles && p->loaded_ns &&
		    now_ns - p->loaded_ns >= EMBER_UNWIND_RELOAD_MAX_NS) {
			remove_proc(u, slot, now_ns);
			u->procs_gone++;
		}
}

/* Drops the tables no process has mapped for EMBER_UNWIND_IDLE_DROP_NS. */
static void sweep(struct ember_unwind *u, uint64_t now_ns)
{
	if (now_ns - u->last_sweep_ns < SWEEP_EVERY_NS)
		return;
	u->last_sweep_ns = now_ns;
	sweep_procs(u, now_ns);
	for (uint32_t slot = 0; slot < ember_slots_end(&u->files); slot++) {
		struct ember_unwind_file *f = ember_slots_get(&u->files, slot);

		if (!f || f->refs || now_ns - f->idle_since_ns < EMBER_UNWIND_IDLE_DROP_NS)
			continue;
		/* The file's entry goes before its table: the unwinder would find the slot empty,
		 * or another file's table in it later. */
		if ((f->named && forget_file(u, f)) ||
		    (!f->error && send_table_op(u, slot, EMBER_UNWIND_TABLE_DROP, 0)))
			return;
		drop_rows(u, f);
		ember_slots_remove(&u->files, slot, &f->key, sizeof(f->key));
		u->tables_dropped++;
	}
}

/* ---- processes ---- */

static void remove_proc(struct ember_unwind *u, uint32_t slot, uint64_t now_ns)
{
	struct ember_unwind_process *p = proc_at(u, slot);

	ember_slots_remove(&u->procs, slot, &p->pid, sizeof(p->pid));
	for (uint32_t i = 0; i < p->nfiles; i++)
		release_file(u, p->files[i], now_ns);
	free(p->files);
	free(p->maps);
	free(p);
}

/* Full: forgets the process loaded longest ago (the collector too). */
static void evict_oldest(struct ember_unwind *u, uint64_t now_ns)
{
	struct ember_unwind_process *p;
	uint32_t oldest = UINT32_MAX;

	for (uint32_t i = 0; i < ember_slots_end(&u->procs); i++)
		if ((p = proc_at(u, i)) &&
		    (oldest == UINT32_MAX || p->loaded_ns < proc_at(u, oldest)->loaded_ns))
			oldest = i;
	if (oldest == UINT32_MAX)
		return;
	send_proc(u, proc_at(u, oldest)->pid, NULL, 0, 0);
	remove_proc(u, oldest, now_ns);
}

static struct ember_unwind_process *get_proc(struct ember_unwind *u, uint32_t pid, uint64_t now_ns)
{
	struct ember_unwind_process *p;
	uint32_t slot;

	if (!ember_slots_find(&u->procs, &pid, sizeof(pid), &slot))
		return proc_at(u, slot);
	if (u->procs.count == EMBER_UNWIND_MAX_PROCS)
		evict_oldest(u, now_ns);
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (ember_slots_add(&u->procs, &pid, sizeof(pid), &slot) < 0) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->backoff_ns = EMBER_UNWIND_RELOAD_MIN_NS;
	*(struct ember_unwind_process **)ember_slots_at(&u->procs, slot) = p;
	return p;
}

/* The process pid, or NULL. */
static struct ember_unwind_process *find_proc(const struct ember_unwind *u, uint32_t pid)
{
	uint32_t slot;

	return ember_slots_find(&u->procs, &pid, sizeof(pid), &slot) ? NULL : proc_at(u, slot);
}

static uint64_t digest_mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

/* The files nearly every process maps: what prewarming builds. */
static bool common_file(const struct ember_maps *maps, const struct ember_map_entry *e)
{
	const char *path = ember_maps_path(maps, e), *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return e->kind == EMBER_MAP_VDSO || !strncmp(base, "libc.so", 7) ||
	       !strncmp(base, "ld-linux", 8) || !strncmp(base, "libm.so", 7);
}

/* Doubles the time before p's maps are read again, up to EMBER_UNWIND_RELOAD_MAX_NS. */
static void back_off(struct ember_unwind_process *p)
{
	p->backoff_ns = p->backoff_ns * 2 > EMBER_UNWIND_RELOAD_MAX_NS ? EMBER_UNWIND_RELOAD_MAX_NS
	                                                               : p->backoff_ns * 2;
}

/* Sends pid's mapping list to the collector and keeps it, unless it is the one sent last
 * (a reload that found nothing new). */
static void keep_mappings(struct ember_unwind *u, struct ember_unwind_process *p, uint32_t pid,
                          const struct ember_unwind_mapping *maps, uint32_t n, uint64_t read_ns)
{
	if (p->nmaps && n == p->nmaps && !memcmp(p->maps, maps, n * sizeof(*maps)))
		return;
	if (!u->hold_back_procs && !u->hold_back_lists)
		send_proc(u, pid, maps, n, read_ns);
	free(p->maps);
	p->maps = n ? malloc(n * sizeof(*maps)) : NULL;
	p->nmaps = p->maps ? n : 0;
	if (p->maps)
		memcpy(p->maps, maps, n * sizeof(*maps));
}

/*
 * Gone, or a zombie (no mappings left): its exit was met already, and this entry, made for a
 * sample that came after the exit or for a process listed at start, would stay for good: it
 * goes (true). Refused (the collector forgot it at its exit, or never saw it): kept for the
 * back-off, and swept (sweep_procs) if nothing comes of it.
 */
static bool forgot_a_gone_process(struct ember_unwind *u, const struct ember_unwind_process *p,
                                  uint32_t pid, int err, struct ember_maps *pm, uint64_t now_ns)
{
	uint32_t slot;

	if (!(err == -ESRCH || err == -ENOENT || (!err && !pm->count)) || p->nmaps || p->nfiles)
		return false;
	if (!err)
		ember_maps_free(pm);
	if (!ember_slots_find(&u->procs, &pid, sizeof(pid), &slot))
		remove_proc(u, slot, now_ns);
	u->procs_gone++;
	return true;
}

/*
 * Loads pid's mappings and their tables. force: even if loaded recently.
 * common_only: only the files nearly every process maps. share: a program
 * just started, which may be gone by the time its samples are symbolized:
 * the files opened for its tables go to on_file (for processes that were
 * running already, symbolization opens what it needs while they live).
 */
static void load_process(struct ember_unwind *u, uint32_t pid, uint64_t now_ns, bool force,
                         bool common_only, bool share)
{
	struct ember_unwind_mapping maps[EMBER_UNWIND_MAX_MAPPINGS];
	struct ember_unwind_process *p = get_proc(u, pid, now_ns);
	uint32_t n = 0, nfiles = 0, *files = NULL;
	uint64_t digest = 0xcbf29ce484222325ull, read_ns;
	struct ember_maps pm;
	int err;

	if (!p || u->disabled)
		return;
	/* The first miss after exec is the dynamic loader's libraries, and a file the unwinder
	 * found changed is rebuilt before a copy is unwound with it: reload at once. */
	if (!force && p->loaded_ns && now_ns - p->loaded_ns < p->backoff_ns && !p->after_exec &&
	    !p->recheck_files) {
		u->loads_deferred++;
		return;
	}
	p->after_exec = force;
	p->loaded_ns = now_ns;
	u->process_loads++;
	/* The time of the read itself: an exec is compared with it (now_ns may be older). */
	read_ns = ember_monotonic_ns();
	err = ember_process_fetch_maps(u->broker, u->kmaps, pid, &pm);
	if (forgot_a_gone_process(u, p, pid, err, &pm, now_ns))
		return;
	if (err) {
		back_off(p);
		return;
	}
	files = malloc((pm.count ? pm.count : 1) * sizeof(*files));
	for (size_t i = 0; files && i < pm.count; i++) {
		const struct ember_map_entry *e = &pm.entries[i];
		/* Past the list's room, the file's table is still built: found by file. */
		struct ember_unwind_mapping spare, *m = n < EMBER_UNWIND_MAX_MAPPINGS ? &maps[n] : &spare;
		int slot = -1;

		if (!(e->perms & EMBER_MAP_X) || (common_only && !common_file(&pm, e)))
			continue;
		u->mappings_truncated += m == &spare;
		*m = (struct ember_unwind_mapping){e->start, e->end, 0, EMBER_UNWIND_NO_TABLE, 0};
		if ((e->kind == EMBER_MAP_FILE && e->inode) || e->kind == EMBER_MAP_VDSO)
			slot = file_slot(u, pid, e, share, p->recheck_files, now_ns);
		if (slot >= 0) {
			struct ember_unwind_file *f = file_at(u, (uint32_t)slot);

			/* Hold failed files too, so that they are not rebuilt for every process. */
			files[nfiles++] = (uint32_t)slot;
			f->refs++;
			if (!f->error && mapping_bias(f, e, &m->bias))
				m->table = (uint32_t)slot;
		}
		if (m == &spare)
			continue;
		digest = digest_mix(digest_mix(digest, m->start), m->table);
		n++;
	}
	if (u->on_maps)
		u->on_maps(u->on_maps_ctx, pid, &pm, read_ns);
	ember_maps_free(&pm);
	if (!files)
		return;
	keep_mappings(u, p, pid, maps, n, read_ns);
	p->maps_read_ns = read_ns;
	p->recheck_files = false;
	log_debug("unwind: pid %u: %u executable mappings loaded in %.1f ms (%s)", pid, n,
	          (double)(ember_monotonic_ns() - now_ns) / 1e6, force ? "exec" : "miss");
	/* New references were taken above, so a file both lists share never drops to 0. */
	for (uint32_t i = 0; i < p->nfiles; i++)
		release_file(u, p->files[i], now_ns);
	free(p->files);
	p->files = files;
	p->nfiles = nfiles;
	/* Reloads that find nothing new (a pc in no mapping is often a wrong frame) back off. */
	if (!force && digest == p->maps_digest)
		back_off(p);
	else
		p->backoff_ns = EMBER_UNWIND_RELOAD_MIN_NS;
	p->maps_digest = digest;
}

void ember_unwind_prewarm(struct ember_unwind *u, uint64_t now_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_UNWIND);
	load_process(u, (uint32_t)getpid(), now_ns, true, true, false);
}

static void queue_reload(struct ember_unwind *u, uint32_t pid, uint32_t attempt, uint64_t now_ns)
{
	if (u->nreloads < EMBER_UNWIND_MAX_RELOADS)
		u->reloads[(u->reloads_head + u->nreloads++) % EMBER_UNWIND_MAX_RELOADS] =
		    (struct ember_unwind_reload){pid, attempt,
		                                 now_ns + (EMBER_UNWIND_EXEC_RELOAD_NS << attempt)};
	else
		u->exec_reloads_skipped++; /* its first samples miss, and carry stack copies */
}

void ember_unwind_on_exec(struct ember_unwind *u, uint32_t pid, uint64_t exec_ns, uint64_t now_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_UNWIND);
	struct ember_unwind_process *p = find_proc(u, pid);

	/* Read since (a sample of the new program came first, or the exec was met ahead of
	 * the ring): they are the new program's. A reload for its libraries is queued once. */
	if (p && p->nmaps && p->maps_read_ns > exec_ns) {
		if (!p->after_exec)
			queue_reload(u, pid, 0, now_ns);
		p->after_exec = true;
		return;
	}
	/* The old program's mappings are no guide to the new one's, even if they cannot be read:
	 * forgotten before the reload, here and in the collector. */
	if (p && p->nmaps) {
		if (!u->disabled && !u->hold_back_procs)
			send_proc(u, pid, NULL, 0, 0);
		free(p->maps);
		p->maps = NULL;
		p->nmaps = 0;
		p->maps_read_ns = 0;
	}
	load_process(u, pid, now_ns, true, false, true);
	queue_reload(u, pid, 0, now_ns);
	sweep(u, now_ns);
}

bool ember_unwind_reread(struct ember_unwind *u, uint32_t pid, uint64_t now_ns)
{
	struct ember_unwind_process *p = find_proc(u, pid);

	/* A process not met yet has its maps read when it is; one whose last reading failed
	 * (its memory map locked by a stalled file system: each try holds a broker worker
	 * until the deadline) only as the unwinder's back-off allows. The last attempt: no
	 * retries. */
	if (!p || !p->maps_read_ns || p->maps_read_ns < p->loaded_ns ||
	    u->nreloads >= EMBER_UNWIND_MAX_RELOADS)
		return false;
	u->reloads[(u->reloads_head + u->nreloads++) % EMBER_UNWIND_MAX_RELOADS] =
	    (struct ember_unwind_reload){pid, EMBER_UNWIND_EXEC_RELOADS - 1, now_ns};
	return true;
}

void ember_unwind_on_exit(struct ember_unwind *u, uint32_t pid, uint64_t now_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_UNWIND);
	uint32_t slot;

	if (ember_slots_find(&u->procs, &pid, sizeof(pid), &slot))
		return;
	if (!u->disabled)
		send_proc(u, pid, NULL, 0, 0);
	remove_proc(u, slot, now_ns);
	sweep(u, now_ns);
}

/* ---- processes running when sampling started ---- */

void ember_unwind_on_running(struct ember_unwind *u, uint32_t pid, uint64_t cpu_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_UNWIND);
	if (u->nrunning == u->running_cap) {
		uint32_t cap = u->running_cap ? u->running_cap * 2 : 256;
		struct ember_unwind_running *grown;

		if (cap > EMBER_UNWIND_MAX_RUNNING)
			return; /* such a process is loaded at its first sample instead */
		grown = realloc(u->running, cap * sizeof(*grown));
		if (!grown)
			return;
		u->running = grown;
		u->running_cap = cap;
	}
	u->running[u->nrunning++] = (struct ember_unwind_running){pid, cpu_ns};
	u->running_sorted = false;
	u->running_listed++;
}

static int by_cpu(const void *a, const void *b)
{
	const struct ember_unwind_running *x = a, *y = b;

	return x->cpu_ns < y->cpu_ns ? -1 : x->cpu_ns > y->cpu_ns;
}

uint64_t ember_unwind_work(struct ember_unwind *u, uint64_t now_ns, uint64_t deadline_ns)
{
	EMBER_MEM_SCOPE(EMBER_MEM_UNWIND);
	struct ember_unwind_process *p;

	while (u->nreloads && u->reloads[u->reloads_head].due_ns <= now_ns &&
	       now_ns < deadline_ns) {
		struct ember_unwind_reload r = u->reloads[u->reloads_head];
		uint32_t before;

		u->reloads_head = (u->reloads_head + 1) % EMBER_UNWIND_MAX_RELOADS;
		u->nreloads--;
		/* Gone already (its exit was seen): nothing to load. */
		if (!(p = find_proc(u, r.pid)) || u->disabled)
			continue;
		u->exec_reloads++;
		before = p->nmaps;
		load_process(u, r.pid, now_ns, true, false, true);
		now_ns = ember_monotonic_ns();
		/* No library mapped yet: the loader has not had the CPU. Later, then. */
		if ((p = find_proc(u, r.pid)) && p->nmaps <= before &&
		    r.attempt + 1 < EMBER_UNWIND_EXEC_RELOADS)
			queue_reload(u, r.pid, r.attempt + 1, now_ns);
	}
	/* New programs' symbols, read ahead once their tables are out. */
	while (u->npreloads && now_ns < deadline_ns) {
		struct ember_unwind_preload q = u->preloads[u->preloads_head];

		u->preloads_head = (u->preloads_head + 1) % EMBER_UNWIND_MAX_PRELOADS;
		u->npreloads--;
		if (u->on_file)
			u->on_file(u->on_maps_ctx, q.pid, &q.e, q.fd, now_ns);
		close(q.fd);
		now_ns = ember_monotonic_ns();
	}
	if (!u->running_sorted) {
		/* The busiest last: they are taken from the end. */
		qsort(u->running, u->nrunning, sizeof(*u->running), by_cpu);
		u->running_sorted = true;
	}
	while (u->nrunning && !u->disabled && now_ns < deadline_ns) {
		uint32_t pid = u->running[--u->nrunning].pid;

		/* One a sample or an exec loaded already needs nothing more. */
		if ((p = find_proc(u, pid)) && p->loaded_ns)
			continue;
		load_process(u, pid, now_ns, true, false, false);
		u->running_loaded++;
		now_ns = ember_monotonic_ns();
	}
	if (!u->nrunning) {
		free(u->running);
		u->running = NULL;
		u->running_cap = 0;
	}
	if (u->nrunning || u->npreloads)
		return now_ns;
	return u->nreloads ? u->reloads[u->reloads_head].due_ns : 0;
}

/* ---- stack copies ---- */

struct copy_walk {
	struct ember_unwind *u;
	struct ember_unwind_process *p;
	uint64_t now_ns;
};

/* The kept rows of the file in slot, built again from the file mapped at start if dropped. */
static const struct ember_unwind_rows *slot_rows(struct ember_unwind *u, uint32_t slot,
                                                 uint32_t pid, uint64_t start, bool vdso,
                                                 uint64_t now_ns)
{
	struct ember_unwind_file *f = file_at(u, slot);
	struct ember_unwind_rows rows = {0};
	int fd = -1;

	if (f->rows.rows) {
		f->rows_used_ns = now_ns;
		return &f->rows;
	}
	if (f->rows_built_ns && now_ns - f->rows_built_ns < EMBER_UNWIND_REBUILD_NS) {
		u->rows_not_rebuilt++;
		return NULL;
	}
	f->rows_built_ns = now_ns;
	if (!vdso && (fd = ember_broker_mapped_file(u->broker, pid, start, major(f->key.dev),
	                                            minor(f->key.dev), f->key.ino)) < 0)
		return NULL;
	if (!file_rows(u, f, fd, &rows)) {
		u->rows_rebuilt++;
		keep_rows(u, f, &rows, now_ns);
	}
	if (fd >= 0)
		close(fd);
	return f->rows.rows ? &f->rows : NULL;
}

static int copy_lookup(void *ctx, uint64_t pc, struct ember_unwind_row *row)
{
	struct copy_walk *w = ctx;
	const struct ember_unwind_mapping *m = NULL;
	const struct ember_unwind_rows *rows;
	const struct ember_unwind_row *r;
	const struct ember_unwind_file *f;
	uint32_t lo = 0, hi = w->p->nmaps;

	/* The last mapping starting at or below pc. */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (w->p->maps[mid].start <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (w->p->nmaps && pc >= w->p->maps[lo].start && pc < w->p->maps[lo].end)
		m = &w->p->maps[lo];
	if (!m)
		return -ENOENT;
	if (m->table == EMBER_UNWIND_NO_TABLE || !(f = ember_slots_get(&w->u->files, m->table))) {
		*row = (struct ember_unwind_row){.kind = EMBER_ROW_GAP};
		return 0;
	}
	rows = slot_rows(w->u, m->table, w->p->pid, m->start, f->key.dev == VDSO_DEV, w->now_ns);
	if (!rows || pc - m->bias > UINT32_MAX)
		return -ENODATA;
	r = ember_unwind_rows_find(rows, pc - m->bias);
	*row = r ? *r : (struct ember_unwind_row){.kind = EMBER_ROW_GAP};
	return 0;
}

/* Unwinds the stack copy of sample s into out with the process's mappings and tables. */
static void unwind_copy(struct ember_unwind *u, const struct ember_sample_event *s,
                        const struct ember_stack_copy *copy, const uint8_t *stack, uint64_t now_ns,
                        struct ember_copy_stack *out)
{
	struct ember_stack_regs regs = {.pc = copy->pc,
	                                .sp = copy->sp,
	                                .fp = copy->fp,
	                                .exact = copy->flags & EMBER_COPY_EXACT_PC,
	                                .has_di = copy->flags & EMBER_COPY_DI,
	                                .has_bx = copy->flags & EMBER_COPY_BX,
	                                .di = copy->di,
	                                .bx = copy->bx};
	/* The frames the record has room for after its own words (Python frames take two). */
	uint32_t room = EMBER_MAX_USTACK_WORDS - MIN(s->ustack_len, EMBER_MAX_USTACK_WORDS);
	struct ember_stack_walk w = {.frames = out->frames, .max = MIN(room, EMBER_MAX_USTACK)};
	struct copy_walk cw = {u, NULL, now_ns};
	int len = ember_stack_copy_expand(copy->words, stack, copy->len, u->copy_stack,
	                                  sizeof(u->copy_stack));

	if (len < 0) {
		out->n = 0;
		out->stop = EMBER_UNWIND_STOP_READ;
		return;
	}
	u->copy_stack_bytes += len;
	for (int attempt = 0; attempt < 2; attempt++) {
		cw.p = find_proc(u, s->tgid);
		if (!cw.p || !cw.p->nmaps) {
			w.n = 0;
			w.stop = EMBER_UNWIND_STOP_NO_MAPS;
		} else {
			ember_stack_unwind(&regs, u->copy_stack, len, copy_lookup, &cw, &w);
		}
		/* Mappings read before the sample was taken may lack the one it ran in. */
		if ((w.stop != EMBER_UNWIND_STOP_NO_MAPPING &&
		     w.stop != EMBER_UNWIND_STOP_NO_MAPS) ||
		    (cw.p && cw.p->loaded_ns > s->time_ns) || attempt)
			break;
		u->copy_reloads++;
		load_process(u, s->tgid, now_ns, true, false, true);
	}
	out->n = w.n;
	out->stop = w.stop;
}

/* What the sampler says of the tables it looked for by file (bpf/records.h). */
static void count_file_lookups(struct ember_unwind *u, uint32_t flags, uint32_t tgid,
                               uint64_t now_ns)
{
	struct ember_unwind_process *p;

	u->missed_unseen += !!(flags & EMBER_STACK_FILE_UNSEEN);
	u->missed_changed += !!(flags & EMBER_STACK_FILE_CHANGED);
	u->missed_no_vma += !!(flags & EMBER_STACK_FILE_NO_VMA);
	u->stale_lists += !!(flags & EMBER_STACK_UNWIND_STALE_LIST);
	/* Not the file its table was built from: its files are opened again at its load. */
	if ((flags & EMBER_STACK_FILE_CHANGED) && (p = get_proc(u, tgid, now_ns)))
		p->recheck_files = true;
}

bool ember_unwind_on_sample(struct ember_unwind *u, const struct ember_sample_event *s,
                            const struct ember_stack_copy *copy, const uint8_t *stack,
                            uint64_t now_ns, struct ember_copy_stack *out)
{
	EMBER_MEM_SCOPE(EMBER_MEM_UNWIND);
	uint32_t stop = EMBER_STACK_UNWIND_STOP(s->stack_flags);
	/* No list of its own (its tables found by file or not), or a file found changed: its maps
	 * are read, for symbolization, and its list sent for what the kernel cannot find by file. */
	bool missed = s->stack_flags & (EMBER_STACK_UNWIND_NO_PROC | EMBER_STACK_UNWIND_MAP_MISS |
	                                EMBER_STACK_UNWIND_BY_FILE | EMBER_STACK_FILE_CHANGED);

	if (!s->ustack_len && !stop)
		return false; /* a kernel thread: no user stack to unwind */
	u->samples++;
	count_file_lookups(u, s->stack_flags, s->tgid, now_ns);
	if (missed) {
		u->samples_missed++;
		load_process(u, s->tgid, now_ns, false, false, false);
	}
	if (copy) {
		u->copies++;
		u->copy_bytes += copy->len;
		unwind_copy(u, s, copy, stack, now_ns, out);
		stop = out->stop;
	} else if (s->stack_flags & EMBER_STACK_COPY_FAILED) {
		u->copies_failed++;
	}
	u->stops[stop & 0xff]++;
	if (stop == EMBER_UNWIND_COMPLETE) {
		u->samples_complete++;
		if (copy)
			u->samples_complete_copy++;
		else if (s->stack_flags & EMBER_STACK_UNWIND_BY_FILE)
			u->samples_by_file++;
		else
			u->samples_by_process++;
	}
	sweep(u, now_ns);
	return copy != NULL;
}

size_t ember_unwind_rows_bytes(const struct ember_unwind *u)
{
	return (size_t)u->rows_bytes;
}

size_t ember_unwind_rows_limit(const struct ember_unwind *u)
{
	return (size_t)u->rows_limit;
}

size_t ember_unwind_set_rows_limit(struct ember_unwind *u, size_t bytes)
{
	EMBER_MEM_SCOPE(EMBER_MEM_UNWIND);
	uint64_t held = u->rows_bytes;

	u->rows_limit =
	    MIN(MAX(bytes, EMBER_UNWIND_ROWS_FLOOR_BYTES), EMBER_UNWIND_KEEP_ROWS_BYTES);
	u->rows_evicted_for_budget += make_room_for_rows(u, 0, UINT64_MAX);
	return (size_t)(held - u->rows_bytes);
}

void ember_unwind_set_build_bytes(struct ember_unwind *u, size_t bytes)
{
	u->build_bytes = bytes ? MAX(bytes, EMBER_UNWIND_BUILD_FLOOR_BYTES) : 0;
}

void ember_unwind_report_stats(const struct ember_unwind *u, const struct ember_stat_sink *sink)
{
	char name[64];
	uint32_t live = 0;
	uint64_t blocks = 0;

	for (uint32_t i = 0; i < ember_slots_end(&u->files); i++) {
		const struct ember_unwind_file *f = ember_slots_get(&u->files, i);

		live += f && !f->error;
		/* What the tables hold in the unwinder's map of blocks (unwind_blocks). */
		if (f && !f->error)
			blocks +=
			    (f->nrows + EMBER_UNWIND_BLOCK_ROWS - 1) / EMBER_UNWIND_BLOCK_ROWS;
	}
	ember_stat(sink, "unwind.samples", u->samples);
	ember_stat(sink, "unwind.samples_complete", u->samples_complete);
	/* Where complete stacks were unwound, and how many stayed incomplete (unwind.stop.*). */
	ember_stat(sink, "unwind.samples_complete_kernel",
	           u->samples_by_process + u->samples_by_file);
	/* Of them: every table from the process's list, or some found by their file. */
	ember_stat(sink, "unwind.samples_by_process", u->samples_by_process);
	ember_stat(sink, "unwind.samples_by_file", u->samples_by_file);
	ember_stat(sink, "unwind.samples_complete_copy", u->samples_complete_copy);
	ember_stat(sink, "unwind.samples_incomplete", u->samples - u->samples_complete);
	ember_stat(sink, "unwind.samples_missed_tables", u->samples_missed);
	/* Samples where a file's table was not found by file: why. */
	ember_stat(sink, "unwind.file.unseen", u->missed_unseen);
	ember_stat(sink, "unwind.file.changed", u->missed_changed);
	ember_stat(sink, "unwind.file.no_vma", u->missed_no_vma);
	ember_stat(sink, "unwind.file.stale_lists", u->stale_lists);
	ember_stat(sink, "unwind.files_named", u->files_named);
	ember_stat(sink, "unwind.files_rebuilt_changed", u->files_changed);
	ember_stat(sink, "unwind.preloads_dropped", u->preloads_dropped);
	ember_stat(sink, "unwind.missed_ppm",
	           u->samples ? u->samples_missed * 1000000 / u->samples : 0);
	for (uint32_t r = 1; r < EMBER_UNWIND_STOP_MAX; r++) {
		snprintf(name, sizeof(name), "unwind.stop.%s", stop_names[r]);
		for (char *c = name; *c; c++)
			if (*c == ' ')
				*c = '_';
		ember_stat(sink, name, u->stops[r]);
	}
	ember_stat(sink, "unwind.process_loads", u->process_loads);
	ember_stat(sink, "unwind.process_loads_deferred", u->loads_deferred);
	ember_stat(sink, "unwind.tables_built", u->tables_built);
	ember_stat(sink, "unwind.tables_live", live);
	ember_stat(sink, "unwind.blocks_live", blocks);
	ember_stat(sink, "unwind.tables_dropped", u->tables_dropped);
	ember_stat(sink, "unwind.table_errors", u->table_errors);
	ember_stat(sink, "unwind.rows_sent", u->rows_sent);
	ember_stat(sink, "unwind.mappings_truncated", u->mappings_truncated);
	ember_stat(sink, "unwind.copy.samples", u->copies);
	ember_stat(sink, "unwind.copy.bytes", u->copy_bytes);
	ember_stat(sink, "unwind.copy.stack_bytes", u->copy_stack_bytes);
	ember_stat(sink, "unwind.copy.failed", u->copies_failed);
	ember_stat(sink, "unwind.copy.skipped_budget", u->stops[EMBER_UNWIND_STOP_COPY_BUDGET]);
	ember_stat(sink, "unwind.copy.reloads", u->copy_reloads);
	ember_stat(sink, "unwind.copy.rows_bytes", u->rows_bytes);
	ember_stat(sink, "unwind.copy.rows_rebuilt", u->rows_rebuilt);
	ember_stat(sink, "unwind.copy.rows_evicted", u->rows_evicted);
	ember_stat(sink, "unwind.copy.rows_not_rebuilt", u->rows_not_rebuilt);
	ember_stat(sink, "unwind.copy.rows_limit", u->rows_limit);
	ember_stat(sink, "unwind.copy.rows_evicted_for_budget", u->rows_evicted_for_budget);
	ember_stat(sink, "unwind.tables_deferred_for_budget", u->tables_deferred_for_budget);
	ember_stat(sink, "unwind.processes", u->procs.count);
	ember_stat(sink, "unwind.processes_gone", u->procs_gone);
	ember_stat(sink, "unwind.running.listed", u->running_listed);
	ember_stat(sink, "unwind.running.loaded", u->running_loaded);
	ember_stat(sink, "unwind.exec_reloads", u->exec_reloads);
	ember_stat(sink, "unwind.exec_reloads_skipped", u->exec_reloads_skipped);
}
