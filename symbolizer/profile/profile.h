/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-memory profile: what the symbolizer aggregates during a reporting
 * interval and what every writer (pprof, folded, HTML, OTLP) and reader
 * (ember report) works on.
 *
 * Everything is deduplicated and referred to by 0-based index:
 *   strings    interned; index 0 is ""
 *   mappings   a mapped file (or the kernel) in some process
 *   functions  name, system (mangled) name, source file
 *   locations  one address; its lines are the inline chain, innermost first
 *              and the real (outermost) function last, as in pprof
 *   stacks     lists of locations, leaf first
 *   samples    (stack, pid, tid, cpu, comm, thread name, wait) -> count, timestamps;
 *              or, for off-CPU samples (a wait reason in the key), nanoseconds waited
 *   processes  facts about a sampled process (executable, container), by pid
 *
 * A sample is either a CPU sample (count > 0, off_cpu_ns 0) or an off-CPU
 * sample (count 0, the time its thread waited in off_cpu_ns). A view picks
 * what the flame graph, top, diff and folded stacks show: CPU samples,
 * off-CPU time, or both as time (a CPU sample standing for period_ns).
 */
#ifndef EMBER_SYMBOLIZER_PROFILE_PROFILE_H
#define EMBER_SYMBOLIZER_PROFILE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/interp.h"
#include "shared/formats.h"
#include "shared/hash.h"
#include "shared/stat_sink.h"
#include "shared/strtab.h"
#include "shared/vec.h"

#define EMBER_NONE UINT32_MAX /* "no mapping" and similar */

/* The kinds of frames; then one per interpreted runtime (bpf/interp.h), EMBER_FRAME_INTERP(rt). */
enum ember_frame_kind {
	EMBER_FRAME_UNKNOWN = 0,
	EMBER_FRAME_KERNEL,
	EMBER_FRAME_NATIVE,
	EMBER_FRAME_GO,
	EMBER_FRAME_KIND_MAX = EMBER_FRAME_GO + EMBER_RUNTIME_MAX,
};

/* The kind of runtime rt's frames (rt from 1, below EMBER_RUNTIME_MAX). */
#define EMBER_FRAME_INTERP(rt) ((enum ember_frame_kind)(EMBER_FRAME_GO + (rt)))

/* OpenTelemetry's profile.frame.type value for a kind ("kernel", "native", ...). */
const char *ember_frame_kind_name(enum ember_frame_kind kind);
/* The kind named by name, or EMBER_FRAME_UNKNOWN. */
enum ember_frame_kind ember_frame_kind_parse(const char *name);

struct ember_mapping {
	uint64_t start;
	uint64_t limit;
	uint64_t file_offset;
	uint32_t filename;     /* string: path, "[kernel.kallsyms]", "[vdso]" */
	uint32_t gnu_build_id; /* string: lowercase hex, or 0 */
	uint32_t go_build_id;  /* string, or 0 */
	uint32_t file_hash;    /* string: OTel htlhash, or 0 */
	/* Its addresses were named as far as they can be (an address was, or
	 * ember read or tried the file): pprof need not open the file again. */
	bool has_functions;
	/* The file's ELF virtual address that start maps (known when ember read the
	 * file's segments): OTLP carries addresses in that space, as backends expect. */
	bool has_file_vaddr;
	uint64_t file_vaddr;
};

struct ember_function {
	uint32_t name;        /* string: demangled name */
	uint32_t system_name; /* string: name as in the symbol table */
	uint32_t filename;    /* string: source file, or 0 */
	int64_t start_line;
};

struct ember_line {
	uint32_t function;
	uint32_t reserved;
	int64_t line; /* 0 when unknown */
};

struct ember_location {
	uint32_t mapping; /* index, or EMBER_NONE */
	uint8_t kind;     /* enum ember_frame_kind */
	uint8_t call;     /* a caller's frame: EMBER_LOCATION_CALL */
	uint8_t reserved[2];
	uint64_t address;
	uint32_t first_line; /* index into the profile's line pool */
	uint32_t nlines;
};

struct ember_stack {
	uint32_t first; /* index into the profile's location-id pool */
	uint32_t depth;
};

/* What identifies a sample besides its stack. */
struct ember_sample_key {
	uint32_t stack;
	uint32_t pid;
	uint32_t tid;
	uint32_t cpu;         /* EMBER_NONE when unknown; off-CPU: where it ran again */
	uint32_t comm;        /* string: process name */
	uint32_t thread_name; /* string: thread name */
	uint32_t wait;        /* string: why an off-CPU sample waited ("futex", ...); 0: CPU */
	/* string: the span the thread ran (OTEP 4947), 32 hex digits of its trace id then 16
	 * of its span id (EMBER_LINK_HEX, shared/formats.h); 0: none */
	uint32_t link;
	/* string: the goroutine's pprof labels, "key=value\n" lines sorted by key (at most
	 * EMBER_LABEL_TEXT bytes); 0: none */
	uint32_t labels;
};

#define EMBER_LABEL_TEXT 2048

struct ember_sample {
	struct ember_sample_key key;
	uint64_t count;       /* CPU samples; 0 in an off-CPU sample */
	uint64_t off_cpu_ns;  /* time waited off CPU; 0 in a CPU sample */
	uint64_t *timestamps; /* Unix ns, one per counted event, when known */
	uint32_t ntimestamps;
	uint32_t cap_timestamps;
};

/* What is known of a sampled process besides its samples (OTLP resource attributes). */
struct ember_process_attrs {
	uint32_t pid;
	uint32_t exe_path;     /* string: executable as the process sees it, or 0 */
	uint32_t container_id; /* string: container id from its cgroup, or 0 */
	/* string: the resource the process published (OTEP 4719), "key=value\n" lines, or 0 */
	uint32_t context;
	uint64_t context_addr; /* where context was looked for (0: nowhere yet) */
};

struct ember_stat {
	uint32_t name; /* string */
	uint64_t value;
};

/* What a profile's samples cover: pprof names its first mapping after it. */
enum ember_profile_scope {
	EMBER_SCOPE_UNKNOWN = 0, /* read from a file: keep its mappings' order */
	EMBER_SCOPE_SYSTEM,      /* every process on the host */
	EMBER_SCOPE_PROCESSES,   /* the processes chosen with -p */
	EMBER_SCOPE_TITLED,      /* a command, unit, container, ... named by the title */
};

/*
 * Who names native frames in OTLP output. Either way addresses and mappings are in the
 * file's ELF address space and mappings carry build ids, so a backend can name what ember
 * could not (Pyroscope does so only for a mapping none of whose locations has a function).
 */
enum ember_otlp_symbols {
	EMBER_OTLP_SYMBOLS_HOST,    /* ember names what it can; the rest are bare addresses */
	EMBER_OTLP_SYMBOLS_BACKEND, /* frames of files with a GNU build id go as addresses */
	EMBER_OTLP_SYMBOLS_MAX,
};

/* What a flame graph, top, diff or folded stacks show of a profile. */
enum ember_view {
	EMBER_VIEW_CPU = 0, /* CPU samples (a count) */
	EMBER_VIEW_OFF_CPU, /* time waited off CPU (nanoseconds) */
	EMBER_VIEW_BOTH,    /* both as time (nanoseconds): on CPU plus off CPU */
	EMBER_VIEW_MAX,
};

/* "cpu", "off-cpu", "both" -> view. Returns 0 or -EINVAL. */
int ember_view_parse(const char *name, enum ember_view *out);
const char *ember_view_name(enum ember_view v);

struct ember_profile {
	struct ember_hash_key hash_key;

	struct ember_strset strings; /* id 0 is "" */

	struct ember_vec mappings; /* struct ember_mapping */
	struct ember_index mapping_index;
	struct ember_vec functions; /* struct ember_function */
	struct ember_index function_index;
	struct ember_vec lines;     /* struct ember_line pool */
	struct ember_vec locations; /* struct ember_location */
	struct ember_index location_index;
	struct ember_vec stack_pool; /* uint32_t location ids */
	struct ember_vec stacks;     /* struct ember_stack */
	struct ember_index stack_index;
	struct ember_vec samples; /* struct ember_sample */
	struct ember_index sample_index;
	struct ember_vec stats;     /* struct ember_stat */
	struct ember_vec processes; /* struct ember_process_attrs */
	struct ember_index process_index;

	/* Metadata of the whole profile. */
	uint64_t start_ns; /* Unix time of the first moment covered */
	uint64_t end_ns;
	uint64_t period_ns; /* nanoseconds of CPU time one sample stands for */
	uint32_t sample_hz;
	uint64_t total_count;      /* sum of all sample counts */
	uint64_t total_off_cpu_ns; /* sum of all off-CPU time */
	enum ember_profile_scope scope;
	/* Off-CPU time was recorded (outputs carry its value even when none was seen). */
	bool off_cpu;
	/* The view folded stacks hold and the flame graph opens with. */
	enum ember_view view;
	char host[256];
	/* What was chosen to sample ("" for the whole host): "unit nginx.service", and the
	 * name pprof headlines the profile with ("nginx.service"). */
	char selection[256];
	char title[64];
	/* From configuration, for OTLP resources: service.name ("" for the
	 * default) and extra resource attributes as "key=value\n" lines. */
	char service_name[128];
	char resource_attrs[1024];
	/* Who names native frames in OTLP output (enum ember_otlp_symbols). */
	uint32_t otlp_symbols;
};

int ember_profile_init(struct ember_profile *p);
void ember_profile_free(struct ember_profile *p);
/* Drops all samples and dictionaries; keeps metadata such as host and rate. */
int ember_profile_reset(struct ember_profile *p);

/* Interns len bytes (no NUL inside) and returns the string index in *out. */
int ember_profile_intern(struct ember_profile *p, const char *s, size_t len, uint32_t *out);
int ember_profile_intern_cstr(struct ember_profile *p, const char *s, uint32_t *out);
const char *ember_profile_str(const struct ember_profile *p, uint32_t id);
size_t ember_profile_nstrings(const struct ember_profile *p);

int ember_profile_add_mapping(struct ember_profile *p, const struct ember_mapping *m,
                              uint32_t *out);
int ember_profile_add_function(struct ember_profile *p, const struct ember_function *f,
                               uint32_t *out);
/*
 * Or'ed into the kind given below for a caller's frame, which is named from the byte
 * before its return address (inside its call): a sample that stopped at that same
 * address is another place, with its own line and inlined functions, so another
 * location.
 */
#define EMBER_LOCATION_CALL 0x100u
/* lines[0] is the innermost inlined frame; the last is the containing function.
 * kind: an enum ember_frame_kind, with EMBER_LOCATION_CALL or not. */
int ember_profile_add_location(struct ember_profile *p, uint32_t mapping, uint32_t kind,
                               uint64_t address, const struct ember_line *lines, uint32_t nlines,
                               uint32_t *out);
/* Finds the location of (mapping, kind, address) added before. Returns 0 or -ENOENT. */
int ember_profile_find_location(const struct ember_profile *p, uint32_t mapping, uint32_t kind,
                                uint64_t address, uint32_t *out);
/* Whether location loc (an id the profile gave) has lines: a name. */
bool ember_profile_location_named(const struct ember_profile *p, uint32_t loc);
/* Gives lines to location loc, added without (JIT code whose perf map named it later).
 * Returns 0, -EEXIST when it has lines, -EINVAL, -ENOMEM. */
int ember_profile_name_location(struct ember_profile *p, uint32_t loc,
                                const struct ember_line *lines, uint32_t nlines);
/* locations[0] is the leaf. */
int ember_profile_add_stack(struct ember_profile *p, const uint32_t *locations, uint32_t depth,
                            uint32_t *out);
/* Adds count to the sample with this key; timestamp_ns 0 records no timestamp. */
int ember_profile_add_sample(struct ember_profile *p, const struct ember_sample_key *key,
                             uint64_t count, uint64_t timestamp_ns);
/* The same, first trying the sample numbered *hint (compared whole, no hash): a caller's
 * guess of the last sample of this key, which it learns in *hint (EMBER_NONE: no guess). */
int ember_profile_add_sample_hinted(struct ember_profile *p, const struct ember_sample_key *key,
                                    uint64_t count, uint64_t timestamp_ns, uint32_t *hint);
/* Adds ns of off-CPU time to the sample with this key (key->wait must name a reason). */
int ember_profile_add_off_cpu(struct ember_profile *p, const struct ember_sample_key *key,
                              uint64_t ns);
/* A sample's value in a view: its count (cpu) or nanoseconds (off-cpu, both). */
uint64_t ember_sample_value(const struct ember_profile *p, const struct ember_sample *s,
                            enum ember_view v);
/* The sum of ember_sample_value over the profile. */
uint64_t ember_profile_total(const struct ember_profile *p, enum ember_view v);

/* Records (or replaces) the facts about a process. */
int ember_profile_set_process(struct ember_profile *p, const struct ember_process_attrs *a);
/* The facts about pid, or NULL. */
const struct ember_process_attrs *ember_profile_find_process(const struct ember_profile *p,
                                                             uint32_t pid);

/*
 * Adds everything src holds (samples with their stacks, locations, functions
 * and mappings, process facts, statistics) to dst, and widens dst's time
 * range to cover src's. Used to keep a whole recording while each reporting
 * interval is shipped and reset.
 */
int ember_profile_merge(struct ember_profile *dst, const struct ember_profile *src);
/* The same, but only the samples whose link begins with link_prefix (NULL: all of them). */
int ember_profile_merge_linked(struct ember_profile *dst, const struct ember_profile *src,
                               const char *link_prefix);
/* Keeps only p's samples whose link begins with link_prefix (`--trace`), and its metadata. */
int ember_profile_keep_linked(struct ember_profile *p, const char *link_prefix);

/*
 * The name shown for a location that has no lines: "module+0xoffset" (the
 * mapping's file name and the address's offset in that file) or "[unknown]".
 */
void ember_profile_unsymbolized_name(const struct ember_profile *p,
                                     const struct ember_location *loc, char *buf, size_t size);

/*
 * Calls fn with the display name of every frame of a stack, outermost first;
 * inlined functions are frames of their own. Stops at the first error fn returns.
 */
typedef int (*ember_frame_fn)(void *ctx, const char *name, enum ember_frame_kind kind);
int ember_profile_walk_stack(const struct ember_profile *p, uint32_t stack, ember_frame_fn fn,
                             void *ctx);

/* Statistics travel with the profile (lost samples, cache counters, ...). */
int ember_profile_stat_add(struct ember_profile *p, const char *name, uint64_t delta);
int ember_profile_stat_set(struct ember_profile *p, const char *name, uint64_t value);
uint64_t ember_profile_stat_get(const struct ember_profile *p, const char *name);
/* The parts below the profile model report statistics through a sink (shared/stat_sink.h):
 * EMBER_PROFILE_STAT_SINK(p) sets them in profile p. */
void ember_profile_stat_sink_set(void *profile, const char *name, uint64_t value);
#define EMBER_PROFILE_STAT_SINK(p)                                                                 \
	((const struct ember_stat_sink){ember_profile_stat_sink_set, (p)})

/* Typed access to the arrays. */
static inline const struct ember_mapping *ember_profile_mapping(const struct ember_profile *p,
                                                                uint32_t i)
{
	return EMBER_VEC_AT(p->mappings, const struct ember_mapping, i);
}
static inline const struct ember_function *ember_profile_function(const struct ember_profile *p,
                                                                  uint32_t i)
{
	return EMBER_VEC_AT(p->functions, const struct ember_function, i);
}
static inline const struct ember_location *ember_profile_location(const struct ember_profile *p,
                                                                  uint32_t i)
{
	return EMBER_VEC_AT(p->locations, const struct ember_location, i);
}
static inline const struct ember_line *ember_profile_location_lines(const struct ember_profile *p,
                                                                    const struct ember_location *l)
{
	/* A location without lines may come before any line: the pool has no array yet. */
	static const struct ember_line none[1];

	return l->nlines ? EMBER_VEC_AT(p->lines, const struct ember_line, l->first_line) : none;
}
static inline const struct ember_stack *ember_profile_stack(const struct ember_profile *p,
                                                            uint32_t i)
{
	return EMBER_VEC_AT(p->stacks, const struct ember_stack, i);
}
static inline const uint32_t *ember_profile_stack_locations(const struct ember_profile *p,
                                                            const struct ember_stack *s)
{
	/* An empty stack may come before any location id: the pool has no array yet. */
	static const uint32_t none[1];

	return s->depth ? EMBER_VEC_AT(p->stack_pool, const uint32_t, s->first) : none;
}
static inline const struct ember_sample *ember_profile_sample(const struct ember_profile *p,
                                                              uint32_t i)
{
	return EMBER_VEC_AT(p->samples, const struct ember_sample, i);
}

#endif
