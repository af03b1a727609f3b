// SPDX-License-Identifier: Apache-2.0
/*
 * The unwind-table bookkeeping against a fake collector on the other end of
 * a socket pair: it serves this test's own processes' maps and mapped files
 * (as the broker would) and records every table and process message. Checked:
 * one table per file, shared by the processes that map it; rows in whole
 * blocks; mappings that point into the right table with the right bias; the
 * exit of a process; tables dropped once nobody maps them; a refused maps
 * request backs off; a collector that went away disables the module.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gelf.h>
#include <sys/mman.h>
#include <sys/mount.h>

#include "bpf/unwind_file.h"
#include "check_main.h"
#include "symbolizer/profile/profile.h"
#include "waiting_child.h"
#include "symbolizer/process/maps_parser.h"
#include "shared/clock.h"
#include "symbolizer/unwind/unwind_tables.h"

#define SEC          1000000000ull
#define MAX_TABLES   256
#define MAX_PROC_MSG 64

struct fake_collector {
	int sock;
	pthread_t thread;
	atomic_bool stop;
	atomic_bool refuse_maps;
	atomic_uint stalled_pid; /* its mapped files are answered -ETIMEDOUT, as a stalled one's */
	pthread_mutex_t lock;
	/* What arrived, per table slot. */
	unsigned int creates[MAX_TABLES], commits[MAX_TABLES], drops[MAX_TABLES];
	uint32_t nrows[MAX_TABLES], rows_seen[MAX_TABLES];
	bool rows_in_order;
	/* The last process message of each pid (whole, when total fits in one message). */
	struct ember_msg_unwind_proc procs[MAX_PROC_MSG];
	unsigned int nprocs;
	/* File entries as they stand (SET replaces, DROP deletes), by key. */
	struct ember_msg_unwind_file files[MAX_TABLES];
	unsigned int nfiles, file_drops;
	unsigned int maps_requests, file_requests;
};

static struct fake_collector fc;
static struct ember_broker_client client;
static struct ember_unwind u;
static int sv[2];

/* The file mapped at addr in pid, as the broker opens it (here: through map_files). */
static int open_mapped(uint32_t pid, uint64_t addr)
{
	char path[128];
	struct ember_maps maps;
	const struct ember_map_entry *e;
	int fd = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	{
		int mfd = open(path, O_RDONLY | O_CLOEXEC);
		char *text;
		long len;

		if (mfd < 0)
			return -errno;
		len = ember_maps_read_fd(mfd, &text);
		close(mfd);
		if (len < 0 || ember_maps_parse(text, (size_t)len, &maps)) {
			free(len < 0 ? NULL : text);
			return -EINVAL;
		}
		free(text);
	}
	e = ember_maps_find(&maps, addr);
	if (e && e->start == addr && e->kind == EMBER_MAP_FILE) {
		snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
		         (unsigned long long)e->start, (unsigned long long)e->end);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		fd = fd < 0 ? -errno : fd;
	}
	ember_maps_free(&maps);
	return fd;
}

static void serve_request(const union ember_msg *in)
{
	union ember_msg out;
	char path[64];
	int fd = -EINVAL;

	if (in->broker_req.what == EMBER_BROKER_MAPS) {
		fc.maps_requests++;
		snprintf(path, sizeof(path), "/proc/%u/maps", in->broker_req.pid);
		if (atomic_load(&fc.refuse_maps))
			fd = -EPERM;
		else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			fd = -errno;
	} else if (in->broker_req.what == EMBER_BROKER_MAPPED_FILE) {
		fc.file_requests++;
		fd = in->broker_req.pid == atomic_load(&fc.stalled_pid)
		         ? -ETIMEDOUT
		         : open_mapped(in->broker_req.pid, in->broker_req.addr);
	}
	ember_msg_init(&out, EMBER_MSG_BROKER_REPLY, 0);
	out.broker_reply.id = in->broker_req.id;
	out.broker_reply.error = fd < 0 ? fd : 0;
	ember_msg_send(fc.sock, &out, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
	if (fd >= 0)
		close(fd);
}

static void record_file(const struct ember_msg_unwind_file *m)
{
	unsigned int i = 0;

	while (i < fc.nfiles && memcmp(&fc.files[i].key, &m->key, sizeof(m->key)))
		i++;
	if (m->op == EMBER_UNWIND_FILE_DROP) {
		fc.file_drops++;
		if (i < fc.nfiles)
			fc.files[i] = fc.files[--fc.nfiles];
		return;
	}
	ck_assert_uint_lt(i, MAX_TABLES);
	fc.files[i] = *m;
	fc.nfiles += i == fc.nfiles;
}

static void record(const union ember_msg *in)
{
	uint32_t t;

	pthread_mutex_lock(&fc.lock);
	switch (in->hdr.type) {
	case EMBER_MSG_UNWIND_TABLE:
		t = in->unwind_table.table;
		ck_assert_uint_lt(t, MAX_TABLES);
		if (in->unwind_table.op == EMBER_UNWIND_TABLE_CREATE) {
			fc.creates[t]++;
			fc.nrows[t] = in->unwind_table.nrows;
			fc.rows_seen[t] = 0;
		} else if (in->unwind_table.op == EMBER_UNWIND_TABLE_COMMIT) {
			fc.commits[t]++;
		} else if (in->unwind_table.op == EMBER_UNWIND_TABLE_DROP) {
			fc.drops[t]++;
		}
		break;
	case EMBER_MSG_UNWIND_ROWS:
		t = in->unwind_rows.table;
		ck_assert_uint_lt(t, MAX_TABLES);
		if (in->unwind_rows.first != fc.rows_seen[t] ||
		    in->unwind_rows.count % EMBER_UNWIND_BLOCK_ROWS)
			fc.rows_in_order = false;
		fc.rows_seen[t] += in->unwind_rows.count;
		break;
	case EMBER_MSG_UNWIND_PROC:
		if (in->unwind_proc.first == 0 && fc.nprocs < MAX_PROC_MSG)
			fc.procs[fc.nprocs++] = in->unwind_proc;
		break;
	case EMBER_MSG_UNWIND_FILE:
		record_file(&in->unwind_file);
		break;
	}
	pthread_mutex_unlock(&fc.lock);
}

static void *collector_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&fc.stop)) {
		struct pollfd p = {fc.sock, POLLIN, 0};
		union ember_msg m;
		int nfds;

		if (poll(&p, 1, 50) <= 0)
			continue;
		if (ember_msg_recv(fc.sock, &m, NULL, 0, &nfds))
			break; /* the symbolizer's end closed */
		if (m.hdr.type == EMBER_MSG_BROKER_REQ)
			serve_request(&m);
		else
			record(&m);
	}
	return NULL;
}

static void setup(void)
{
	memset(&fc, 0, sizeof(fc));
	fc.rows_in_order = true;
	pthread_mutex_init(&fc.lock, NULL);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	fc.sock = sv[1];
	ember_broker_client_init(&client, sv[0]);
	ck_assert_int_eq(ember_unwind_init(&u, &client), 0);
	ck_assert_int_eq(pthread_create(&fc.thread, NULL, collector_main, NULL), 0);
}

static void teardown(void)
{
	atomic_store(&fc.stop, true);
	pthread_join(fc.thread, NULL);
	ember_unwind_free(&u);
	close(sv[0]);
	close(sv[1]);
}

/* Waits until the fake collector has read (and recorded) everything sent so far. */
static void settle(void)
{
	for (int i = 0; i < 500; i++) {
		int queued = 0;

		if (ioctl(sv[0], SIOCOUTQ, &queued) || !queued)
			break;
		usleep(10000);
	}
	usleep(100000);
}

/* The last process message for pid, or NULL. */
static const struct ember_msg_unwind_proc *last_proc(uint32_t pid)
{
	for (int i = (int)fc.nprocs - 1; i >= 0; i--)
		if (fc.procs[i].pid == pid)
			return &fc.procs[i];
	return NULL;
}

static uint64_t stat_of(const char *name)
{
	struct ember_profile p;
	uint64_t v;

	ck_assert_int_eq(ember_profile_init(&p), 0);
	ember_unwind_report_stats(&u, &EMBER_PROFILE_STAT_SINK(&p));
	v = ember_profile_stat_get(&p, name);
	ember_profile_free(&p);
	return v;
}

static unsigned int tables_created(void)
{
	unsigned int n = 0;

	for (int t = 0; t < MAX_TABLES; t++)
		n += fc.creates[t];
	return n;
}

/* pid ran a new program just now: on the real clock, which the maps' read times are on. */
static void exec_at(uint32_t pid, uint64_t now_ns)
{
	ember_unwind_on_exec(&u, pid, ember_monotonic_ns(), now_ns);
}

/* A sample without a stack copy. */
static bool sample_at(const struct ember_sample_event *s, uint64_t now_ns)
{
	static struct ember_copy_stack out;

	return ember_unwind_on_sample(&u, s, NULL, NULL, now_ns, &out);
}

START_TEST(tables_are_built_once_and_shared)
{
	uint32_t self = (uint32_t)getpid();
	pid_t child = ember_waiting_child();
	const struct ember_msg_unwind_proc *mp;
	uint64_t pc = (uint64_t)(uintptr_t)&ember_waiting_child; /* a pc in this program's text */
	unsigned int built, with_table = 0, covering = 0;

	exec_at(self, SEC);
	settle();
	pthread_mutex_lock(&fc.lock);
	built = tables_created();
	ck_assert_uint_ge(built, 3); /* this program, libc, the dynamic loader, ... */
	ck_assert(fc.rows_in_order);
	for (int t = 0; t < MAX_TABLES; t++) {
		if (!fc.creates[t])
			continue;
		ck_assert_uint_eq(fc.commits[t], 1);
		ck_assert_uint_gt(fc.nrows[t], 0);
		ck_assert_uint_eq(fc.nrows[t] % EMBER_UNWIND_BLOCK_ROWS, 0);
		ck_assert_uint_eq(fc.rows_seen[t], fc.nrows[t]);
	}
	mp = last_proc(self);
	ck_assert_ptr_nonnull(mp);
	ck_assert_uint_eq(mp->count, mp->total);
	for (uint32_t i = 0; i < mp->count; i++) {
		const struct ember_unwind_mapping *m = &mp->mappings[i];

		ck_assert_uint_lt(m->start, m->end);
		if (i)
			ck_assert_uint_ge(m->start, mp->mappings[i - 1].end);
		if (m->table == EMBER_UNWIND_NO_TABLE)
			continue;
		with_table++;
		ck_assert_uint_eq(fc.commits[m->table], 1);
		/* This function is in this program's mapping, and its table is the one loaded. */
		if (pc >= m->start && pc < m->end)
			covering++;
	}
	ck_assert_uint_ge(with_table, 3);
	ck_assert_uint_eq(covering, 1);
	pthread_mutex_unlock(&fc.lock);

	/* The twin maps the same files: no table is built again, the same ids are used. */
	exec_at((uint32_t)child, 2 * SEC);
	settle();
	pthread_mutex_lock(&fc.lock);
	ck_assert_uint_eq(tables_created(), built);
	mp = last_proc((uint32_t)child);
	ck_assert_ptr_nonnull(mp);
	ck_assert_uint_eq(mp->total, last_proc(self)->total);
	for (uint32_t i = 0; i < mp->count; i++)
		ck_assert_uint_eq(mp->mappings[i].table, last_proc(self)->mappings[i].table);
	pthread_mutex_unlock(&fc.lock);
	ck_assert_uint_eq(stat_of("unwind.tables_built"), built);
	ck_assert_uint_eq(stat_of("unwind.tables_live"), built);
	ck_assert_uint_eq(stat_of("unwind.process_loads"), 2);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}
END_TEST

/* Field 26 of /proc/PID/stat: where the kernel says the program's code starts (mm->start_code). */
static uint64_t start_code_of(uint32_t pid)
{
	char path[64], buf[4096] = "", *p;
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')'); /* after the name, which may hold spaces */
	for (int field = 2; field < 26 && p; field++)
		p = strchr(p + 1, ' ');
	ck_assert(p && sscanf(p + 1, "%llu", &v) == 1);
	return v;
}

static void read_maps(uint32_t pid, struct ember_maps *maps)
{
	char path[64], *text = NULL;
	long len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	len = ember_maps_read_fd(fd, &text);
	close(fd);
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(ember_maps_parse(text, (size_t)len, maps), 0);
	free(text);
}

/* The file entry of key, as the fake collector holds it, or NULL. */
static const struct ember_msg_unwind_file *file_entry_of(const struct ember_file_key *key)
{
	for (unsigned int i = 0; i < fc.nfiles; i++)
		if (!memcmp(&fc.files[i].key, key, sizeof(*key)))
			return &fc.files[i];
	return NULL;
}

/*
 * The unwinder finds a table by the file behind a pc (bpf/unwind_file.h): for every mapping of
 * this process the entry of its file, keyed as the kernel names the file (the device as
 * major << 20 | minor, the inode), gives the table and the bias its mapping list gives; the
 * executable from where the kernel says its code starts, the vDSO from its base; the entry
 * holds the file's time and size as stat gives them.
 */
START_TEST(tables_found_by_file_agree_with_the_process_lists)
{
	uint32_t self = (uint32_t)getpid();
	uint64_t start_code = start_code_of(self);
	__u64 bias = 0;
	const struct ember_msg_unwind_proc *mp;
	unsigned int checked = 0, exe = 0, vdso = 0;
	struct ember_maps maps;

	exec_at(self, SEC);
	settle();
	read_maps(self, &maps);
	pthread_mutex_lock(&fc.lock);
	mp = last_proc(self);
	ck_assert_ptr_nonnull(mp);
	ck_assert_uint_gt(mp->read_ns, 0);
	for (uint32_t i = 0; i < mp->count; i++) {
		const struct ember_unwind_mapping *m = &mp->mappings[i];
		const struct ember_map_entry *e = ember_maps_find(&maps, m->start);
		struct ember_file_key key = {0};
		const struct ember_msg_unwind_file *f;
		struct ember_file_seen seen;
		struct stat st;

		if (m->table == EMBER_UNWIND_NO_TABLE)
			continue;
		ck_assert(e && e->start == m->start);
		if (e->kind != EMBER_MAP_VDSO)
			key =
			    (struct ember_file_key){e->inode, e->dev_major << 20 | e->dev_minor, 0};
		f = file_entry_of(&key);
		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(f->file.table, m->table);
		seen =
		    (struct ember_file_seen){f->file.mtime_sec, f->file.mtime_nsec, f->file.size};
		if (e->kind == EMBER_MAP_VDSO) {
			ck_assert_int_eq(ember_file_base_bias(&f->file, &seen, m->start, &bias), 0);
			ck_assert_uint_eq(f->file.size, m->end - m->start);
			vdso++;
		} else {
			/* Its first byte: a mapping may reach past its segment's bytes (to a page).
			 */
			ck_assert_int_eq(ember_file_mapping_bias(&f->file, &seen, m->start,
			                                         e->offset, m->start, &bias),
			                 0);
			ck_assert_int_eq(stat(ember_maps_path(&maps, e), &st), 0);
			ck_assert_int_eq(f->file.mtime_sec, st.st_mtim.tv_sec);
			ck_assert_uint_eq(f->file.mtime_nsec, st.st_mtim.tv_nsec);
			ck_assert_uint_eq(f->file.size, st.st_size);
		}
		ck_assert_uint_eq(bias, m->bias);
		if (start_code >= m->start && start_code < m->end) {
			ck_assert_int_eq(ember_file_base_bias(&f->file, &seen, start_code, &bias),
			                 0);
			ck_assert_uint_eq(bias, m->bias);
			exe++;
		}
		checked++;
	}
	pthread_mutex_unlock(&fc.lock);
	ember_maps_free(&maps);
	ck_assert_uint_ge(checked, 3);
	ck_assert_uint_eq(exe, 1);
	ck_assert_uint_eq(vdso, 1);
	ck_assert_uint_eq(stat_of("unwind.files_named"), fc.nfiles);
}
END_TEST

/* Copies the file at from to to. */
static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	ck_assert_int_ge(in, 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	ck_assert_int_ge(out, 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

/* Maps the ELF file at path's first executable segment executable, as the loader would. */
static uint64_t map_exec(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t off = 0, len = 0;
	size_t n = 0;
	void *at;
	Elf *elf;

	ck_assert_int_ge(fd, 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_int_eq(elf_getphdrnum(elf, &n), 0);
	for (size_t i = 0; i < n && !len; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			off = ph.p_offset & ~4095ull;
			len = ph.p_offset + ph.p_filesz - off;
		}
	}
	elf_end(elf);
	ck_assert_uint_gt(len, 0);
	at = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)off);
	ck_assert_ptr_ne(at, MAP_FAILED);
	close(fd);
	return (uint64_t)(uintptr_t)at;
}

/* What the kernel would see of the file: its key as maps names it, its time and size. */
static struct ember_file_key kernel_key(const char *path, struct ember_file_seen *seen)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	*seen = (struct ember_file_seen){st.st_mtim.tv_sec, (uint32_t)st.st_mtim.tv_nsec,
	                                 (uint64_t)st.st_size};
	return (struct ember_file_key){st.st_ino, major(st.st_dev) << 20 | minor(st.st_dev), 0};
}

/* A sample of this process whose table the unwinder found changed (bpf/unwind.bpf.h). */
static void changed_sample(uint64_t now_ns)
{
	const struct ember_sample_event s = {
	    .kind = EMBER_EV_SAMPLE,
	    .tgid = (uint32_t)getpid(),
	    .ustack_len = 1,
	    .stack_flags = EMBER_STACK_UNWIND_NO_PROC | EMBER_STACK_FILE_CHANGED |
	                   EMBER_UNWIND_STOP_UNCHECKED << EMBER_STACK_UNWIND_STOP_SHIFT};

	sample_at(&s, now_ns);
}

/*
 * A binary rewritten in place (same device and inode): the unwinder refuses the table built
 * from the old one (its time and size differ), and the symbolizer, told so, opens the file
 * again and builds the new one's, its old entry and table dropped first.
 */
START_TEST(a_file_rewritten_in_place_is_built_again)
{
	char dir[] = "/tmp/ember-ut-XXXXXX", path[64];
	const struct ember_msg_unwind_file *f;
	struct ember_file_seen before, after;
	struct ember_file_key key;
	unsigned int drops;
	uint32_t table;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/prog", dir);
	copy_file("/proc/self/exe", path);
	map_exec(path);
	key = kernel_key(path, &before);
	exec_at((uint32_t)getpid(), SEC);
	settle();
	pthread_mutex_lock(&fc.lock);
	f = file_entry_of(&key);
	ck_assert_ptr_nonnull(f);
	ck_assert(ember_file_same(&f->file, &before));
	table = f->file.table;
	drops = fc.file_drops;
	pthread_mutex_unlock(&fc.lock);

	usleep(20000); /* another modification time, whatever the file system's granularity */
	copy_file("/bin/true", path);
	ck_assert_uint_eq(kernel_key(path, &after).ino, key.ino);
	pthread_mutex_lock(&fc.lock);
	ck_assert(!ember_file_same(&file_entry_of(&key)->file, &after));
	pthread_mutex_unlock(&fc.lock);

	changed_sample(5 * SEC);
	settle();
	pthread_mutex_lock(&fc.lock);
	f = file_entry_of(&key);
	ck_assert_ptr_nonnull(f);
	ck_assert(ember_file_same(&f->file, &after));
	ck_assert_uint_eq(f->file.table, table); /* the file's slot, rebuilt */
	ck_assert_uint_eq(fc.file_drops, drops + 1);
	ck_assert_uint_eq(fc.drops[table], 1);
	ck_assert_uint_eq(fc.commits[table], 2);
	pthread_mutex_unlock(&fc.lock);
	ck_assert_uint_eq(stat_of("unwind.files_rebuilt_changed"), 1);
	unlink(path);
	rmdir(dir);
}
END_TEST

/*
 * A binary deleted while mapped keeps its inode, time and size: its table still serves it
 * (unlinking changes the inode's change time only), and a process loaded after the
 * deletion, told the file changed, finds it the same and builds nothing.
 */
START_TEST(a_file_deleted_while_mapped_keeps_its_table)
{
	char dir[] = "/tmp/ember-ut-XXXXXX", path[64], link[96];
	const struct ember_msg_unwind_file *f;
	struct ember_file_seen seen;
	struct ember_file_key key;
	unsigned int built;
	uint64_t at;
	struct stat st;
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/prog", dir);
	copy_file("/proc/self/exe", path);
	at = map_exec(path);
	key = kernel_key(path, &seen);
	exec_at((uint32_t)getpid(), SEC);
	settle();
	built = tables_created();
	ck_assert_int_eq(unlink(path), 0);
	/* What the kernel sees through the mapping now. */
	for (FILE *maps = fopen("/proc/self/maps", "re"); maps; fclose(maps), maps = NULL) {
		unsigned long long start, end;

		while (fscanf(maps, "%llx-%llx%*[^\n]\n", &start, &end) == 2)
			if (start == at)
				snprintf(link, sizeof(link), "/proc/self/map_files/%llx-%llx",
				         start, end);
	}
	fd = open(link, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	close(fd);
	ck_assert_uint_eq(st.st_nlink, 0);
	seen = (struct ember_file_seen){st.st_mtim.tv_sec, (uint32_t)st.st_mtim.tv_nsec,
	                                (uint64_t)st.st_size};
	pthread_mutex_lock(&fc.lock);
	f = file_entry_of(&key);
	ck_assert_ptr_nonnull(f);
	ck_assert(ember_file_same(&f->file, &seen));
	pthread_mutex_unlock(&fc.lock);

	changed_sample(5 * SEC);
	settle();
	ck_assert_uint_eq(tables_created(), built);
	ck_assert_uint_eq(stat_of("unwind.files_rebuilt_changed"), 0);
	rmdir(dir);
}
END_TEST

/*
 * Two files with the same inode number on two devices (two tmpfs mounts number their inodes
 * alike; so do containers' layers): two entries, keyed apart by device, with tables of
 * their own. Mounting needs root.
 */
START_TEST(the_same_inode_on_two_devices_is_two_files)
{
	char dir[] = "/tmp/ember-ut-XXXXXX", sub[2][64], path[2][80];
	const struct ember_msg_unwind_file *f[2];
	struct ember_file_seen seen;
	struct ember_file_key key[2];

	if (geteuid() != 0)
		EMBER_SKIP("not root: no tmpfs mounted (run as root)");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (int i = 0; i < 2; i++) {
		snprintf(sub[i], sizeof(sub[i]), "%s/%c", dir, 'a' + i);
		snprintf(path[i], sizeof(path[i]), "%s/prog", sub[i]);
		ck_assert_int_eq(mkdir(sub[i], 0700), 0);
		ck_assert_int_eq(mount("none", sub[i], "tmpfs", 0, NULL), 0);
		copy_file(i ? "/bin/true" : "/proc/self/exe", path[i]);
		map_exec(path[i]);
		key[i] = kernel_key(path[i], &seen);
	}
	ck_assert_uint_eq(key[0].ino, key[1].ino);
	ck_assert_uint_ne(key[0].dev, key[1].dev);
	exec_at((uint32_t)getpid(), SEC);
	settle();
	pthread_mutex_lock(&fc.lock);
	f[0] = file_entry_of(&key[0]);
	f[1] = file_entry_of(&key[1]);
	ck_assert_ptr_nonnull(f[0]);
	ck_assert_ptr_nonnull(f[1]);
	ck_assert_uint_ne(f[0]->file.table, f[1]->file.table);
	ck_assert_uint_ne(f[0]->file.size, f[1]->file.size);
	pthread_mutex_unlock(&fc.lock);
	for (int i = 0; i < 2; i++) {
		umount2(sub[i], MNT_DETACH); /* mapped still: gone once unmapped */
		rmdir(sub[i]);
	}
	rmdir(dir);
}
END_TEST

START_TEST(exits_and_idle_tables_are_dropped)
{
	const struct ember_sample_event complete = {
	    .kind = EMBER_EV_SAMPLE, .tgid = 1, .ustack_len = 1, .stack_flags = 0};
	uint32_t self = (uint32_t)getpid();
	pid_t child = ember_waiting_child();
	unsigned int built;

	exec_at(self, SEC);
	exec_at((uint32_t)child, SEC);
	settle();
	built = tables_created();
	/* One exit: the process's mappings are withdrawn; the tables stay (the other maps them). */
	ember_unwind_on_exit(&u, (uint32_t)child, 2 * SEC);
	settle();
	pthread_mutex_lock(&fc.lock);
	ck_assert_ptr_nonnull(last_proc((uint32_t)child));
	ck_assert_uint_eq(last_proc((uint32_t)child)->total, 0);
	for (int t = 0; t < MAX_TABLES; t++)
		ck_assert_uint_eq(fc.drops[t], 0);
	pthread_mutex_unlock(&fc.lock);
	/* An exit of a process never loaded sends nothing. */
	ember_unwind_on_exit(&u, 0x3ffff0, 2 * SEC);
	/* The last one: after the idle time its tables are dropped, each once. */
	ember_unwind_on_exit(&u, self, 3 * SEC);
	/* Any later event sweeps: here a complete sample. */
	sample_at(&complete, 3 * SEC + EMBER_UNWIND_IDLE_DROP_NS / 2);
	settle();
	for (int t = 0; t < MAX_TABLES; t++)
		ck_assert_uint_eq(fc.drops[t], 0); /* not idle long enough yet */
	sample_at(&complete, 3 * SEC + EMBER_UNWIND_IDLE_DROP_NS + SEC);
	settle();
	pthread_mutex_lock(&fc.lock);
	for (int t = 0; t < MAX_TABLES; t++)
		ck_assert_uint_eq(fc.drops[t], fc.commits[t] ? 1 : 0);
	pthread_mutex_unlock(&fc.lock);
	ck_assert_uint_eq(stat_of("unwind.tables_dropped"), built);
	ck_assert_uint_eq(stat_of("unwind.tables_live"), 0);
	/* A process met again builds its tables again (in the slots just freed). */
	exec_at(self, 20 * SEC);
	settle();
	ck_assert_uint_eq(tables_created(), 2 * built);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}
END_TEST

START_TEST(refused_maps_back_off)
{
	struct ember_sample_event s = {.kind = EMBER_EV_SAMPLE,
	                               .tgid = (uint32_t)getpid(),
	                               .ustack_len = 1,
	                               .stack_flags = EMBER_STACK_UNWIND_NO_PROC};
	unsigned int asked;

	atomic_store(&fc.refuse_maps, true);
	sample_at(&s, SEC);
	settle();
	asked = fc.maps_requests;
	ck_assert_uint_eq(asked, 1);
	ck_assert_ptr_null(last_proc(s.tgid));
	/* Samples right after: no new request until the back-off has passed. */
	for (int i = 1; i <= 5; i++)
		sample_at(&s, SEC + (uint64_t)i * 100);
	settle();
	ck_assert_uint_eq(fc.maps_requests, asked);
	ck_assert_uint_eq(stat_of("unwind.process_loads_deferred"), 5);
	ck_assert_uint_eq(stat_of("unwind.samples_missed_tables"), 6);
	/* Allowed again later, and served now. */
	atomic_store(&fc.refuse_maps, false);
	sample_at(&s, SEC + EMBER_UNWIND_RELOAD_MAX_NS);
	settle();
	ck_assert_uint_eq(fc.maps_requests, asked + 1);
	ck_assert_ptr_nonnull(last_proc(s.tgid));
}
END_TEST

/* A sample that comes after its process's exit record (from another CPU's buffer), or a
 * process listed at start that is gone by its turn: no entry stays behind. */
START_TEST(processes_found_gone_are_forgotten)
{
	pid_t child = ember_waiting_child();
	struct ember_sample_event s = {.kind = EMBER_EV_SAMPLE,
	                               .tgid = (uint32_t)child,
	                               .ustack_len = 1,
	                               .stack_flags = EMBER_STACK_UNWIND_NO_PROC};

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	sample_at(&s, SEC);
	ember_unwind_on_running(&u, (1u << 22) + 7, 1); /* past the largest pid_max: none */
	ember_unwind_work(&u, SEC, SEC + SEC);
	settle();
	ck_assert_uint_eq(fc.maps_requests, 2);
	ck_assert_uint_eq(stat_of("unwind.processes"), 0);
	ck_assert_uint_eq(stat_of("unwind.processes_gone"), 2);
	ck_assert_ptr_null(last_proc(s.tgid));
	/* Refused (the collector forgot it at its exit): kept for the back-off, then swept. */
	atomic_store(&fc.refuse_maps, true);
	sample_at(&s, 2 * SEC);
	ck_assert_uint_eq(stat_of("unwind.processes"), 1);
	s.tgid = (uint32_t)getpid();
	s.stack_flags = 0;
	sample_at(&s, 2 * SEC + EMBER_UNWIND_RELOAD_MAX_NS);
	ck_assert_uint_eq(stat_of("unwind.processes"), 0);
	ck_assert_uint_eq(stat_of("unwind.processes_gone"), 3);
}
END_TEST

/* The memory budget lowers the cap of the rows kept for stack copies, and raises it back. */
START_TEST(the_budget_shrinks_the_rows_kept)
{
	uint32_t self = (uint32_t)getpid();
	size_t held;

	exec_at(self, SEC);
	settle();
	held = ember_unwind_rows_bytes(&u);
	ck_assert_uint_gt(held, EMBER_UNWIND_ROWS_FLOOR_BYTES / 4);
	ck_assert_uint_eq(ember_unwind_set_rows_limit(&u, 0), held - ember_unwind_rows_bytes(&u));
	ck_assert_uint_eq(ember_unwind_rows_limit(&u), EMBER_UNWIND_ROWS_FLOOR_BYTES);
	ck_assert_uint_le(ember_unwind_rows_bytes(&u), EMBER_UNWIND_ROWS_FLOOR_BYTES);
	ck_assert_uint_eq(ember_unwind_set_rows_limit(&u, SIZE_MAX), 0);
	ck_assert_uint_eq(ember_unwind_rows_limit(&u), EMBER_UNWIND_KEEP_ROWS_BYTES);
	ck_assert_uint_eq(stat_of("unwind.copy.rows_limit"), EMBER_UNWIND_KEEP_ROWS_BYTES);
}
END_TEST

START_TEST(a_closed_collector_disables_the_tables)
{
	uint32_t self = (uint32_t)getpid();

	exec_at(self, SEC);
	settle();
	ck_assert(!u.disabled);
	atomic_store(&fc.stop, true);
	pthread_join(fc.thread, NULL);
	close(sv[1]);
	sv[1] = -1;
	/* The exit cannot be told: the module stops sending (no SIGPIPE, no error loop). */
	ember_unwind_on_exit(&u, self, 2 * SEC);
	ck_assert(u.disabled);
	exec_at(self, 3 * SEC);
	ck_assert_uint_eq(stat_of("unwind.process_loads"), 1);
	/* teardown joins again: start a thread that ends at once. */
	atomic_store(&fc.stop, true);
	pthread_create(&fc.thread, NULL, collector_main, NULL);
}
END_TEST

START_TEST(exec_keeps_maps_read_after_it_and_drops_older_ones)
{
	uint32_t self = (uint32_t)getpid();
	struct ember_sample_event s = {.kind = EMBER_EV_SAMPLE,
	                               .tgid = self,
	                               .ustack_len = 1,
	                               .stack_flags = EMBER_STACK_UNWIND_NO_PROC};
	uint64_t exec_ns = ember_monotonic_ns();
	unsigned int n;

	/* A sample of the new program reached the loader before its exec did. */
	sample_at(&s, SEC);
	settle();
	pthread_mutex_lock(&fc.lock);
	ck_assert_ptr_nonnull(last_proc(self));
	ck_assert_uint_gt(last_proc(self)->total, 0);
	n = fc.nprocs;
	pthread_mutex_unlock(&fc.lock);
	/* The exec came before that read: the list is the new program's and stays. */
	ember_unwind_on_exec(&u, self, exec_ns, 2 * SEC);
	settle();
	ck_assert_uint_eq(fc.nprocs, n);
	ck_assert_uint_eq(stat_of("unwind.process_loads"), 1);
	/* An exec after the read: the collector forgets the list before the new one comes. */
	exec_at(self, 3 * SEC);
	settle();
	pthread_mutex_lock(&fc.lock);
	ck_assert_uint_eq(fc.nprocs, n + 2);
	ck_assert_uint_eq(fc.procs[n].total, 0);
	ck_assert_uint_gt(fc.procs[n + 1].total, 0);
	pthread_mutex_unlock(&fc.lock);
	ck_assert_uint_eq(stat_of("unwind.process_loads"), 2);
}
END_TEST

/*
 * A process whose memory-map lock is held (its files cannot be opened through it in time)
 * loaded first: the program's other processes must still get its tables at once, not after
 * a stall's retry delay (a stalled Perl process left its twin without /usr/bin/perl's).
 */
START_TEST(a_stalled_process_leaves_its_twin_the_tables)
{
	uint32_t self = (uint32_t)getpid();
	pid_t child = ember_waiting_child();
	const struct ember_msg_unwind_proc *mp;
	unsigned int with_table = 0;

	atomic_store(&fc.stalled_pid, (uint32_t)child);
	exec_at((uint32_t)child, SEC);
	settle();
	ck_assert_uint_le(tables_created(), 1); /* the vDSO's, which needs no file */
	ck_assert_uint_gt(stat_of("unwind.table_errors"), 0);
	/* The twin, a millisecond later: well within the stall's retry delay. */
	exec_at(self, SEC + 1000000);
	settle();
	ck_assert_uint_ge(tables_created(), 4);
	pthread_mutex_lock(&fc.lock);
	mp = last_proc(self);
	ck_assert_ptr_nonnull(mp);
	for (uint32_t i = 0; i < mp->count; i++)
		with_table += mp->mappings[i].table != EMBER_UNWIND_NO_TABLE;
	pthread_mutex_unlock(&fc.lock);
	ck_assert_uint_ge(with_table, 3);
	atomic_store(&fc.stalled_pid, 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}
END_TEST

START_TEST(stop_markers_name_every_reason)
{
	for (uint32_t r = 1; r < EMBER_UNWIND_STOP_MAX; r++)
		ck_assert_ptr_nonnull(strstr(ember_unwind_stop_marker(r), "[unwind stopped: "));
	ck_assert_str_eq(ember_unwind_stop_marker(EMBER_UNWIND_STOP_MAX),
	                 "[unwind stopped: unknown reason]");
}
END_TEST

static Suite *unwind_tables_suite(void)
{
	Suite *s = suite_create("unwind_tables");
	TCase *tc = tcase_create("tables");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, tables_are_built_once_and_shared);
	tcase_add_test(tc, tables_found_by_file_agree_with_the_process_lists);
	tcase_add_test(tc, a_file_rewritten_in_place_is_built_again);
	tcase_add_test(tc, a_file_deleted_while_mapped_keeps_its_table);
	tcase_add_test(tc, the_same_inode_on_two_devices_is_two_files);
	tcase_add_test(tc, exits_and_idle_tables_are_dropped);
	tcase_add_test(tc, refused_maps_back_off);
	tcase_add_test(tc, processes_found_gone_are_forgotten);
	tcase_add_test(tc, the_budget_shrinks_the_rows_kept);
	tcase_add_test(tc, a_closed_collector_disables_the_tables);
	tcase_add_test(tc, exec_keeps_maps_read_after_it_and_drops_older_ones);
	tcase_add_test(tc, a_stalled_process_leaves_its_twin_the_tables);
	tcase_add_test(tc, stop_markers_name_every_reason);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(unwind_tables_suite)
