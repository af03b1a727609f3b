/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer's side of the control socket: it asks the collector's
 * broker for descriptors and notices the collector's own messages (FLUSH)
 * that arrive while it waits for a reply.
 *
 * A descriptor whose reading may wait (a process's map; a file on a file
 * system that can stop answering, as the reply says) is not handed out as it
 * is: with readers (reader.h) the caller gets a copy in a memfd made under a
 * deadline, or -ETIMEDOUT. Replies refused for a stall are counted.
 */
#ifndef EMBER_SYMBOLIZER_CLIENT_BROKER_CLIENT_H
#define EMBER_SYMBOLIZER_CLIENT_BROKER_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "ipc/proto.h"
#include "shared/stat_sink.h"
#include "symbolizer/client/reader.h"

/* The collector answers every request within its own deadline (about a second): past this, it
 * is not answering. */
#define EMBER_BROKER_TIMEOUT_MS 5000

/* Every field is broker_client.c's but flush_pending and flush, which the session reads. */
/* A mapped file the broker opened, kept for when its processes are gone (by the mapping's
 * device and inode: while a descriptor holds it, no other file can have that inode). */
#define EMBER_BROKER_KEPT_FILES 256
struct ember_kept_file {
	uint32_t dev_major, dev_minor;
	uint64_t ino; /* 0: a free entry */
	uint64_t used;
	int fd;
};

struct ember_broker_client {
	int sock;
	uint32_t seq;
	uint32_t next_id;
	/* A FLUSH that arrived while waiting for a reply. */
	bool flush_pending;
	struct ember_msg_flush flush;
	bool closed; /* the collector went away or broke the protocol */
	uint64_t requests, failures;
	uint64_t late_replies;         /* replies to requests that had timed out, dropped */
	struct ember_readers *readers; /* NULL: descriptors are read directly */
	/* What the last reply said about its file (flags: enum ember_broker_reply_flags). */
	struct ember_broker_file last;
	uint64_t stalled_refused;  /* replies refused because a file system or process stalled */
	uint64_t stalled_deadline; /* ... of which the request itself missed its deadline */
	struct ember_kept_file kept[EMBER_BROKER_KEPT_FILES];
	uint64_t kept_clock, kept_served;
	uint64_t not_the_file; /* mapped files refused: another file is mapped there now */
};

void ember_broker_client_init(struct ember_broker_client *c, int sock);

/* Sends msg (header filled in here). Returns 0 or a negative errno. */
int ember_broker_client_send(struct ember_broker_client *c, union ember_msg *msg);

/*
 * Asks for a descriptor. Returns the descriptor or a negative errno (the
 * broker's refusal, -ETIMEDOUT, or -ECONNRESET when the collector is gone).
 */
int ember_broker_request(struct ember_broker_client *c, uint32_t what, uint32_t pid, uint64_t addr,
                         const char *arg);

/*
 * The file mapped at start in pid, whose maps name it by device and inode: asked of the
 * broker, and if the process is gone (or maps it no more), the same file as another process
 * of the program had it (a short-lived process's frames, read after it exited). A file the
 * broker says is another (maps read before an exec or a PID's reuse name the address) is
 * refused: -ESTALE. Returns a descriptor or a negative errno.
 */
int ember_broker_mapped_file(struct ember_broker_client *c, uint32_t pid, uint64_t start,
                             uint32_t dev_major, uint32_t dev_minor, uint64_t ino);

/*
 * Receives one message that is not a broker reply (HELLO's answer, FLUSH),
 * waiting up to timeout_ms (-1: forever). Descriptors go to fds.
 */
int ember_broker_client_recv(struct ember_broker_client *c, union ember_msg *m, int *fds,
                             int max_fds, int *nfds, int timeout_ms);

/* broker.* statistics into p. */
void ember_broker_client_report_stats(const struct ember_broker_client *c,
                                      const struct ember_stat_sink *sink);

#endif
