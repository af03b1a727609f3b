// SPDX-License-Identifier: Apache-2.0
/*
 * Writes the seeds of the collector's fuzz targets (fuzz_proto, fuzz_table_loader,
 * fuzz_peer, fuzz_broker_maps) into corpus/: built and run by make_seeds.py, which knows no
 * C struct layout; the outputs are committed. Usage: seeds_ipc CORPUS_DIR
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/proto.h"

static const char *dir;
static unsigned char buf[1 << 16];
static size_t len;

static void put(const void *p, size_t n)
{
	if (len + n > sizeof(buf))
		exit(1);
	memcpy(buf + len, p, n);
	len += n;
}

static void put_u(uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++) {
		unsigned char b = (unsigned char)(v >> (8 * i));

		put(&b, 1);
	}
}

static void save(const char *target, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
	len = 0;
}

/* A message's body: what follows its header. */
static void put_body(const union ember_msg *m)
{
	put((const char *)m + sizeof(m->hdr), m->hdr.length - sizeof(m->hdr));
}

static void table_msg(union ember_msg *m, uint32_t slot, uint32_t op, uint32_t nrows)
{
	ember_msg_init(m, EMBER_MSG_UNWIND_TABLE, 0);
	m->unwind_table.table = slot;
	m->unwind_table.op = op;
	m->unwind_table.nrows = nrows;
}

/* Rows [first, first + count) of a table: every kind, sorted; swap makes two out of order. */
static void rows_msg(union ember_msg *m, uint32_t slot, uint32_t first, uint32_t count, bool swap)
{
	ember_msg_init(m, EMBER_MSG_UNWIND_ROWS, 0);
	m->unwind_rows.table = slot;
	m->unwind_rows.first = first;
	m->unwind_rows.count = count;
	for (uint32_t i = 0; i < count; i++) {
		struct ember_unwind_row *r = &m->unwind_rows.rows[i];

		r->pc = 0x1000 + 16 * (first + i);
		r->kind = (uint8_t)(1 + (first + i) % (EMBER_ROW_KIND_MAX - 1));
		if (r->kind == EMBER_ROW_CFA_SP || r->kind == EMBER_ROW_CFA_FP ||
		    r->kind == EMBER_ROW_CFA_BX) {
			r->cfa_slots = (int16_t)(1 + i % 8);
			r->fp_slot = (int8_t)(r->kind == EMBER_ROW_CFA_FP ? -2 : 0);
			r->bx_slot = (uint8_t)(r->kind == EMBER_ROW_CFA_BX ? 3 : 0);
		} else if (r->kind == EMBER_ROW_PLT) {
			r->cfa_slots = 11;
		}
	}
	if (swap) {
		uint32_t pc = m->unwind_rows.rows[5].pc;

		m->unwind_rows.rows[5].pc = m->unwind_rows.rows[6].pc;
		m->unwind_rows.rows[6].pc = pc;
	}
}

static void proc_msg(union ember_msg *m, uint32_t pid, uint32_t slot)
{
	ember_msg_init(m, EMBER_MSG_UNWIND_PROC, 0);
	m->unwind_proc.pid = pid;
	m->unwind_proc.count = m->unwind_proc.total = 2;
	m->unwind_proc.mappings[0] = (struct ember_unwind_mapping){
	    .start = 0x555555554000, .end = 0x555555560000, .bias = 0x555555554000, .table = slot};
	m->unwind_proc.mappings[1] =
	    (struct ember_unwind_mapping){.start = 0x7ffff7dd0000,
	                                  .end = 0x7ffff7df0000,
	                                  .bias = 0x7ffff7dd0000,
	                                  .table = EMBER_UNWIND_NO_TABLE};
}

/* Which file table slot is for (op SET), or the file forgotten (op DROP). */
static void file_msg(union ember_msg *m, uint32_t op, uint32_t slot)
{
	ember_msg_init(m, EMBER_MSG_UNWIND_FILE, 0);
	m->unwind_file.op = op;
	m->unwind_file.key = (struct ember_file_key){.ino = 131, .dev = 254u << 20 | 1};
	m->unwind_file.file.table = slot;
	m->unwind_file.file.mtime_sec = 1700000000;
	m->unwind_file.file.size = 0x6000;
	m->unwind_file.file.nsegs = 2;
	m->unwind_file.file.segs[0] = (struct ember_file_seg){0x1000, 0x3000, 0};
	m->unwind_file.file.segs[1] = (struct ember_file_seg){0x4000, 0x5000, 0x1000};
}

static void proto_seeds(void)
{
	for (uint16_t type = 1; type < EMBER_MSG_TYPE_MAX; type++) {
		union ember_msg m;
		char name[32];

		ember_msg_init(&m, type, 7);
		if (type == EMBER_MSG_HELLO)
			m.hello.records_version = EMBER_RECORDS_VERSION;
		put(&m, m.hdr.length);
		snprintf(name, sizeof(name), "%s", ember_msg_type_name(type));
		save("proto", name);
	}
	{
		union ember_msg m;

		ember_msg_init(&m, EMBER_MSG_FLUSHED, 1);
		put(&m, m.hdr.length - 1);
		save("proto", "short");
		ember_msg_init(&m, EMBER_MSG_HELLO, 1);
		m.hdr.length += 8;
		put(&m, m.hdr.length);
		save("proto", "long");
	}
}

/* A table built, a process's mappings, the table dropped; step 0x80 makes the maps refuse. */
static void table_steps(uint8_t refuse, bool swap)
{
	union ember_msg m;
	uint8_t step;

	step = 0;
	put(&step, 1);
	table_msg(&m, 3, EMBER_UNWIND_TABLE_CREATE, 2 * EMBER_UNWIND_BLOCK_ROWS);
	put_body(&m);
	step = 1 | refuse;
	put(&step, 1);
	rows_msg(&m, 3, 0, 2 * EMBER_UNWIND_BLOCK_ROWS, swap);
	put_body(&m);
	step = 0;
	put(&step, 1);
	table_msg(&m, 3, EMBER_UNWIND_TABLE_COMMIT, 0);
	put_body(&m);
	step = 2;
	put(&step, 1);
	proc_msg(&m, 42, 3);
	put_body(&m);
	step = 0;
	put(&step, 1);
	table_msg(&m, 3, EMBER_UNWIND_TABLE_DROP, 0);
	put_body(&m);
}

/* A table built, a file's entry naming it, the entry dropped, then the table. */
static void file_steps(void)
{
	union ember_msg m;
	uint8_t step;

	step = 0;
	put(&step, 1);
	table_msg(&m, 3, EMBER_UNWIND_TABLE_CREATE, EMBER_UNWIND_BLOCK_ROWS);
	put_body(&m);
	step = 1;
	put(&step, 1);
	rows_msg(&m, 3, 0, EMBER_UNWIND_BLOCK_ROWS, false);
	put_body(&m);
	step = 0;
	put(&step, 1);
	table_msg(&m, 3, EMBER_UNWIND_TABLE_COMMIT, 0);
	put_body(&m);
	step = 4;
	put(&step, 1);
	file_msg(&m, EMBER_UNWIND_FILE_SET, 3);
	put_body(&m);
	put(&step, 1);
	file_msg(&m, EMBER_UNWIND_FILE_DROP, 0);
	put_body(&m);
	step = 0;
	put(&step, 1);
	table_msg(&m, 3, EMBER_UNWIND_TABLE_DROP, 0);
	put_body(&m);
}

static void table_loader_seeds(void)
{
	file_steps();
	save("table_loader", "create-rows-commit-file-drop");
	table_steps(0, false);
	save("table_loader", "create-rows-commit-proc-drop");
	table_steps(0x80, false);
	save("table_loader", "maps-refuse-rows");
	table_steps(0, true);
	save("table_loader", "rows-out-of-order");
}

/* fuzz_peer: a step sending type with the body of m. */
static void peer_send(const union ember_msg *m)
{
	uint8_t op = 1, type = (uint8_t)m->hdr.type;

	put(&op, 1);
	put(&type, 1);
	put_body(m);
}

static void peer_seeds(void)
{
	union ember_msg m;
	uint8_t flush = 0;

	/* The handshake, a broker request, a table, a flush and its answer. */
	ember_msg_init(&m, EMBER_MSG_HELLO, 0);
	m.hello.records_version = EMBER_RECORDS_VERSION;
	peer_send(&m);
	ember_msg_init(&m, EMBER_MSG_BROKER_REQ, 0);
	m.broker_req.id = 9;
	m.broker_req.what = EMBER_BROKER_KALLSYMS;
	peer_send(&m);
	ember_msg_init(&m, EMBER_MSG_BROKER_REQ, 0);
	m.broker_req.id = 10;
	m.broker_req.what = EMBER_BROKER_MAPS;
	m.broker_req.pid = 42;
	peer_send(&m);
	table_msg(&m, 5, EMBER_UNWIND_TABLE_CREATE, EMBER_UNWIND_BLOCK_ROWS);
	peer_send(&m);
	rows_msg(&m, 5, 0, EMBER_UNWIND_BLOCK_ROWS, false);
	peer_send(&m);
	table_msg(&m, 5, EMBER_UNWIND_TABLE_COMMIT, 0);
	peer_send(&m);
	proc_msg(&m, 42, 5);
	peer_send(&m);
	put(&flush, 1);
	ember_msg_init(&m, EMBER_MSG_FLUSHED, 0);
	peer_send(&m);
	save("peer", "handshake-broker-table-flush");
	/* A table and its file's entry, the file forgotten. */
	ember_msg_init(&m, EMBER_MSG_HELLO, 0);
	m.hello.records_version = EMBER_RECORDS_VERSION;
	peer_send(&m);
	table_msg(&m, 6, EMBER_UNWIND_TABLE_CREATE, EMBER_UNWIND_BLOCK_ROWS);
	peer_send(&m);
	rows_msg(&m, 6, 0, EMBER_UNWIND_BLOCK_ROWS, false);
	peer_send(&m);
	table_msg(&m, 6, EMBER_UNWIND_TABLE_COMMIT, 0);
	peer_send(&m);
	file_msg(&m, EMBER_UNWIND_FILE_SET, 6);
	peer_send(&m);
	file_msg(&m, EMBER_UNWIND_FILE_DROP, 0);
	peer_send(&m);
	save("peer", "handshake-table-file");
	/* Out of place: a broker request before HELLO, FLUSHED unasked, a second HELLO. */
	ember_msg_init(&m, EMBER_MSG_BROKER_REQ, 0);
	peer_send(&m);
	save("peer", "request-before-hello");
	ember_msg_init(&m, EMBER_MSG_HELLO, 0);
	m.hello.records_version = EMBER_RECORDS_VERSION;
	peer_send(&m);
	peer_send(&m);
	save("peer", "hello-twice");
	peer_send(&m);
	ember_msg_init(&m, EMBER_MSG_FLUSHED, 0);
	peer_send(&m);
	save("peer", "flushed-unasked");
	ember_msg_init(&m, EMBER_MSG_HELLO, 0);
	m.hello.records_version = EMBER_RECORDS_VERSION + 1;
	peer_send(&m);
	save("peer", "hello-other-version");
}

/* fuzz_broker_maps: first byte even (the kernel's lines from fields), address, path size. */
static void maps_entry(uint64_t start, uint64_t end, uint8_t perm, uint32_t inode,
                       const char *path)
{
	size_t n = strlen(path);

	put_u(start, 8);
	put_u(end, 8);
	put_u(perm, 1);
	put_u(0x1000, 4);
	put_u(0xfe, 1);
	put_u(1, 1);
	put_u(inode, 4);
	put_u(n, 1);
	put(path, n);
}

static void broker_maps_seeds(void)
{
	FILE *f;
	char line[4096];

	put_u(0, 1);
	put_u(0x7f0000001000, 8);
	put_u(4080, 2);
	maps_entry(0x555555554000, 0x555555556000, 1, 131, "/usr/bin/app");
	maps_entry(0x7f0000000000, 0x7f0000001000, 1, 0, "[heap]");
	maps_entry(0x7f0000001000, 0x7f0000009000, 0, 977, "/opt/my lib/libx.so");
	maps_entry(0x7f0000009000, 0x7f000000a000, 0, 978, "/tmp/gone.so (deleted)");
	maps_entry(0x7f000000a000, 0x7f000000b000, 0, 979, "/tmp/evil\n7f000000a000-1 r-xp 0 0:0 1 /etc/shadow");
	maps_entry(0x7ffd00000000, 0x7ffd00021000, 2, 0, "");
	save("broker_maps", "kernel-lines");
	/* This process's own maps, as a file. */
	put_u(1, 1);
	put_u(0, 8);
	put_u(4080, 2);
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!len || buf[0] == 1) {
			unsigned long long start;

			if (len == 11 && sscanf(line, "%llx-", &start) == 1)
				for (int i = 0; i < 8; i++)
					buf[1 + i] = (unsigned char)(start >> (8 * i));
		}
		put(line, strlen(line));
	}
	if (f)
		fclose(f);
	save("broker_maps", "self-maps");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: seeds_ipc CORPUS_DIR\n");
		return 2;
	}
	dir = argv[1];
	proto_seeds();
	table_loader_seeds();
	peer_seeds();
	broker_maps_seeds();
	return 0;
}
