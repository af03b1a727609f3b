/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a runtime's reader offers the symbolizer: one ops table per runtime
 * (python.h's ember_python_ops, ...), listed in interp.c's registry by its
 * number (bpf/interp.h). The registry calls a runtime's ops only while its
 * frames are read (--interpreters), each with the state its init made.
 *
 * A reader detects its runtime among a process's mappings, builds the
 * process's row for its eBPF walker and sends it (ember_msg_interp_row);
 * names the frames (two words each, bpf/interp.h) the walker recorded,
 * reading what it needs from the process at sample time (warm) where a later
 * read could find the runtime's structures freed or moved; and keeps its own
 * statistics, under its own name ("python.frames").
 */
#ifndef EMBER_SYMBOLIZER_INTERP_INTERP_OPS_H
#define EMBER_SYMBOLIZER_INTERP_INTERP_OPS_H

#include <stdint.h>

#include "bpf/interp.h"
#include "shared/stat_sink.h"
#include "symbolizer/client/broker_client.h"
#include "symbolizer/process/maps_parser.h"

#define EMBER_INTERP_MAX_INLINED 15 /* frames inlined into one frame of compiled code */

/* A frame inlined into another (a JIT's): its function, file and line. */
struct ember_interp_inlined {
	const char *name, *file;
	int32_t line;
};

/* One interpreted frame or marker named. The strings live until the next call. */
struct ember_interp_frame {
	uint32_t runtime;   /* enum ember_runtime (set by the registry) */
	const char *marker; /* a marker's name ("[python frames truncated]"); then nothing else */
	const char *name;   /* NULL: unnamed (the reader counts why) */
	const char *file;
	int32_t line;        /* 0: unknown */
	int32_t firstlineno; /* of the function */
	uint64_t key;        /* stands for the frame in the profile: same key, same frame */
	/* Frames the compiler inlined here, innermost first; name, file and line above are then
	 * the outermost's (the function compiled, which called them). */
	const struct ember_interp_inlined *inlined;
	uint32_t ninlined; /* at most EMBER_INTERP_MAX_INLINED */
};

/* How frames are named (--signatures): ember_interp_ops.init's flags. */
#define EMBER_INTERP_SIGNATURES 0x1u /* methods with their parameter types (Java) */

struct ember_interp_ops {
	/* Makes the reader's state (*state), which asks the broker for files and memory and
	 * names frames as flags (EMBER_INTERP_*) say. */
	int (*init)(void **state, uint32_t flags, struct ember_broker_client *broker);
	void (*free)(void *state);
	/* The maps of pid were read (exec, or a sample that missed tables): detects the
	 * runtime and sends, replaces or removes the process's row. */
	void (*on_maps)(void *state, uint32_t pid, const struct ember_maps *maps, uint64_t now_ns);
	/* The process exited (seen ahead of symbolization): its row goes now. */
	void (*on_exit_ahead)(void *state, uint32_t pid);
	/* Symbolization reached the exec or the exit of pid: what is known of its program (at
	 * exit, of the process) is forgotten. */
	void (*on_exec)(void *state, uint32_t pid);
	void (*on_exit)(void *state, uint32_t pid);
	/* A frame (w0, w1) of a sample seen ahead of symbolization: read now, while pid lives. */
	void (*warm)(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns);
	/* Names the frame (w0, w1) of a sample of pid: name, file, line and key of *out. */
	void (*frame)(void *state, uint32_t pid, uint64_t w0, uint64_t w1, uint64_t now_ns,
	              struct ember_interp_frame *out);
	/* The name of the marker whose first word is w0 (enum ember_interp_marker). */
	const char *(*marker)(void *state, uint64_t w0);
	/* Writes the reader's statistics. */
	void (*stats)(void *state, const struct ember_stat_sink *sink);
};

#endif
