// SPDX-License-Identifier: Apache-2.0
/*
 * A program that spends its time faulting in stack pages, built
 * -fomit-frame-pointer: main -> fault_loop -> touch_pages, where touch_pages
 * has a frame of a few pages and writes them from the bottom (its stack
 * pointer's page first); after each call fault_loop gives those pages back
 * (MADV_DONTNEED), so the next call faults them in again. A sample taken while
 * the kernel handles such a fault finds the page at the stack pointer, or one
 * above it, not there yet; the pages it can read hold every frame's return
 * address.
 *
 *   stack_faults SECONDS   for SECONDS of wall time, then exit
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define FRAME_PAGES 3

static volatile unsigned long sink;

__attribute__((noinline)) static void touch_pages(void)
{
	volatile char buf[FRAME_PAGES * 4096];

	for (int i = 0; i < FRAME_PAGES; i++)
		buf[i * 4096] = (char)i;
	sink += buf[0];
}

__attribute__((noinline)) static void fault_loop(double seconds)
{
	struct timespec t0, now;
	char here;
	uintptr_t page = ((uintptr_t)&here & ~(uintptr_t)4095) - 4096;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100; i++) {
			touch_pages();
			/* The pages below the one fault_loop's frame is in: touch_pages's. */
			madvise((void *)(page - (FRAME_PAGES + 1) * 4096), (FRAME_PAGES + 1) * 4096,
			        MADV_DONTNEED);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 <
	         seconds);
}

int main(int argc, char **argv)
{
	fault_loop(argc > 1 ? atof(argv[1]) : 2.0);
	return 0;
}
