// SPDX-License-Identifier: Apache-2.0
/*
 * A hostile symbolizer for test_security.py: it connects to ember-collector
 * like the real one and then breaks every rule it can. Each check prints
 * "ok NAME" or "FAIL NAME: why"; the exit code is the number of failures.
 *
 *   hostile_peer SOCKET seals       tries to resize, punch, write or map the ring writable
 *   hostile_peer SOCKET positions   writes impossible consumer positions (0, head+1, max)
 *   hostile_peer SOCKET messages    sends malformed, misplaced and fd-carrying messages
 *   hostile_peer SOCKET broker SAMPLED OTHER GONE   asks for what it must not get
 *   hostile_peer SOCKET refused     expects to be turned away (wrong uid)
 *   hostile_peer SOCKET wakeup      makes its wake-up descriptor blocking and fills it up
 *   hostile_peer SOCKET linger      passes a socket whose last close blocks for 30 s
 *   hostile_peer SOCKET serve PID   expects the maps of PID to be served
 *   hostile_peer SOCKET refuse PID  expects the maps and memory of PID to be refused
 *   hostile_peer SOCKET tables PID  sends unwind tables and mappings (of PID, a sampled process)
 *                                   out of bounds and out of order, then well-formed ones
 */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf/python.h"
#include "bpf/records.h"
#include "ipc/endpoint.h"
#include "ipc/proto.h"
#include "ipc/ring.h"

static const char *sock_path;
static int failures;

#define CHECK(name, cond, ...)                                                                     \
	do {                                                                                       \
		if (cond) {                                                                        \
			printf("ok %s\n", name);                                                   \
		} else {                                                                           \
			printf("FAIL %s: ", name);                                                 \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
			failures++;                                                                \
		}                                                                                  \
		fflush(stdout);                                                                    \
	} while (0)

struct conn {
	int sock;
	int data_fd, pos_fd, event_fd;
	uint64_t ring_size;
	const struct ember_ring_shared_hdr *hdr;
	volatile uint64_t *pos;
};

static int send_raw(int sock, const void *buf, size_t len, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static void hello_msg(union ember_msg *m)
{
	ember_msg_init(m, EMBER_MSG_HELLO, 1);
	m->hello.records_version = EMBER_RECORDS_VERSION;
	m->hello.pid = (uint32_t)getpid();
}

/* True when the collector closes the connection within ms (messages it sends meanwhile are read).
 */
static bool closed_within(int sock, int ms)
{
	for (int waited = 0; waited < ms; waited += 50) {
		struct pollfd p = {.fd = sock, .events = POLLIN};
		char buf[EMBER_MSG_MAX];
		ssize_t n;

		if (poll(&p, 1, 50) <= 0)
			continue;
		n = recv(sock, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
	}
	return false;
}

/* Connects and completes the handshake. Returns 0 or a negative errno. */
static int open_conn(struct conn *c)
{
	union ember_msg m;
	int fds[3], nfds = 0, err;

	memset(c, 0, sizeof(*c));
	c->sock = ember_endpoint_connect(sock_path);
	if (c->sock < 0)
		return c->sock;
	hello_msg(&m);
	err = ember_msg_send(c->sock, &m, NULL, 0);
	for (int i = 0; i < 100 && (!err || err == -EAGAIN); i++) {
		err = ember_msg_recv(c->sock, &m, fds, 3, &nfds);
		if (err != -EAGAIN)
			break;
		usleep(50000);
	}
	if (!err && (m.hdr.type != EMBER_MSG_WELCOME || nfds != 3))
		err = -EPROTO;
	if (err) {
		close(c->sock);
		return err;
	}
	c->data_fd = fds[0];
	c->pos_fd = fds[1];
	c->event_fd = fds[2];
	c->ring_size = m.welcome.ring_size;
	c->hdr =
	    mmap(NULL, EMBER_RING_HDR_SIZE + c->ring_size, PROT_READ, MAP_SHARED, c->data_fd, 0);
	c->pos = mmap(NULL, EMBER_RING_POS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, c->pos_fd, 0);
	if (c->hdr == MAP_FAILED || c->pos == MAP_FAILED)
		return -errno;
	return 0;
}

static void close_conn(struct conn *c)
{
	if (c->hdr && c->hdr != MAP_FAILED)
		munmap((void *)c->hdr, EMBER_RING_HDR_SIZE + c->ring_size);
	if (c->pos && c->pos != MAP_FAILED)
		munmap((void *)c->pos, EMBER_RING_POS_SIZE);
	close(c->data_fd);
	close(c->pos_fd);
	close(c->event_fd);
	close(c->sock);
}

static const char *err_name(int e)
{
	return e == EPERM ? "EPERM" : e == EACCES ? "EACCES" : strerror(e);
}

static int cmd_seals(void)
{
	struct conn c;
	char path[64];
	void *m;
	int r, fd, err = open_conn(&c);

	CHECK("handshake", !err, "%s", strerror(-err));
	if (err)
		return failures;
	r = ftruncate(c.data_fd, (off_t)(EMBER_RING_HDR_SIZE + 2 * c.ring_size));
	CHECK("ring: ftruncate to grow", r < 0 && errno == EPERM, "%d %s", r, err_name(errno));
	r = ftruncate(c.data_fd, 4096);
	CHECK("ring: ftruncate to shrink", r < 0 && errno == EPERM, "%d %s", r, err_name(errno));
	r = fallocate(c.data_fd, 0, 0, (off_t)(EMBER_RING_HDR_SIZE + 4 * c.ring_size));
	CHECK("ring: fallocate to grow", r < 0 && errno == EPERM, "%d %s", r, err_name(errno));
	r = fallocate(c.data_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096);
	CHECK("ring: fallocate punching a hole", r < 0 && errno == EPERM, "%d %s", r,
	      err_name(errno));
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, c.data_fd, 0);
	CHECK("ring: writable shared mapping",
	      m == MAP_FAILED && (errno == EPERM || errno == EACCES), "mapped (%s)",
	      err_name(errno));
	r = mprotect((void *)c.hdr, 4096, PROT_READ | PROT_WRITE);
	CHECK("ring: mprotect the read-only mapping writable", r < 0 && errno == EACCES, "%d %s", r,
	      err_name(errno));
	r = (int)pwrite(c.data_fd, "x", 1, 0);
	CHECK("ring: write()", r < 0 && errno == EPERM, "%d %s", r, err_name(errno));
	r = fcntl(c.data_fd, F_ADD_SEALS, F_SEAL_WRITE);
	CHECK("ring: change the seals", r < 0 && errno == EPERM, "%d %s", r, err_name(errno));
	/* A fresh open of the same memfd through /proc: the seals are the file's. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", c.data_fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		CHECK("ring: writable mapping of a reopened descriptor", m == MAP_FAILED,
		      "mapped writable");
		r = (int)pwrite(fd, "x", 1, 0);
		CHECK("ring: write() through a reopened descriptor", r < 0 && errno == EPERM,
		      "%d %s", r, err_name(errno));
		close(fd);
	} else {
		CHECK("ring: reopen read-write refused", errno == EACCES || errno == EPERM, "%s",
		      err_name(errno));
	}
	r = ftruncate(c.pos_fd, 1 << 20);
	CHECK("position: ftruncate to grow", r < 0 && errno == EPERM, "%d %s", r, err_name(errno));
	r = ftruncate(c.pos_fd, 0);
	CHECK("position: ftruncate to shrink", r < 0 && errno == EPERM, "%d %s", r,
	      err_name(errno));
	r = fallocate(c.pos_fd, 0, 0, 1 << 20);
	CHECK("position: fallocate to grow", r < 0 && errno == EPERM, "%d %s", r, err_name(errno));
	CHECK("still connected after the attempts", !closed_within(c.sock, 300),
	      "the collector hung up");
	close_conn(&c);
	return failures;
}

static uint64_t head_of(const struct conn *c)
{
	return __atomic_load_n(&c->hdr->head, __ATOMIC_ACQUIRE);
}

static int cmd_positions(void)
{
	static const char *const names[] = {"0 after a full ring", "head+1", "UINT64_MAX",
	                                    "unaligned"};

	for (int g = 0; g < 4; g++) {
		struct conn c;
		int err = open_conn(&c), waited;
		uint64_t bad;
		char name[96];

		snprintf(name, sizeof(name), "position %s: handshake", names[g]);
		CHECK(name, !err, "%s", strerror(-err));
		if (err)
			continue;
		/* Consume honestly until the producer has gone around the ring. */
		for (waited = 0; waited < 20000 && head_of(&c) <= 2 * c.ring_size; waited += 10) {
			*c.pos = head_of(&c) & ~(uint64_t)7;
			usleep(10000);
		}
		snprintf(name, sizeof(name), "position %s: ring went around", names[g]);
		CHECK(name, head_of(&c) > c.ring_size, "head %" PRIu64 " size %" PRIu64,
		      head_of(&c), c.ring_size);
		bad = g == 0 ? 0 : g == 1 ? head_of(&c) + 1 : g == 2 ? UINT64_MAX : head_of(&c) - 3;
		*c.pos = bad;
		snprintf(name, sizeof(name), "position %s: disconnected", names[g]);
		CHECK(name, closed_within(c.sock, 5000), "still connected");
		close_conn(&c);
	}
	return failures;
}

/* Sends one bad thing, before or after the handshake, and expects the hang-up. */
static void expect_disconnect(const char *name, bool after_handshake, const void *buf, size_t len,
                              bool with_fd)
{
	struct conn c = {.sock = -1, .data_fd = -1, .pos_fd = -1, .event_fd = -1};
	int fd = with_fd ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1, err;

	if (after_handshake) {
		err = open_conn(&c);
	} else {
		c.sock = ember_endpoint_connect(sock_path);
		err = c.sock < 0 ? c.sock : 0;
	}
	if (err) {
		CHECK(name, false, "cannot connect: %s", strerror(-err));
		return;
	}
	err = send_raw(c.sock, buf, len, fd);
	/* A send that fails because the collector already hung up also counts; so does a
	 * descriptor the kernel refuses at the source (the collector's SO_PASSRIGHTS). */
	CHECK(name,
	      err == -EPIPE || err == -ECONNRESET || (with_fd && err == -EPERM) ||
	          closed_within(c.sock, 3000),
	      "the collector kept the connection");
	if (fd >= 0)
		close(fd);
	if (after_handshake)
		close_conn(&c);
	else
		close(c.sock);
}

static int cmd_messages(void)
{
	union ember_msg m;
	char big[EMBER_MSG_MAX + 904];
	struct conn c;
	int fds[1], nfds, err;

	hello_msg(&m);
	expect_disconnect("truncated HELLO", false, &m, 6, false);
	expect_disconnect("empty packet", false, &m, 0, false);
	memset(big, 0, sizeof(big));
	memcpy(big, &m, sizeof(m.hello));
	((struct ember_msg_hdr *)big)->length = sizeof(big);
	expect_disconnect("oversized message", false, big, sizeof(big), false);
	hello_msg(&m);
	m.hdr.magic ^= 1;
	expect_disconnect("bad magic", false, &m, sizeof(m.hello), false);
	hello_msg(&m);
	m.hdr.version = 99;
	expect_disconnect("bad version", false, &m, sizeof(m.hello), false);
	hello_msg(&m);
	m.hdr.type = 99;
	expect_disconnect("unknown type", false, &m, sizeof(m.hello), false);
	hello_msg(&m);
	m.hdr.length += 8;
	expect_disconnect("length field disagrees", false, &m, sizeof(m.hello), false);
	ember_msg_init(&m, EMBER_MSG_WELCOME, 1);
	expect_disconnect("WELCOME from the symbolizer", false, &m, sizeof(m.welcome), false);
	ember_msg_init(&m, EMBER_MSG_BROKER_REQ, 1);
	m.broker_req.what = EMBER_BROKER_KALLSYMS;
	expect_disconnect("broker request before HELLO", false, &m, sizeof(m.broker_req), false);
	hello_msg(&m);
	expect_disconnect("HELLO carrying a descriptor", false, &m, sizeof(m.hello), true);

	hello_msg(&m);
	expect_disconnect("second HELLO", true, &m, sizeof(m.hello), false);
	ember_msg_init(&m, EMBER_MSG_BROKER_REQ, 2);
	m.broker_req.what = EMBER_BROKER_KALLSYMS;
	expect_disconnect("broker request carrying a descriptor", true, &m, sizeof(m.broker_req),
	                  true);
	expect_disconnect("truncated broker request", true, &m, sizeof(m.broker_req) - 9, false);
	ember_msg_init(&m, EMBER_MSG_FLUSH, 2);
	expect_disconnect("FLUSH from the symbolizer", true, &m, sizeof(m.flush), false);
	ember_msg_init(&m, EMBER_MSG_BROKER_REPLY, 2);
	expect_disconnect("BROKER_REPLY from the symbolizer", true, &m, sizeof(m.broker_reply),
	                  false);
	/* Interpreter rows: exactly the runtime's row size, of a runtime the collector knows, that
	 * its row check takes (an all-zero Python row has no interpreter loop). */
	memset(big, 0, sizeof(big));
	ember_msg_interp_row(&m, (uint32_t)getpid(), EMBER_ROW_KINDS, EMBER_INTERP_ROW_SET, big,
	                     sizeof(struct ember_py_proc));
	expect_disconnect("interpreter row of an unknown runtime", true, &m, m.hdr.length, false);
	ember_msg_interp_row(&m, (uint32_t)getpid(), EMBER_RUNTIME_PYTHON, EMBER_INTERP_ROW_SET,
	                     big, sizeof(struct ember_py_proc) - 1);
	expect_disconnect("interpreter row a byte short", true, &m, m.hdr.length, false);
	ember_msg_interp_row(&m, (uint32_t)getpid(), EMBER_RUNTIME_PYTHON, EMBER_INTERP_ROW_SET,
	                     big, sizeof(struct ember_py_proc));
	expect_disconnect("Python row its check refuses", true, &m, m.hdr.length, false);

	/* Well formed but asking for nothing known: an error reply, not a hang-up. */
	err = open_conn(&c);
	CHECK("handshake for a valid unknown request", !err, "%s", strerror(-err));
	if (err)
		return failures;
	ember_msg_init(&m, EMBER_MSG_BROKER_REQ, 2);
	m.broker_req.id = 7;
	m.broker_req.what = 99;
	err = ember_msg_send(c.sock, &m, NULL, 0);
	for (int i = 0; i < 100 && (!err || err == -EAGAIN); i++) {
		err = ember_msg_recv(c.sock, &m, fds, 1, &nfds);
		if (err != -EAGAIN)
			break;
		usleep(20000);
	}
	CHECK("request type 99 answered with EINVAL",
	      !err && m.hdr.type == EMBER_MSG_BROKER_REPLY && m.broker_reply.id == 7 &&
	          m.broker_reply.error == -EINVAL && nfds == 0,
	      "err %d type %u error %d", err, m.hdr.type, m.broker_reply.error);
	close_conn(&c);
	return failures;
}

/* ---- unwind tables (UNWIND_TABLE, UNWIND_ROWS, UNWIND_PROC, UNWIND_FILE) ----------------- */

static size_t table_msg(union ember_msg *m, uint32_t slot, uint32_t op, uint32_t nrows)
{
	ember_msg_init(m, EMBER_MSG_UNWIND_TABLE, 2);
	m->unwind_table.table = slot;
	m->unwind_table.op = op;
	m->unwind_table.nrows = nrows;
	return sizeof(m->unwind_table);
}

/* count sorted CFA_SP rows of slot from row first on. */
static size_t rows_msg(union ember_msg *m, uint32_t slot, uint32_t first, uint32_t count)
{
	ember_msg_init(m, EMBER_MSG_UNWIND_ROWS, 2);
	m->unwind_rows.table = slot;
	m->unwind_rows.first = first;
	m->unwind_rows.count = count;
	for (uint32_t i = 0; i < count; i++) {
		m->unwind_rows.rows[i].pc = 0x1000 + 16 * (first + i);
		m->unwind_rows.rows[i].kind = EMBER_ROW_CFA_SP;
		m->unwind_rows.rows[i].cfa_slots = 1;
	}
	return sizeof(m->unwind_rows);
}

static size_t proc_msg(union ember_msg *m, uint32_t pid, uint32_t slot)
{
	ember_msg_init(m, EMBER_MSG_UNWIND_PROC, 2);
	m->unwind_proc.pid = pid;
	m->unwind_proc.count = m->unwind_proc.total = 2;
	m->unwind_proc.mappings[0] = (struct ember_unwind_mapping){
	    .start = 0x400000, .end = 0x500000, .bias = 0, .table = slot};
	m->unwind_proc.mappings[1] = (struct ember_unwind_mapping){
	    .start = 0x600000, .end = 0x700000, .bias = 0x200000, .table = EMBER_UNWIND_NO_TABLE};
	return sizeof(m->unwind_proc);
}

/* Which file slot's table is for: two executable segments. */
static size_t file_msg(union ember_msg *m, uint32_t op, uint32_t slot)
{
	ember_msg_init(m, EMBER_MSG_UNWIND_FILE, 2);
	m->unwind_file.op = op;
	m->unwind_file.key = (struct ember_file_key){.ino = 131, .dev = 254u << 20 | 1};
	m->unwind_file.file.table = slot;
	m->unwind_file.file.size = 0x6000;
	m->unwind_file.file.nsegs = 2;
	m->unwind_file.file.segs[0] = (struct ember_file_seg){0x1000, 0x3000, 0};
	m->unwind_file.file.segs[1] = (struct ember_file_seg){0x4000, 0x5000, 0x1000};
	return sizeof(m->unwind_file);
}

/*
 * After a handshake, the messages before (sent and taken) and then bad, which must end the
 * connection.
 */
static void expect_table_disconnect(const char *name, const union ember_msg *before,
                                    size_t nbefore, const union ember_msg *bad, size_t len)
{
	struct conn c;
	int err = open_conn(&c);

	if (err) {
		CHECK(name, false, "cannot connect: %s", strerror(-err));
		return;
	}
	for (size_t i = 0; i < nbefore && !err; i++)
		err = ember_msg_send(c.sock, &before[i], NULL, 0);
	CHECK(name, !err && !closed_within(c.sock, 300), "the well-formed messages before it: %s",
	      err ? strerror(-err) : "the collector hung up");
	err = send_raw(c.sock, bad, len, -1);
	CHECK(name, err == -EPIPE || err == -ECONNRESET || closed_within(c.sock, 3000),
	      "the collector kept the connection");
	close_conn(&c);
}

static int cmd_tables(uint32_t pid)
{
	union ember_msg ok[4], bad;
	struct conn c;
	int err;

	table_msg(&ok[0], 3, EMBER_UNWIND_TABLE_CREATE, 2 * EMBER_UNWIND_BLOCK_ROWS);
	rows_msg(&ok[1], 3, 0, 2 * EMBER_UNWIND_BLOCK_ROWS);
	table_msg(&ok[2], 3, EMBER_UNWIND_TABLE_COMMIT, 0);
	proc_msg(&ok[3], pid, 3);

	expect_table_disconnect("table slot past the last", NULL, 0, &bad,
	                        table_msg(&bad, EMBER_UNWIND_MAX_TABLES, EMBER_UNWIND_TABLE_CREATE,
	                                  EMBER_UNWIND_BLOCK_ROWS));
	expect_table_disconnect("table of part of a block", NULL, 0, &bad,
	                        table_msg(&bad, 3, EMBER_UNWIND_TABLE_CREATE, 100));
	expect_table_disconnect("table of too many rows", NULL, 0, &bad,
	                        table_msg(&bad, 3, EMBER_UNWIND_TABLE_CREATE,
	                                  EMBER_UNWIND_MAX_TABLE_ROWS + EMBER_UNWIND_BLOCK_ROWS));
	expect_table_disconnect("unknown table operation", NULL, 0, &bad,
	                        table_msg(&bad, 3, 9, EMBER_UNWIND_BLOCK_ROWS));
	expect_table_disconnect("rows of no table", NULL, 0, &bad, rows_msg(&bad, 3, 0, 128));
	rows_msg(&bad, 3, 0, 2 * EMBER_UNWIND_BLOCK_ROWS);
	bad.unwind_rows.rows[7].kind = EMBER_ROW_KIND_MAX;
	expect_table_disconnect("row of an unknown kind", ok, 1, &bad, sizeof(bad.unwind_rows));
	rows_msg(&bad, 3, 0, 2 * EMBER_UNWIND_BLOCK_ROWS);
	bad.unwind_rows.rows[9].pc = 0x10;
	expect_table_disconnect("rows out of order", ok, 1, &bad, sizeof(bad.unwind_rows));
	rows_msg(&bad, 3, 0, 2 * EMBER_UNWIND_BLOCK_ROWS);
	bad.unwind_rows.rows[3].cfa_slots = 0;
	expect_table_disconnect("row whose CFA is the stack pointer", ok, 1, &bad,
	                        sizeof(bad.unwind_rows));
	rows_msg(&bad, 3, 0, 2 * EMBER_UNWIND_BLOCK_ROWS);
	bad.unwind_rows.rows[3].kind = EMBER_ROW_CFA_FP;
	bad.unwind_rows.rows[3].fp_slot = 1;
	expect_table_disconnect("row with the saved FP above the CFA", ok, 1, &bad,
	                        sizeof(bad.unwind_rows));
	expect_table_disconnect("rows past the table's end", ok, 1, &bad,
	                        rows_msg(&bad, 3, 2 * EMBER_UNWIND_BLOCK_ROWS, 128));
	expect_table_disconnect("commit before every row", ok, 1, &bad,
	                        table_msg(&bad, 3, EMBER_UNWIND_TABLE_COMMIT, 0));
	expect_table_disconnect("drop of the table being built", ok, 1, &bad,
	                        table_msg(&bad, 3, EMBER_UNWIND_TABLE_DROP, 0));
	proc_msg(&bad, pid, 3);
	bad.unwind_proc.mappings[1].start = 0x4f0000; /* overlaps the first */
	expect_table_disconnect("overlapping mappings", ok, 3, &bad, sizeof(bad.unwind_proc));
	proc_msg(&bad, pid, EMBER_UNWIND_MAX_TABLES);
	expect_table_disconnect("mapping of a table past the last", ok, 3, &bad,
	                        sizeof(bad.unwind_proc));
	proc_msg(&bad, pid, 3);
	bad.unwind_proc.total = EMBER_UNWIND_MAX_MAPPINGS + 1;
	expect_table_disconnect("more mappings than a process may have", ok, 3, &bad,
	                        sizeof(bad.unwind_proc));
	expect_table_disconnect("file of a table past the last", ok, 3, &bad,
	                        file_msg(&bad, EMBER_UNWIND_FILE_SET, EMBER_UNWIND_MAX_TABLES));
	expect_table_disconnect("file of an empty slot", ok, 3, &bad,
	                        file_msg(&bad, EMBER_UNWIND_FILE_SET, 4));
	file_msg(&bad, EMBER_UNWIND_FILE_SET, 3);
	bad.unwind_file.file.nsegs = EMBER_UNWIND_FILE_SEGS + 1;
	expect_table_disconnect("file of too many segments", ok, 3, &bad, sizeof(bad.unwind_file));
	file_msg(&bad, EMBER_UNWIND_FILE_SET, 3);
	bad.unwind_file.file.segs[1].start = 0x2000; /* overlaps the first */
	expect_table_disconnect("file of overlapping segments", ok, 3, &bad, sizeof(bad.unwind_file));
	expect_table_disconnect("unknown file operation", ok, 3, &bad, file_msg(&bad, 9, 3));

	/* Well formed: taken, the connection kept. */
	err = open_conn(&c);
	CHECK("handshake for a well-formed table", !err, "%s", strerror(-err));
	if (err)
		return failures;
	for (int i = 0; i < 4 && !err; i++)
		err = ember_msg_send(c.sock, &ok[i], NULL, 0);
	file_msg(&bad, EMBER_UNWIND_FILE_SET, 3);
	if (!err)
		err = ember_msg_send(c.sock, &bad, NULL, 0);
	file_msg(&bad, EMBER_UNWIND_FILE_DROP, 0);
	if (!err)
		err = ember_msg_send(c.sock, &bad, NULL, 0);
	table_msg(&bad, 3, EMBER_UNWIND_TABLE_DROP, 0);
	if (!err)
		err = ember_msg_send(c.sock, &bad, NULL, 0);
	CHECK("a well-formed table, mappings, file entry and drops are taken",
	      !err && !closed_within(c.sock, 1000),
	      "%s", err ? strerror(-err) : "the collector hung up");
	close_conn(&c);
	return failures;
}

/* One broker request on c; returns the descriptor or the negative errno. */
static int ask(struct conn *c, uint32_t what, uint32_t pid, uint64_t addr, const char *arg)
{
	static uint32_t id;
	union ember_msg m;
	int fd = -1, nfds = 0, err;

	ember_msg_init(&m, EMBER_MSG_BROKER_REQ, 3);
	m.broker_req.id = ++id;
	m.broker_req.what = what;
	m.broker_req.pid = pid;
	m.broker_req.addr = addr;
	if (arg)
		snprintf(m.broker_req.arg, sizeof(m.broker_req.arg), "%s", arg);
	err = ember_msg_send(c->sock, &m, NULL, 0);
	for (int i = 0; i < 200 && (!err || err == -EAGAIN); i++) {
		err = ember_msg_recv(c->sock, &m, &fd, 1, &nfds);
		if (err != -EAGAIN)
			break;
		usleep(10000);
	}
	if (err)
		return err == -EAGAIN ? -ETIMEDOUT : err; /* no answer in two seconds */
	if (m.hdr.type != EMBER_MSG_BROKER_REPLY || m.broker_reply.id != id)
		return -EPROTO;
	return m.broker_reply.error ? m.broker_reply.error : fd;
}

static int cmd_broker(uint32_t sampled, uint32_t other, uint32_t gone)
{
	struct conn c;
	char buf[256];
	int fd, err = open_conn(&c);
	ssize_t n;

	CHECK("handshake", !err, "%s", strerror(-err));
	if (err)
		return failures;
	fd = ask(&c, EMBER_BROKER_MAPS, sampled, 0, NULL);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	CHECK("maps of the sampled process are served", fd >= 0 && n > 0, "%s",
	      fd < 0 ? strerror(-fd) : "empty");
	if (fd >= 0) {
		CHECK("a served descriptor is read-only", write(fd, "x", 1) < 0, "writable");
		close(fd);
	}
	fd = ask(&c, EMBER_BROKER_MAPS, other, 0, NULL);
	CHECK("maps of a process never sampled: refused", fd == -EPERM, "%d", fd);
	fd = ask(&c, EMBER_BROKER_MEM, other, 0, NULL);
	CHECK("memory of a process never sampled: refused", fd == -EPERM, "%d", fd);
	fd = ask(&c, EMBER_BROKER_MAPS, gone, 0, NULL);
	CHECK("maps of an exited process whose PID is reused: refused",
	      fd == -EPERM || fd == -ESRCH, "%d", fd);
	fd = ask(&c, EMBER_BROKER_MEM, gone, 0, NULL);
	CHECK("memory of an exited process whose PID is reused: refused",
	      fd == -EPERM || fd == -ESRCH, "%d", fd);
	fd = ask(&c, EMBER_BROKER_MAPPED_FILE, sampled, 4096, NULL);
	CHECK("file mapped where nothing is mapped: refused", fd == -ENOENT, "%d", fd);
	fd = ask(&c, EMBER_BROKER_MAPS, 0, 0, NULL);
	CHECK("PID 0: refused", fd == -EINVAL, "%d", fd);
	fd = ask(&c, EMBER_BROKER_DEBUG_FILE, 0, 0, "../../../etc/passwd");
	CHECK("debug file by a path: refused", fd == -EINVAL, "%d", fd);
	fd = ask(&c, EMBER_BROKER_DEBUG_FILE, 0, 0, "ab/../../../etc/passwd");
	CHECK("debug file with dot-dots: refused", fd == -EINVAL, "%d", fd);
	fd = ask(&c, EMBER_BROKER_DEBUG_FILE, 0, 0, "ab2233");
	CHECK("debug file linked out of the debug tree: refused", fd < 0, "served");
	if (fd >= 0)
		close(fd);
	fd = ask(&c, EMBER_BROKER_DEBUG_FILE, 0, 0, "abcdef01");
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	CHECK("debug file in the debug tree: served",
	      fd >= 0 && n == 8 && !memcmp(buf, "debug-ok", 8), "%d", fd);
	if (fd >= 0)
		close(fd);
	CHECK("still connected after refusals", !closed_within(c.sock, 200), "hung up");
	close_conn(&c);
	return failures;
}

/* Whether the collector answers a request on c within two seconds (served or refused). */
static bool answers(struct conn *c)
{
	int fd = ask(c, EMBER_BROKER_KALLSYMS, 0, 0, NULL);

	if (fd >= 0)
		close(fd);
	return fd >= 0 || fd == -EPERM || fd == -EAGAIN;
}

/*
 * The descriptor it is woken through is the consumer's to read, and must give it no hold on
 * the producer. Were it an eventfd shared with the collector, clearing its O_NONBLOCK and
 * filling its counter would block the collector's next wake-up for good.
 */
static int cmd_wakeup(void)
{
	uint64_t most = UINT64_MAX - 1, drained;
	struct conn c;
	int err = open_conn(&c);

	CHECK("handshake", !err, "%s", strerror(-err));
	if (err)
		return failures;
	for (int i = 0; i < 100; i++) {
		if (read(c.event_fd, &drained, sizeof(drained)) < 0 && errno != EAGAIN)
			break;
		if (write(c.event_fd, &most, sizeof(most)) == sizeof(most) || errno != EAGAIN)
			break;
	}
	fcntl(c.event_fd, F_SETFL, fcntl(c.event_fd, F_GETFL) & ~O_NONBLOCK);
	/* Consume meanwhile: the collector has records to wake us for. */
	for (int waited = 0; waited < 1500; waited += 10) {
		*c.pos = head_of(&c);
		usleep(10000);
	}
	CHECK("the collector answers after its wake-ups were jammed", answers(&c),
	      "no answer: the collector is blocked");
	close_conn(&c);
	return failures;
}

/*
 * A TCP socket with unsent data it cannot send (the peer's window is shut) and SO_LINGER:
 * its last close() waits up to 30 s. Passed to the collector, the collector must not be the
 * one to close it.
 */
static int cmd_linger(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct linger linger = {.l_onoff = 1, .l_linger = 30};
	socklen_t alen = sizeof(a);
	int small = 4096, lst, cli, srv, err;
	static char junk[1 << 16];
	union ember_msg m;
	struct conn c;

	lst = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cli = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(lst, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	setsockopt(cli, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	if (lst < 0 || cli < 0 || bind(lst, (struct sockaddr *)&a, sizeof(a)) || listen(lst, 1) ||
	    getsockname(lst, (struct sockaddr *)&a, &alen) ||
	    connect(cli, (struct sockaddr *)&a, sizeof(a)) || (srv = accept(lst, NULL, NULL)) < 0) {
		CHECK("a TCP connection on loopback", false, "%s", strerror(errno));
		return failures;
	}
	fcntl(cli, F_SETFL, O_NONBLOCK);
	while (write(cli, junk, sizeof(junk)) > 0)
		; /* until the window is shut: srv never reads */
	setsockopt(cli, SOL_SOCKET, SO_LINGER, &linger, sizeof(linger));
	err = open_conn(&c);
	CHECK("handshake", !err, "%s", strerror(-err));
	if (err)
		return failures;
	ember_msg_init(&m, EMBER_MSG_FLUSHED, 2);
	err = send_raw(c.sock, &m, sizeof(m.flushed), cli);
	if (err) { /* ours is the last reference: reset it rather than wait ourselves */
		linger.l_linger = 0;
		setsockopt(cli, SOL_SOCKET, SO_LINGER, &linger, sizeof(linger));
	}
	close(cli); /* before the collector reads the message: then its close is the last */
	printf("# sending the lingering socket: %s\n", err ? strerror(-err) : "sent");
	/* Refused by the kernel: the connection stands; else the collector hangs up on us. */
	CHECK("the collector answers after a lingering socket was passed",
	      err == -EPERM ? answers(&c) : closed_within(c.sock, 3000),
	      "no answer: the collector is blocked in close()");
	close_conn(&c);
	err = open_conn(&c);
	CHECK("a new connection is served right after", !err && answers(&c), "%s", strerror(-err));
	if (!err)
		close_conn(&c);
	close(srv);
	close(lst);
	return failures;
}

static int cmd_serve(uint32_t pid)
{
	struct conn c;
	int fd, err = open_conn(&c);

	CHECK("handshake", !err, "%s", strerror(-err));
	if (err)
		return failures;
	fd = ask(&c, EMBER_BROKER_MAPS, pid, 0, NULL);
	CHECK("maps of the sampled process are served", fd >= 0, "%s", strerror(-fd));
	if (fd >= 0)
		close(fd);
	close_conn(&c);
	return failures;
}

static int cmd_refuse(uint32_t pid)
{
	struct conn c;
	int fd, err = open_conn(&c);

	CHECK("handshake", !err, "%s", strerror(-err));
	if (err)
		return failures;
	fd = ask(&c, EMBER_BROKER_MAPS, pid, 0, NULL);
	CHECK("maps refused", fd == -EPERM || fd == -ESRCH, "%d", fd);
	if (fd >= 0)
		close(fd);
	fd = ask(&c, EMBER_BROKER_MEM, pid, 0, NULL);
	CHECK("memory refused", fd == -EPERM || fd == -ESRCH, "%d", fd);
	if (fd >= 0)
		close(fd);
	close_conn(&c);
	return failures;
}

static int cmd_refused(void)
{
	union ember_msg m;
	int sock = ember_endpoint_connect(sock_path), err;

	if (sock < 0) {
		CHECK("refused at connect", sock == -EACCES || sock == -EPERM, "%s",
		      strerror(-sock));
		return failures;
	}
	hello_msg(&m);
	err = ember_msg_send(sock, &m, NULL, 0);
	CHECK("turned away without a WELCOME", err || closed_within(sock, 3000),
	      "the collector kept the connection");
	close(sock);
	return failures;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr,
		        "usage: hostile_peer SOCKET seals|positions|messages|refused|wakeup|"
		        "linger|serve PID|refuse PID|tables PID|broker SAMPLED OTHER GONE\n");
		return 100;
	}
	sock_path = argv[1];
	if (!strcmp(argv[2], "seals"))
		return cmd_seals();
	if (!strcmp(argv[2], "positions"))
		return cmd_positions();
	if (!strcmp(argv[2], "messages"))
		return cmd_messages();
	if (!strcmp(argv[2], "refused"))
		return cmd_refused();
	if (!strcmp(argv[2], "wakeup"))
		return cmd_wakeup();
	if (!strcmp(argv[2], "linger"))
		return cmd_linger();
	if (!strcmp(argv[2], "serve") && argc == 4)
		return cmd_serve((uint32_t)atoi(argv[3]));
	if (!strcmp(argv[2], "refuse") && argc == 4)
		return cmd_refuse((uint32_t)atoi(argv[3]));
	if (!strcmp(argv[2], "tables") && argc == 4)
		return cmd_tables((uint32_t)atoi(argv[3]));
	if (!strcmp(argv[2], "broker") && argc == 6)
		return cmd_broker((uint32_t)atoi(argv[3]), (uint32_t)atoi(argv[4]),
		                  (uint32_t)atoi(argv[5]));
	fprintf(stderr, "hostile_peer: unknown command %s\n", argv[2]);
	return 100;
}
