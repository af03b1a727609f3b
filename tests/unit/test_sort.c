// SPDX-License-Identifier: Apache-2.0
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "check_main.h"
#include "shared/sort.h"

/* A key that may repeat, and the element's place before sorting: stability is checkable. */
struct item {
	uint32_t key;
	uint32_t seq;
	char pad[8]; /* an element size qsort has no special case for */
};

static int by_key(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/* What a stable sort must give: by key, then by original place. */
static int by_key_then_seq(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint32_t next_random(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

/* Sorts items with ember_sort and with the reference, and compares them element for element. */
static void check_sorts(struct item *items, size_t n, bool stable)
{
	struct item *want = malloc(n * sizeof(*want) + 1);

	ck_assert_ptr_nonnull(want);
	for (size_t i = 0; i < n; i++)
		items[i].seq = (uint32_t)i;
	memcpy(want, items, n * sizeof(*want));
	qsort(want, n, sizeof(*want), by_key_then_seq);
	ember_sort(items, n, sizeof(*items), by_key);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(items[i].key, want[i].key);
		if (stable)
			ck_assert_uint_eq(items[i].seq, want[i].seq);
	}
	free(want);
}

START_TEST(sorted_runs_merge_stably)
{
	enum { N = 20000 };
	struct item *items = calloc(N, sizeof(*items));
	uint32_t rnd = 7;

	ck_assert_ptr_nonnull(items);
	/* Empty, one, in order, in reverse pairs. */
	check_sorts(items, 0, true);
	items[0].key = 5;
	check_sorts(items, 1, true);
	for (size_t i = 0; i < N; i++)
		items[i].key = (uint32_t)i / 3; /* ties within the one run */
	check_sorts(items, N, true);
	/* kallsyms' shape: a long ascending run, then short runs of higher and lower keys. */
	for (size_t i = 0; i < N; i++)
		items[i].key =
		    i < N - 40 ? (uint32_t)i * 2 : (uint32_t)(next_random(&rnd) % (2 * N));
	check_sorts(items, N, true);
	/* Up to 64 runs of any length, with many equal keys across runs. */
	for (int round = 0; round < 50; round++) {
		size_t runs = 1 + next_random(&rnd) % 64, at = 0;

		for (size_t r = 0; r < runs; r++) {
			size_t len = r + 1 == runs ? N - at : next_random(&rnd) % (N / runs + 1);
			uint32_t key = next_random(&rnd) % 500;

			for (size_t k = 0; k < len && at < N; k++, at++)
				items[at].key = key += next_random(&rnd) % 3;
		}
		check_sorts(items, at, true);
	}
	free(items);
}
END_TEST

START_TEST(many_runs_still_sort)
{
	enum { N = 5000 };
	struct item *items = calloc(N, sizeof(*items));
	uint32_t rnd = 11;

	ck_assert_ptr_nonnull(items);
	/* Random keys: thousands of runs, which go to qsort (sorted, stability not promised). */
	for (size_t i = 0; i < N; i++)
		items[i].key = next_random(&rnd) % 1000;
	check_sorts(items, N, false);
	/* Descending: every element a run of its own. */
	for (size_t i = 0; i < N; i++)
		items[i].key = (uint32_t)(N - i);
	check_sorts(items, N, false);
	free(items);
}
END_TEST

static Suite *sort_suite(void)
{
	Suite *s = suite_create("sort");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, sorted_runs_merge_stably);
	tcase_add_test(tc, many_runs_still_sort);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(sort_suite)
