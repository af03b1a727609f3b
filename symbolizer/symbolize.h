/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Turns one sample record (pid, kernel and user addresses) into a stack of
 * symbolized locations in the profile: user addresses through the process's
 * mappings and the mapped file's symbols, kernel addresses through kallsyms,
 * Python frames (bpf/python.h) through the interpreter's code objects.
 * A frame that cannot be named is kept as module+0xoffset or [unknown].
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLIZE_H
#define EMBER_SYMBOLIZER_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolizer/broker_client.h"
#include "symbolizer/interp/python.h"
#include "symbolizer/symbols/kallsyms.h"
#include "symbolizer/symbols/objcache.h"
#include "symbolizer/process/process_table.h"
#include "symbolizer/profile/profile.h"
#include "bpf/records.h"

#define EMBER_KALLSYMS_RELOAD_NS (60ull * 1000000000ull)

struct ember_symbolizer {
	struct ember_profile *profile;
	struct ember_broker_client *broker;
	struct ember_objcache objs;
	struct ember_processes procs;
	struct ember_kallsyms ksyms;
	struct ember_python *python; /* CPython frames; NULL: shown as [unknown] */
	bool ksyms_tried;
	uint64_t ksyms_loaded_ns;
	int64_t monotonic_to_realtime_ns;
	uint32_t kernel_mapping; /* in the current profile, or EMBER_NONE */
	/* Ask the broker for each process's executable and cgroup (for OTLP resources). */
	bool want_process_facts;
	uint32_t stack_buf[EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS + 1]; /* + an unwind marker */
	struct ember_sym_frames frames_buf;
	/* Counters for the run statistics. */
	uint64_t samples, frames, unknown_frames, unsymbolized_frames;
	/* Frames left unnamed, and samples with such frames, because a read stalled. */
	uint64_t frames_stalled, samples_stalled;
	bool sample_stalled;
	uint64_t frames_by_origin[4]; /* enum ember_sym_origin */
	uint64_t inline_frames;
	uint64_t facts_requests, facts_failures;
	uint64_t off_cpu_samples, off_cpu_ns;
};

int ember_symbolizer_init(struct ember_symbolizer *s, struct ember_profile *profile,
                          struct ember_broker_client *broker, size_t objcache_bytes);
void ember_symbolizer_free(struct ember_symbolizer *s);

/*
 * Adds one CPU or off-CPU sample; frames holds kstack_len kernel then
 * ustack_len user addresses. An off-CPU sample is labelled with why it
 * waited (record_decode.h) and weighs its off_cpu_ns.
 */
int ember_symbolizer_add_sample(struct ember_symbolizer *s, const struct ember_sample_event *sample,
                                const uint64_t *frames, uint64_t now_ns);
/*
 * Parses the file mapping e of pid maps, open at fd, unless it is cached
 * already: the unwind tables' loader opens each file while its process
 * lives, and a short-lived process is gone by the time its samples are
 * symbolized (the broker serves only live processes).
 */
void ember_symbolizer_preload(struct ember_symbolizer *s, uint32_t pid,
                              const struct ember_map_entry *e, int fd, uint64_t now_ns);
/* pid ran a new program at exec_ns (CLOCK_MONOTONIC). */
void ember_symbolizer_on_exec(struct ember_symbolizer *s, uint32_t pid, uint64_t exec_ns);
void ember_symbolizer_on_exit(struct ember_symbolizer *s, uint32_t pid);
/* Call after ember_profile_reset: forgets ids of the old profile. */
void ember_symbolizer_profile_was_reset(struct ember_symbolizer *s);
/* Malformed files and pieces of files met so far. */
uint64_t ember_symbolizer_parse_errors(const struct ember_symbolizer *s);
/* Copies the counters into the profile's statistics. */
void ember_symbolizer_report_stats(struct ember_symbolizer *s);

#endif
