// SPDX-License-Identifier: Apache-2.0
#include "shared/sort.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* More runs than this: qsort, whose merges are tuned for each element size, does better. */
#define MAX_RUNS 64

#define AT(i) (a + (size_t)(i)*size)

/* The first index in [lo, hi) whose element sorts after key (ties stay before it). */
static size_t after(const char *a, size_t size, size_t lo, size_t hi, const void *key,
                    int (*cmp)(const void *, const void *))
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp(AT(mid), key) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first index in [lo, hi) whose element does not sort before key. */
static size_t not_before(const char *a, size_t size, size_t lo, size_t hi, const void *key,
                         int (*cmp)(const void *, const void *))
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp(AT(mid), key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Merges the sorted runs [lo, mid) and [mid, hi). Only the part where they overlap
 * moves: the first run's elements up to the second's first stay, and so do the
 * second's from the first's last on. Returns -1 when no buffer could be had.
 */
static int merge(char *a, size_t size, size_t lo, size_t mid, size_t hi,
                 int (*cmp)(const void *, const void *))
{
	size_t i, j, out, la;
	char *left;

	if (cmp(AT(mid - 1), AT(mid)) <= 0)
		return 0;
	lo = after(a, size, lo, mid, AT(mid), cmp);
	hi = not_before(a, size, mid, hi, AT(mid - 1), cmp);
	la = mid - lo;
	left = malloc(la * size);
	if (!left)
		return -1;
	memcpy(left, AT(lo), la * size);
	/* Writing never overtakes reading: out stays at or below j. */
	for (i = 0, j = mid, out = lo; i < la && j < hi; out++) {
		if (cmp(left + i * size, AT(j)) <= 0)
			memcpy(AT(out), left + i++ * size, size);
		else
			memcpy(AT(out), AT(j++), size);
	}
	memcpy(AT(out), left + i * size, (la - i) * size);
	free(left);
	return 0;
}

void ember_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	char *a = base;
	size_t starts[MAX_RUNS + 1], nruns = 0;

	/* The ascending runs, where each begins. */
	for (size_t i = 0; i < n; i++) {
		if (i && cmp(AT(i - 1), AT(i)) <= 0)
			continue;
		if (nruns == MAX_RUNS) {
			qsort(base, n, size, cmp);
			return;
		}
		starts[nruns++] = i;
	}
	/* Neighbouring runs merged pairwise, until one is left. */
	while (nruns > 1) {
		size_t kept = 0;

		for (size_t r = 0; r < nruns; r += 2) {
			if (r + 1 < nruns && merge(a, size, starts[r], starts[r + 1],
			                           r + 2 < nruns ? starts[r + 2] : n, cmp)) {
				qsort(base, n, size, cmp);
				return;
			}
			starts[kept++] = starts[r];
		}
		nruns = kept;
	}
}
