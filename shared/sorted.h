/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Binary search in an array sorted by one of its elements' fields (an
 * address, an id): the symbol tables, unit ranges, PLT slots and pprof ids
 * all search this way. Macros, so that the field's type and the comparison
 * stay the caller's and the search compiles to the loop it replaces. The
 * array must be sorted (ascending) by the field; nothing else is assumed,
 * and n may be 0.
 *
 *	i = EMBER_UPPER_BOUND(syms, nsyms, addr, pc);
 *	sym = i ? &syms[i - 1] : NULL;   // the last symbol at or before pc
 */
#ifndef EMBER_SHARED_SORTED_H
#define EMBER_SHARED_SORTED_H

#include <stddef.h>

/* The index of the first element whose field is greater than key (n if none). */
#define EMBER_UPPER_BOUND(array, n, field, key) EMBER_BOUND_(array, n, field, key, <=)

/* The index of the first element whose field is not less than key (n if none). */
#define EMBER_LOWER_BOUND(array, n, field, key) EMBER_BOUND_(array, n, field, key, <)

#define EMBER_BOUND_(array, n, field, key, before)                                                 \
	({                                                                                         \
		size_t lo_ = 0, hi_ = (n);                                                         \
                                                                                                   \
		while (lo_ < hi_) {                                                                \
			size_t mid_ = lo_ + (hi_ - lo_) / 2;                                       \
                                                                                                   \
			if ((array)[mid_].field before(key))                                       \
				lo_ = mid_ + 1;                                                    \
			else                                                                       \
				hi_ = mid_;                                                        \
		}                                                                                  \
		lo_;                                                                               \
	})

#endif
