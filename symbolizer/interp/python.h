/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPython processes, from detection to named frames.
 *
 * Detection: when a process's maps are read (at exec, and when its samples
 * show the unwinder lacked tables), the files it maps that could hold an
 * interpreter (its executable, files named *python*) and its C library are
 * looked at once per file (python_elf.h, cached by device and inode). A
 * process with a CPython ember can walk and glibc's key slots gets a row
 * for the eBPF walker (bpf/python.h), sent to the collector, which checks
 * and loads it; a process that stops being one (exec, exit) loses it.
 *
 * Frames: a sample's Python frames (code object address, instruction
 * offset, checksum) are resolved by reading the code object through the
 * broker's /proc/PID/mem descriptor (python_code.h), into a cache keyed by
 * process, address and checksum, dropped at the process's exec and exit
 * and bounded in entries and bytes. A checksum that differs from the
 * object's now means it was freed and its memory reused: the frame stays
 * unnamed rather than misnamed. Lines come from the cached line table.
 *
 * Every byte read from a process is hostile (see python_code.h); every
 * file too (python_elf.h). Reads are bounded in size; the descriptor reads
 * only what the process maps.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_PYTHON_H
#define EMBER_SYMBOLIZER_INTERP_PYTHON_H

#include <stdbool.h>
#include <stdint.h>

#include "shared/hash.h"
#include "shared/slots.h"
#include "symbolizer/broker_client.h"
#include "symbolizer/interp/python_code.h"
#include "symbolizer/interp/python_elf.h"
#include "symbolizer/process/maps_parser.h"

#define EMBER_PY_MAX_FILES     4096
#define EMBER_PY_MAX_TRACKED   EMBER_PY_MAX_PROCS
#define EMBER_PY_CACHE_ENTRIES 65536
#define EMBER_PY_CACHE_BYTES   (32u << 20)
#define EMBER_PY_FILE_RETRY_NS (30ull * 1000000000ull) /* a file that could not be opened */
#define EMBER_PY_MEM_RETRY_NS  (1000ull * 1000000ull)  /* a process whose memory was refused */

/* Counters for the profile's statistics (python.*). */
struct ember_python_stats {
	uint64_t files_read, file_errors;
	uint64_t processes, unsupported, rows_sent, rows_removed;
	uint64_t frames, frames_named, frames_stale, frames_unreadable, frames_no_line;
	uint64_t markers_truncated, markers_unreadable;
	uint64_t code_reads, code_read_errors, cache_evictions;
};

struct ember_python {
	struct ember_broker_client *broker;
	struct ember_hash_key hash_key;
	struct ember_slots files; /* struct py_file, by (dev, ino) */
	struct ember_slots procs; /* struct py_process, by pid */
	struct ember_slots cache; /* struct py_code, by (pid, address, checksum) */
	uint32_t clock_hand;      /* eviction: the next slot looked at */
	uint64_t cache_bytes;
	bool disabled; /* the collector went away: no rows can be sent */
	bool off;      /* --interpreters none: nothing is detected */
	struct ember_python_stats stats;
};

int ember_python_init(struct ember_python *py, struct ember_broker_client *broker);
void ember_python_free(struct ember_python *py);

/*
 * The maps of pid were read (exec, or a sample that missed tables): detects
 * the interpreter and sends, replaces or removes the process's row.
 */
void ember_python_on_maps(struct ember_python *py, uint32_t pid, const struct ember_maps *maps,
                          uint64_t now_ns);
/* The process exited: its row goes now (the look-ahead sees the exit first). */
void ember_python_on_exit_ahead(struct ember_python *py, uint32_t pid);
/* The symbolization reached the exec or exit of pid: forgets its code objects (and, at exit,
 * the process). */
void ember_python_on_exec(struct ember_python *py, uint32_t pid);
void ember_python_on_exit(struct ember_python *py, uint32_t pid);

/* Reads the code objects of a sample's Python frames now, while the process lives. */
void ember_python_warm(struct ember_python *py, uint32_t pid, const uint64_t *words, uint32_t n,
                       uint64_t now_ns);

/* One Python frame resolved. The strings live until the next call. */
struct ember_py_frame {
	const char *name; /* NULL: unnamed (counted as stale or unreadable) */
	const char *file;
	int32_t line;        /* 0: unknown */
	int32_t firstlineno; /* of the function */
	uint64_t key;        /* stands for (pid, code object, checksum, offset) in the profile */
};

/* Resolves the frame in words w0, w1 (bpf/python.h, bpf/interp.h) of a sample of pid. */
void ember_python_frame(struct ember_python *py, uint32_t pid, uint64_t w0, uint64_t w1,
                        uint64_t now_ns, struct ember_py_frame *out);

/* The name of a marker ("[python frames truncated]", ...) from its first word; counted. */
const char *ember_python_marker(struct ember_python *py, uint64_t w0);

/* Whether w is the first word of a Python frame or marker (two words, bpf/interp.h). */
static inline bool ember_python_is_tagged(uint64_t w)
{
	return ember_interp_word_runtime(w) == EMBER_RUNTIME_PYTHON;
}

#endif
