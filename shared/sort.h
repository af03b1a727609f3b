/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sorting arrays that are mostly in order already: /proc/kallsyms (the kernel image's
 * symbols in address order, then modules' and BPF programs'), a /proc/PID/maps
 * listing, the FDEs of most .eh_frame sections. qsort spends n log n comparisons on
 * them all the same: 2 million for a kernel's 120,000 symbols, about a fifth of
 * reading them.
 */
#ifndef EMBER_SHARED_SORT_H
#define EMBER_SHARED_SORT_H

#include <stddef.h>

/*
 * Sorts base (n elements of size bytes) by cmp, as qsort does, in one pass over the
 * array when it is in order and in a few merges when it holds a few ascending runs
 * (stable: equal elements keep their order). An array of many runs, or one whose merge
 * buffer cannot be had, goes to qsort.
 */
void ember_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif
