/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names for JIT code from a perf map, the file a JIT writes for perf as
 * /tmp/perf-PID.map (Node's --perf-basic-prof, CPython 3.12's -X perf,
 * HotSpot's jcmd Compiler.perfmap, Erlang's +JPperf true, .NET's
 * DOTNET_PerfMapEnabled, LuaJIT, wasm runtimes): one line per piece of code,
 * "START SIZE NAME", START and SIZE in hex (an 0x optional), NAME the rest of
 * the line, appended as code is made. It is read as it grows: a piece at a
 * time, complete lines only.
 *
 * Hostile input: the profiled process writes it. Lines are bounded (a longer
 * one is skipped to its end and counted), numbers must parse and a range must
 * not wrap nor pass EMBER_PERFMAP_MAX_SIZE, entries and name bytes have ceilings (past them lines are dropped
 * and counted). Code a JIT freed and reused under another name takes the name
 * of the newest line that covers it. What a map holds is charged to the
 * "processes" owner (symbolizer/memory/mem_owners.h).
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_PERFMAP_H
#define EMBER_SYMBOLIZER_SYMBOLS_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/strtab.h"

#define EMBER_PERFMAP_MAX_LINE    4096u
#define EMBER_PERFMAP_MAX_ENTRIES (256u << 10)
#define EMBER_PERFMAP_MAX_NAMES   (16u << 20) /* bytes of names, NULs included */
/* No piece of code a JIT makes is larger: a range past it is a line that is not a map's. */
#define EMBER_PERFMAP_MAX_SIZE (1ull << 30)
/* Entries at or before an address searched for the newest that covers it: code is named by
 * one of the last few ranges starting below it, unless a huge range spans many others. */
#define EMBER_PERFMAP_SCAN 64u

struct ember_perfmap_entry {
	uint64_t start, end;
	uint32_t name; /* offset into names */
	uint32_t seq;  /* the line's number among the entries: the newest names reused code */
};

struct ember_perfmap {
	struct ember_perfmap_entry *e;
	size_t n, cap;
	size_t nsorted; /* e[0..nsorted) sorted by start, then seq */
	struct ember_strtab names;
	bool skipping;  /* inside a line longer than EMBER_PERFMAP_MAX_LINE: up to its end */
	uint64_t bytes; /* of the file consumed: where the next piece starts */
	uint64_t entries, lines_bad, lines_long, lines_dropped;
};

void ember_perfmap_init(struct ember_perfmap *m);
void ember_perfmap_free(struct ember_perfmap *m);

/*
 * Parses the complete lines at the start of the len bytes at buf, which follow the bytes
 * consumed so far. Returns how many it consumed (m->bytes grows by as many): a line's start
 * without its end is left for the next piece, unless it is already too long to be a line.
 */
size_t ember_perfmap_feed(struct ember_perfmap *m, const char *buf, size_t len);

/* The name of the code at addr: the newest line whose range holds it, or NULL. */
const char *ember_perfmap_lookup(struct ember_perfmap *m, uint64_t addr);

#endif
