// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/memory/mem_budget.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024.0 * 1024.0)

void ember_mem_tune(void)
{
	/* One arena for all threads: more only hold more free memory, and the export
	 * thread's own would be a heap glibc shrinks after reading
	 * /proc/sys/vm/overcommit_memory, which the sandbox forbids. */
	mallopt(M_ARENA_MAX, 1);
	/* A fixed threshold (glibc otherwise raises it after every large free): large
	 * blocks (profile arrays, maps, symbol tables) are mapped on their own and
	 * unmapped when freed instead of fragmenting the heap. */
	mallopt(M_MMAP_THRESHOLD, EMBER_MEM_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, 2 * EMBER_MEM_MMAP_THRESHOLD);
}

int ember_mem_budget_init(struct ember_mem_budget *b, size_t limit)
{
	long page = sysconf(_SC_PAGESIZE);

	memset(b, 0, sizeof(*b));
	b->limit = limit ? limit : EMBER_MEM_DEFAULT_BUDGET;
	b->page = page > 0 ? (size_t)page : 4096;
	b->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	return b->statm_fd < 0 ? -errno : 0;
}

void ember_mem_budget_free(struct ember_mem_budget *b)
{
	if (b->statm_fd >= 0)
		close(b->statm_fd);
	b->statm_fd = -1;
}

size_t ember_mem_rss(struct ember_mem_budget *b)
{
	char buf[128];
	unsigned long long size, resident;
	ssize_t n;

	if (b->statm_fd < 0)
		return 0;
	/* "size resident shared text lib data dt", in pages; read afresh from offset 0. */
	n = pread(b->statm_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
		return 0;
	resident *= b->page;
	if (resident > b->peak_rss)
		b->peak_rss = (size_t)resident;
	return (size_t)resident;
}

void ember_mem_measure(struct ember_mem_budget *b, struct ember_mem_split *out)
{
	struct mallinfo2 mi = mallinfo2();
	size_t heap;

	memset(out, 0, sizeof(*out));
	out->rss = ember_mem_rss(b);
	out->counting = ember_mem_counting();
	for (unsigned int o = 0; o < EMBER_MEM_OWNERS; o++)
		out->owners[o] = ember_mem_owner_bytes((enum ember_mem_owner)o);
	out->heap_in_use = mi.uordblks + mi.hblkhd;
	out->heap_free = mi.fordblks;
	out->heap_mapped = mi.hblkhd;
	heap = mi.arena + mi.hblkhd;
	out->not_heap = out->rss > heap ? out->rss - heap : 0;
}

size_t ember_mem_over(const struct ember_mem_budget *b, size_t rss, size_t excluded)
{
	rss = rss > excluded ? rss - excluded : 0;
	return b->limit && rss > b->limit ? rss - b->limit : 0;
}

void ember_mem_release(struct ember_mem_budget *b)
{
	malloc_trim(0);
	b->releases++;
}

/* Heap no owner's count covers: glibc's figure less the owners' (when counting). */
static size_t unowned(const struct ember_mem_split *m)
{
	size_t owned = 0;

	for (unsigned int o = 0; o < EMBER_MEM_OWNERS; o++)
		owned += m->owners[o];
	return m->heap_in_use > owned ? m->heap_in_use - owned : 0;
}

void ember_mem_report_stats(struct ember_mem_budget *b, const struct ember_mem_split *m,
                            const struct ember_stat_sink *sink)
{
	char name[64];

	ember_stat(sink, "memory.rss", m->rss);
	ember_stat(sink, "memory.peak_rss", b->peak_rss);
	ember_stat(sink, "memory.budget", b->limit);
	if (m->counting)
		for (unsigned int o = 0; o < EMBER_MEM_OWNERS; o++) {
			snprintf(name, sizeof(name), "memory.%s",
			         ember_mem_owner_name((enum ember_mem_owner)o));
			ember_stat(sink, name, m->owners[o]);
		}
	ember_stat(sink, "memory.heap_in_use", m->heap_in_use);
	ember_stat(sink, "memory.heap_unowned", m->counting ? unowned(m) : 0);
	ember_stat(sink, "memory.heap_free", m->heap_free);
	ember_stat(sink, "memory.not_heap", m->not_heap);
	ember_stat(sink, "memory.releases", b->releases);
	if (b->collector_rss) {
		ember_stat(sink, "memory.collector_rss", b->collector_rss);
		ember_stat(sink, "memory.collector_bpf_maps", b->collector_bpf_maps);
	}
}

void ember_mem_format(const struct ember_mem_budget *b, const struct ember_mem_split *m, char *buf,
                      size_t size)
{
	size_t n;

	n = (size_t)snprintf(buf, size, "rss %.1f MiB (budget %.1f MiB, peak %.1f MiB)",
	                     m->rss / MIB, b->limit / MIB, b->peak_rss / MIB);
	for (unsigned int o = 0; m->counting && o < EMBER_MEM_OWNERS && n < size; o++)
		n += (size_t)snprintf(buf + n, size - n, "%s %s %.1f MiB", o ? "," : ":",
		                      ember_mem_owner_name((enum ember_mem_owner)o),
		                      m->owners[o] / MIB);
	if (n < size)
		n += (size_t)snprintf(
		    buf + n, size - n,
		    "%s heap_unowned %.1f MiB, heap_free %.1f MiB, not_heap %.1f MiB",
		    m->counting ? "," : ":", unowned(m) / MIB, m->heap_free / MIB,
		    m->not_heap / MIB);
	if (n < size && b->collector_rss)
		snprintf(buf + n, size - n, "; collector rss %.1f MiB, BPF maps %.1f MiB",
		         b->collector_rss / MIB, b->collector_bpf_maps / MIB);
}
