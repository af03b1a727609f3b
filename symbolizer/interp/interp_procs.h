/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The processes a runtime's reader knows, by pid: each reader's own struct,
 * which starts with struct ember_interp_proc, in one table. It sends,
 * replaces and removes a process's row for the runtime's eBPF walker (the
 * collector checks and loads it), says once per process why one cannot be
 * walked, and follows the process's exec and exit; the counts behind each
 * reader's "<runtime>.processes" statistics are kept here.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_INTERP_PROCS_H
#define EMBER_SYMBOLIZER_INTERP_INTERP_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/slots.h"
#include "symbolizer/client/broker_client.h"
#include "symbolizer/interp/interp_mem.h"

/* The first member of a reader's process struct. */
struct ember_interp_proc {
	uint32_t pid;
	bool row_sent;
	bool counted; /* in the statistics */
	bool warned;  /* said once why it cannot be walked */
	struct ember_interp_mem mem;
};

struct ember_interp_procs {
	struct ember_slots slots;
	struct ember_broker_client *broker;
	uint32_t runtime;
	const char *name; /* the runtime's, in the log: "Python" */
	bool disabled;    /* the collector went away: no rows can be sent */
	uint64_t processes, unsupported, rows_sent, rows_removed;
};

/* A table of item_size-byte process structs (at most max) of runtime, named name. */
int ember_interp_procs_init(struct ember_interp_procs *t, size_t item_size, uint32_t max,
                            struct ember_broker_client *broker, uint32_t runtime, const char *name);
void ember_interp_procs_free(struct ember_interp_procs *t);

/* The process struct of pid (zeroed but for its pid when new, if create), or NULL. */
void *ember_interp_procs_get(struct ember_interp_procs *t, uint32_t pid, bool create);

/* pid was seen running the runtime (at a maps reading): counted once, its memory readable
 * again. */
void ember_interp_procs_seen(struct ember_interp_procs *t, struct ember_interp_proc *p);

/* Sends row (size bytes) for p unless it is what *sent holds already (then copied there).
 * Returns true when it was sent. */
bool ember_interp_procs_set_row(struct ember_interp_procs *t, struct ember_interp_proc *p,
                                void *sent, const void *row, size_t size);
/* Takes p's row away, if it has one (p may be NULL). */
void ember_interp_procs_remove_row(struct ember_interp_procs *t, struct ember_interp_proc *p);

/* Says once why p's runtime cannot be walked, and takes its row away. */
void ember_interp_procs_unsupported(struct ember_interp_procs *t, struct ember_interp_proc *p,
                                    const char *why);

/* The process exited (seen ahead of symbolization): no row, no memory to read. */
void ember_interp_procs_exit_ahead(struct ember_interp_procs *t, uint32_t pid);
/* Symbolization reached its exec (its memory is another program's) or its exit. */
void ember_interp_procs_exec(struct ember_interp_procs *t, uint32_t pid);
void ember_interp_procs_exit(struct ember_interp_procs *t, uint32_t pid);

#endif
