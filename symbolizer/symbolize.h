/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Turns one sample record (pid, kernel and user addresses) into a stack of
 * symbolized locations in the profile: user addresses through the process's
 * mappings and the mapped file's symbols, kernel addresses through kallsyms,
 * interpreted frames (bpf/interp.h) through their runtime's reader, JIT code
 * that no walker named through its process's perf map.
 * A frame that cannot be named is kept as module+0xoffset or [unknown].
 *
 * The symbolizer owns the state symbolizing needs (the object cache, the
 * process table, the kernel symbols) and keeps the whole process within its
 * memory budget (symbolizer/memory/mem_budget.h): when the resident size
 * passes it, freed memory is given back, then the object cache and the
 * idlest processes shrink, and if that is not enough it sheds work (files
 * not yet cached are not read: their frames stay unsymbolized, counted in
 * symbolizer.frames_shed) until there is room again.
 *
 * Input: sample and process records from the collector (checked by
 * record_decode.c) and everything the broker hands over (see process_table.h
 * and objcache.h).
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLIZE_H
#define EMBER_SYMBOLIZER_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolizer/client/broker_client.h"
#include "symbolizer/interp/interp.h"
#include "symbolizer/memory/mem_budget.h"
#include "symbolizer/symbols/kallsyms.h"
#include "symbolizer/symbols/objcache.h"
#include "symbolizer/process/perf_maps.h"
#include "symbolizer/process/process_table.h"
#include "symbolizer/profile/profile.h"
#include "bpf/records.h"

struct ember_unwind;

#define EMBER_KALLSYMS_RELOAD_NS (60ull * 1000000000ull)
#define EMBER_BUDGET_CHECK_NS    (1000ull * 1000000ull)
/* Between checks, how often the resident size alone is read (a file parsed can pass the
 * budget in far less than a second). */
#define EMBER_BUDGET_PEEK_NS       (50ull * 1000000ull)
#define EMBER_OBJCACHE_FLOOR_BYTES (2u << 20) /* the budget never shrinks the cache below */

struct ember_symbolizer_opts {
	struct ember_profile *profile; /* where samples go */
	struct ember_broker_client *broker;
	size_t objcache_bytes; /* 0: EMBER_OBJCACHE_DEFAULT_BYTES */
	size_t memory_budget;  /* resident bytes; 0: EMBER_MEM_DEFAULT_BUDGET */
	/* Ask the broker for each process's executable and cgroup (for OTLP resources). */
	bool want_process_facts;
};

/* Every field is symbolize.c's: use the functions below. */
/*
 * The profile's mapping of a map entry, remembered for the next frames in it (a stack's
 * frames are in few files): naming a mapping interns its path and its file's ids and
 * hashes the whole, five keyed hashes (SipHash) a frame that took a third of the time
 * of samples seen before. It holds for the same process, entry, path and parsed file
 * (no file read or dropped since) in the same profile.
 */
struct ember_mapping_memo {
	struct ember_map_entry entry;
	const struct ember_obj *obj;
	uint64_t objcache_changes;
	uint32_t pid, mapping, filename; /* filename: the profile's string of its name */
	uint8_t kind;                    /* enum ember_frame_kind */
	bool valid;
};
#define EMBER_MAPPING_MEMOS 8

/*
 * A raw stack's profile stack, remembered for the samples that repeat it (a busy loop's
 * mostly do): naming a stack frame by frame takes a keyed hash and an index probe for each
 * frame and for the stack, 3 to 4 us a sample; one hash of its raw words replaces them.
 * It holds for the same process and maps (their generation) in the same profile. Not kept:
 * a stack with a frame left unnamed for want of maps, a file or budget (a later look may
 * name it) and one with interpreted frames (their words point at objects in memory that may
 * be freed and made again).
 */
struct ember_stack_memo {
	uint64_t hash;
	uint64_t *words; /* the key: process, maps, sample kind and lengths, then frames */
	uint32_t nwords, capacity;
	uint32_t stack, depth;
	uint32_t sample; /* the last sample with this stack in the profile: a guess, checked */
};
#define EMBER_STACK_MEMOS 256
/*
 * A frame's location in the profile, remembered for the stacks that share it when theirs
 * differ (a leaf moves within a loop; its callers do not): a keyed hash less a frame, and
 * the mapping and file looked up. Holds as a stack's memo does (kernel frames: the profile).
 */
struct ember_frame_memo {
	uint64_t key[4]; /* process (UINT64_MAX: the kernel), maps generation, address, place */
	uint32_t location;
	bool valid;
};
#define EMBER_FRAME_MEMOS 2048
/* A process's or thread's name and its string in the profile (two keyed hashes a sample). */
struct ember_comm_memo {
	char name[EMBER_COMM_LEN];
	uint32_t str;
	bool valid;
};
#define EMBER_COMM_MEMOS      16
#define EMBER_STACK_KEY_WORDS (3 + EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS)

struct ember_symbolizer {
	struct ember_profile *profile;
	struct ember_broker_client *broker;
	struct ember_objcache objs;
	struct ember_processes procs;
	struct ember_kallsyms ksyms;
	struct ember_perf_maps perf_maps; /* names for JIT code no walker named */
	struct ember_interps *interps;    /* interpreted frames; NULL: shown as [unknown] */
	struct ember_unwind *unwind;      /* its row cache shrinks for the budget too; NULL: none */
	struct ember_mem_budget budget;
	uint64_t maps_snapshots[3]; /* the collector's: taken, served, dropped */
	bool ksyms_tried;
	uint64_t ksyms_loaded_ns;
	bool kernel_id_tried, vdso_id_tried;
	char kernel_build_id[129], vdso_build_id[129]; /* hex, "" when unknown */
	uint64_t vdso_len;                             /* the vDSO's mapping, in bytes */
	uint64_t vdso_vaddr;                           /* the ELF address its mapping starts at */
	int64_t monotonic_to_realtime_ns;
	uint32_t kernel_mapping; /* in the current profile, or EMBER_NONE */
	bool want_process_facts;
	bool shedding; /* over budget with the caches at their floor: no new files read */
	uint64_t last_budget_check_ns, last_budget_peek_ns;
	uint32_t stack_buf[EMBER_MAX_KSTACK + EMBER_MAX_USTACK_WORDS + 1]; /* + an unwind marker */
	struct ember_sym_frames frames_buf;
	struct ember_mapping_memo mapping_memo[EMBER_MAPPING_MEMOS];
	struct ember_stack_memo stack_memo[EMBER_STACK_MEMOS];
	uint64_t stack_key[EMBER_STACK_KEY_WORDS];
	struct ember_comm_memo comm_memo[EMBER_COMM_MEMOS];
	struct ember_frame_memo *frame_memo; /* EMBER_FRAME_MEMOS of them, or NULL */
	uint64_t stack_memo_hits, frame_memo_hits;
	/* Counters for the run statistics. */
	uint64_t samples, frames, unknown_frames, unsymbolized_frames, shed_frames;
	/* Frames left unnamed, and samples with such frames, because a read stalled. */
	uint64_t frames_stalled, samples_stalled;
	bool sample_stalled;
	bool sample_unsettled;        /* a frame a perf map written later may name */
	uint64_t sample_time_ns;      /* the sample being symbolized was taken then (monotonic) */
	uint64_t frames_by_origin[4]; /* enum ember_sym_origin */
	uint64_t inline_frames;
	/* Process contexts (OTEP 4719) read whole, refused (torn, too large, not one), and
	 * attributes left out of those read. */
	uint64_t contexts_read, contexts_refused, context_attrs_dropped;
	/* Samples with a thread context's span (OTEP 4947), and those whose ids were refused. */
	uint64_t samples_linked, links_refused;
	uint64_t samples_labelled; /* with a goroutine's labels */
	/* Maps read again for a context published late; and since the session last looked. */
	uint64_t context_looks;
	bool rereads_queued;
	uint64_t off_cpu_samples, off_cpu_ns;
	uint64_t budget_exceeded, budget_shed_periods;
	uint64_t budget_peeks_over; /* peeks between checks that found the caches must shrink */
};

/* Opens /proc/self/statm for the budget: call before the sandbox. */
int ember_symbolizer_init(struct ember_symbolizer *s, const struct ember_symbolizer_opts *o);
void ember_symbolizer_free(struct ember_symbolizer *s);

/* The collector's clock: sample times are monotonic, profiles Unix time. */
void ember_symbolizer_set_clock(struct ember_symbolizer *s, int64_t monotonic_to_realtime_ns);

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
 * symbolized (the broker serves only live processes). Not while shedding work.
 */
void ember_symbolizer_preload(struct ember_symbolizer *s, uint32_t pid,
                              const struct ember_map_entry *e, int fd, uint64_t now_ns);
/* The process records: pid ran a new program at exec_ns (CLOCK_MONOTONIC); pid exited.
 * A process's state is freed shortly after its exit record. */
void ember_symbolizer_on_exec(struct ember_symbolizer *s, uint32_t pid, uint64_t exec_ns);
void ember_symbolizer_on_exit(struct ember_symbolizer *s, uint32_t pid, uint64_t now_ns);
/* Takes over the maps of pid someone else read (the unwind loader); leaves *maps empty. */
void ember_symbolizer_adopt_maps(struct ember_symbolizer *s, uint32_t pid, struct ember_maps *maps,
                                 uint64_t now_ns);
/* The collector's own resident size and BPF map memory, as it reported them. */
struct ember_rec_collector_memory;
void ember_symbolizer_collector_memory(struct ember_symbolizer *s,
                                       const struct ember_rec_collector_memory *m);

/*
 * Housekeeping, called often (it works at most once per
 * EMBER_BUDGET_CHECK_NS, or sooner when a peek at the resident size every
 * EMBER_BUDGET_PEEK_NS finds it near the budget): frees the state of
 * processes that exited or went idle, and keeps the memory budget.
 * exclude: resident bytes the budget does not cover (the whole-run profile
 * of `ember record`, which the user asked to keep).
 */
void ember_symbolizer_tick(struct ember_symbolizer *s, uint64_t now_ns, size_t exclude);
/* Over the budget with the caches shrunk: work that can wait (loading tables ahead) waits. */
bool ember_symbolizer_shedding(const struct ember_symbolizer *s);
/* Call after ember_profile_reset: forgets ids of the old profile. */
void ember_symbolizer_profile_was_reset(struct ember_symbolizer *s);
/* An interval was written: gives the memory it held back to the system. */
void ember_symbolizer_release_memory(struct ember_symbolizer *s);

/* Malformed files and pieces of files met so far. */
uint64_t ember_symbolizer_parse_errors(const struct ember_symbolizer *s);
/* The run's statistics (the symbolizer's and those of everything it owns) into p. */
void ember_symbolizer_report_stats(struct ember_symbolizer *s, struct ember_profile *p);
/* Where memory goes, as one line for the log ("rss 41.2 MiB (budget ...): objcache ..."). */
void ember_symbolizer_memory_line(struct ember_symbolizer *s, char *buf, size_t size);

#endif
