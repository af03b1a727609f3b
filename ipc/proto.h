/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Control-socket protocol between collector and symbolizer (AF_UNIX
 * SOCK_SEQPACKET: one message per packet). Every message is a fixed-layout
 * struct starting with ember_msg_hdr. A receiver copies the packet into
 * private memory and checks magic, version, type and the exact size of the
 * type before it reads any field; anything else ends the connection. One
 * type, INTERP_ROW, ends in a row whose size depends on a field: its size is
 * checked against the bounds of the type here, and exactly by its handler.
 *
 * Conversation:
 *   S->C HELLO                      symbolizer introduces itself
 *   C->S WELCOME + fds              ring data, ring position, wake-up pipe (read end)
 *   S->C BROKER_REQ  / C->S BROKER_REPLY (+ 0 or 1 read-only fd)
 *   C->S FLUSH       / S->C FLUSHED  consume up to a head, write outputs
 *   S->C UNWIND_TABLE CREATE, UNWIND_ROWS..., UNWIND_TABLE COMMIT   a file's
 *        unwind table, in order; UNWIND_TABLE DROP when no process maps it
 *   S->C UNWIND_FILE                which file a loaded table is for (SET), or a file
 *        without one; DROP forgets a file
 *   S->C UNWIND_PROC...             a process's executable mappings and tables
 *   S->C INTERP_ROW                 a process's row for its runtime's frame walker
 *   S->C DRAIN                      the samples the kernel holds, now: an interval ends
 *        (the collector drains on its tick otherwise: EMBER_COLLECTOR_TICK_MS)
 * The collector does not answer unwind and interpreter messages; it checks
 * every field and row, and ends the connection on one that is out of bounds.
 */
#ifndef EMBER_IPC_PROTO_H
#define EMBER_IPC_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/records.h"
#include "bpf/unwind_table.h"

#define EMBER_PROTO_MAGIC   0x52424d45 /* "EMBR" */
#define EMBER_PROTO_VERSION 5
#define EMBER_MSG_MAX       4096
#define EMBER_OFF_CPU_OFF   UINT64_MAX

/* How often the collector drains the kernel's rings when nothing asks sooner (the eBPF side
 * for what cannot wait, the symbolizer with DRAIN when an interval ends): every 5 s while a
 * process first seen in the last 30 s may want a snapshot of its maps, else every 30 s. */
#define EMBER_COLLECTOR_TICK_MS       5000
#define EMBER_COLLECTOR_QUIET_TICK_MS 30000

/* Records per second and CPU to size rings for (off-CPU records mostly far below the largest). */
#define EMBER_RECORDS_PER_S(hz, off_cpu_min_ns)                                                    \
	((hz) + ((off_cpu_min_ns) != EMBER_OFF_CPU_OFF ? EMBER_OFF_CPU_RATE / 4 : 0))

/* What a profile says was selected (struct ember_msg_welcome). */
#define EMBER_SELECTION_LEN 256
#define EMBER_TITLE_LEN     64

/* `-o` files of one recording: `ember record` hands them on to the symbolizer's command line. */
#define EMBER_MAX_OUTPUTS 16

enum ember_msg_type {
	EMBER_MSG_HELLO = 1,
	EMBER_MSG_WELCOME = 2,
	EMBER_MSG_REJECT = 3,
	EMBER_MSG_BROKER_REQ = 4,
	EMBER_MSG_BROKER_REPLY = 5,
	EMBER_MSG_FLUSH = 6,
	EMBER_MSG_FLUSHED = 7,
	EMBER_MSG_UNWIND_TABLE = 8,
	EMBER_MSG_UNWIND_ROWS = 9,
	EMBER_MSG_UNWIND_PROC = 10,
	EMBER_MSG_INTERP_ROW = 11,
	EMBER_MSG_UNWIND_FILE = 12,
	EMBER_MSG_DRAIN = 13, /* the header alone */
	EMBER_MSG_TYPE_MAX,
};

struct ember_msg_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t length; /* of the whole message */
	uint32_t seq;
};

struct ember_msg_hello {
	struct ember_msg_hdr hdr;
	uint32_t records_version; /* EMBER_RECORDS_VERSION the symbolizer decodes */
	uint32_t pid;
};

/* Sent with three descriptors: ring data, ring position, the read end of the wake-up pipe. */
struct ember_msg_welcome {
	struct ember_msg_hdr hdr;
	uint32_t records_version;
	uint32_t sample_hz;
	/* Add to a record's CLOCK_MONOTONIC time to get Unix time. */
	int64_t monotonic_to_realtime_ns;
	uint64_t start_time_ns; /* Unix time when sampling started */
	uint64_t ring_size;
	uint32_t flags; /* EMBER_WELCOME_* */
	uint32_t reserved;
	uint64_t
	    off_cpu_min_ns; /* off-CPU samples: waits of at least this; EMBER_OFF_CPU_OFF: none */
	/* What was chosen to sample, NUL-terminated; all "" for the whole host. */
	char selection[EMBER_SELECTION_LEN]; /* e.g. "unit nginx.service, pid 42" */
	char title[EMBER_TITLE_LEN];   /* the profile's headline: a command's or unit's name */
	char service[EMBER_TITLE_LEN]; /* service.name unless configured: "nginx" */
};

/* Only the processes chosen with -p are sampled (else every process on the host). */
#define EMBER_WELCOME_CHOSEN_PIDS 0x1u

struct ember_msg_reject {
	struct ember_msg_hdr hdr;
	int32_t error; /* negative errno */
	char reason[124];
};

/* What a broker request asks for. */
enum ember_broker_what {
	EMBER_BROKER_MAPS = 1,        /* /proc/PID/maps */
	EMBER_BROKER_MAPPED_FILE = 2, /* the file mapped at addr in PID */
	EMBER_BROKER_KALLSYMS = 3,    /* /proc/kallsyms */
	EMBER_BROKER_MEM = 4,         /* /proc/PID/mem, read-only */
	EMBER_BROKER_MODULES = 5,     /* /proc/modules */
	EMBER_BROKER_DEBUG_FILE = 6,  /* /usr/lib/debug/.build-id/xx/rest.debug */
	EMBER_BROKER_DEBUGLINK = 7,   /* .gnu_debuglink name beside the file mapped at addr */
	EMBER_BROKER_PROC_FILE = 8,   /* /proc/PID/<arg>, arg "cgroup" or "exe" */
	EMBER_BROKER_PERF_MAP = 9,    /* /tmp/perf-PID.map in PID's root, PID as it knows itself */
	EMBER_BROKER_KERNEL_NOTES = 10, /* /sys/kernel/notes: the kernel's build id */
	EMBER_BROKER_WHAT_MAX,
};

struct ember_msg_broker_req {
	struct ember_msg_hdr hdr;
	uint32_t id;
	uint32_t what;
	uint32_t pid;
	uint32_t reserved;
	uint64_t addr; /* MAPPED_FILE: start address of the mapping */
	char arg[128]; /* DEBUG_FILE: hex build id; DEBUGLINK: a file name; PROC_FILE: "cgroup",
	                  "exe" */
};

/* What a broker reply says about the file (flags of ember_msg_broker_reply). */
enum ember_broker_reply_flags {
	/* On a file system that can stop answering (FUSE, NFS, ...; shared/fs_class.h): read
	 * it only through a bounded path. */
	EMBER_BROKER_REMOTE = 1u << 0,
	/* Refused (-ETIMEDOUT) because the file system or process stopped answering. */
	EMBER_BROKER_STALLED = 1u << 1,
	/* ... and this very request missed its deadline: a worker was left waiting. */
	EMBER_BROKER_MISSED_DEADLINE = 1u << 2,
	/* A process's maps as the collector copied them while it ran (it is gone): a sealed memfd.
	 */
	EMBER_BROKER_SNAPSHOT = 1u << 3,
};

/* What a broker reply says about its file: what the broker learnt while it opened it. */
struct ember_broker_file {
	uint32_t flags;    /* enum ember_broker_reply_flags */
	uint32_t fs_magic; /* statfs f_type of the file's file system; 0: not known */
	uint32_t dev_major,
	    dev_minor; /* the file's device (a stall: the stalled one); 0:0 unknown */
	uint64_t ino;  /* the file's inode number; 0: not known */
};

/* Sent with one descriptor when error is 0. */
struct ember_msg_broker_reply {
	struct ember_msg_hdr hdr;
	uint32_t id;
	int32_t error; /* 0 or a negative errno */
	struct ember_broker_file file;
};

struct ember_msg_flush {
	struct ember_msg_hdr hdr;
	uint64_t head;  /* consume every record before this ring position */
	uint32_t final; /* 1: write outputs and exit */
	uint32_t reserved;
	/* Samples lost whose LOST records found no room in the ring. */
	uint64_t lost_unreported;
};

struct ember_msg_flushed {
	struct ember_msg_hdr hdr;
	int32_t status; /* 0 or a negative errno from writing outputs */
	uint32_t reserved;
	uint64_t samples; /* samples aggregated so far */
};

enum ember_unwind_table_op {
	EMBER_UNWIND_TABLE_CREATE = 1, /* a table of nrows rows for slot `table` */
	EMBER_UNWIND_TABLE_COMMIT = 2, /* all its rows were sent: the unwinder may use it */
	EMBER_UNWIND_TABLE_DROP = 3,   /* no process maps the file any more */
};

struct ember_msg_unwind_table {
	struct ember_msg_hdr hdr;
	uint32_t table; /* slot, below EMBER_UNWIND_MAX_TABLES */
	uint32_t op;    /* enum ember_unwind_table_op */
	uint32_t nrows; /* CREATE: a multiple of EMBER_UNWIND_BLOCK_ROWS, at most
	                   EMBER_UNWIND_MAX_TABLE_ROWS */
	uint32_t reserved;
};

#define EMBER_UNWIND_ROWS_PER_MSG (3 * EMBER_UNWIND_BLOCK_ROWS)

/* Rows [first, first + count) of the table being created, sent in order,
 * whole blocks (count a multiple of EMBER_UNWIND_BLOCK_ROWS). */
struct ember_msg_unwind_rows {
	struct ember_msg_hdr hdr;
	uint32_t table;
	uint32_t first;
	uint32_t count;
	uint32_t reserved;
	struct ember_unwind_row rows[EMBER_UNWIND_ROWS_PER_MSG];
};

enum ember_unwind_file_op {
	EMBER_UNWIND_FILE_SET = 1,  /* the file's entry: a slot holding its table, or no table */
	EMBER_UNWIND_FILE_DROP = 2, /* forget the file (only key counts) */
};

/*
 * The file a table is for, by the kernel's names for it (bpf/unwind_table.h):
 * the unwinder finds the table from the file behind a pc, so a process needs
 * no mapping list of its own. SET names a slot that holds a loaded table (or
 * EMBER_UNWIND_NO_TABLE: frame pointers), and replaces the file's entry; the
 * symbolizer drops the entry before the table.
 */
struct ember_msg_unwind_file {
	struct ember_msg_hdr hdr;
	uint32_t op; /* enum ember_unwind_file_op */
	uint32_t reserved;
	struct ember_file_key key;
	struct ember_file_entry file;
};

#define EMBER_UNWIND_MAPPINGS_PER_MSG 120

/*
 * Mappings [first, first + count) of the total a process has, as its maps
 * were read at read_ns, sent in order; the message that completes them
 * replaces the process's entry. total 0 removes the process.
 */
struct ember_msg_unwind_proc {
	struct ember_msg_hdr hdr;
	uint32_t pid;
	uint32_t first;
	uint32_t count;
	uint32_t total;
	uint64_t read_ns;
	struct ember_unwind_mapping mappings[EMBER_UNWIND_MAPPINGS_PER_MSG];
};

enum ember_interp_row_op {
	EMBER_INTERP_ROW_SET = 1,    /* load the row for pid (replacing any row it has) */
	EMBER_INTERP_ROW_REMOVE = 2, /* pid runs this runtime no more: no row follows */
};

/*
 * A process's row for its runtime's walker (bpf/interp.h): SET is followed
 * by exactly the runtime's row (the collector's table of runtimes says how
 * many bytes), REMOVE by nothing. The collector checks the row with the
 * runtime's own check before it loads it.
 */
struct ember_msg_interp_row {
	struct ember_msg_hdr hdr;
	uint32_t pid;
	uint32_t runtime; /* enum ember_runtime */
	uint32_t op;      /* enum ember_interp_row_op */
	uint32_t reserved;
	uint8_t row[EMBER_INTERP_MAX_ROW];
};

#define EMBER_MSG_INTERP_ROW_HEADER offsetof(struct ember_msg_interp_row, row)

union ember_msg {
	struct ember_msg_hdr hdr;
	struct ember_msg_hello hello;
	struct ember_msg_welcome welcome;
	struct ember_msg_reject reject;
	struct ember_msg_broker_req broker_req;
	struct ember_msg_broker_reply broker_reply;
	struct ember_msg_flush flush;
	struct ember_msg_flushed flushed;
	struct ember_msg_unwind_table unwind_table;
	struct ember_msg_unwind_rows unwind_rows;
	struct ember_msg_unwind_proc unwind_proc;
	struct ember_msg_unwind_file unwind_file;
	struct ember_msg_interp_row interp_row;
	unsigned char bytes[EMBER_MSG_MAX];
};

/* Fills in the header of a message of the given type. */
void ember_msg_init(union ember_msg *m, enum ember_msg_type type, uint32_t seq);
/*
 * Fills in a message of a type of fixed size: its header as ember_msg_init does, the rest
 * from body, a struct of that type (whose own header is ignored).
 */
void ember_msg_init_from(union ember_msg *m, enum ember_msg_type type, uint32_t seq,
                         const void *body);
/* Fills in the BROKER_REPLY to request id: fd (error 0) or a negative errno, and what f says. */
void ember_msg_broker_reply(union ember_msg *m, uint32_t seq, uint32_t id, int fd,
                            const struct ember_broker_file *f);

/* The exact size of a message type (INTERP_ROW: its largest), or 0 for an unknown type. */
size_t ember_msg_size(uint16_t type);

/*
 * Fills in an INTERP_ROW message for pid: with op SET, row_size bytes of row
 * (exactly the runtime's row size), with REMOVE none. Returns 0, or -EINVAL
 * for a row that does not fit.
 */
int ember_msg_interp_row(union ember_msg *m, uint32_t pid, uint32_t runtime, uint32_t op,
                         const void *row, size_t row_size);

/* Checks a received message of len bytes. Returns 0 or -EBADMSG/-EPROTO. */
int ember_msg_validate(const union ember_msg *m, size_t len);

/*
 * Sends a message with up to nfds descriptors. Returns 0 or a negative errno.
 * Never blocks longer than the socket's send timeout.
 */
int ember_msg_send(int sock, const union ember_msg *m, const int *fds, int nfds);

/*
 * Receives one message into private memory and validates it. Descriptors
 * that arrive are stored in fds (up to max_fds, the rest closed) and their
 * count in *nfds; pass max_fds 0 to refuse all descriptors (then any that
 * arrive are closed and the call fails with -EPROTO). On failure every descriptor that
 * arrived is closed and its place in fds is -1 again, so that a caller's cleanup of fds
 * never closes a number twice.
 * Returns 0, -EAGAIN, -ECONNRESET at end of stream, or -EBADMSG/-EPROTO.
 */
int ember_msg_recv(int sock, union ember_msg *m, int *fds, int max_fds, int *nfds);

const char *ember_msg_type_name(uint16_t type);

#endif
