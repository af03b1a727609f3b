// SPDX-License-Identifier: Apache-2.0
/*
 * The shared library stall_app.c loads from a file system that stops
 * answering (test_stall.py serves it over FUSE). remote_work() is its hot
 * code; `cold` is a large read-only block no one touches, so that what the
 * symbolizer reads of this file (section headers, symbols, DWARF, placed
 * after it) is not in the page cache when the file system stalls, and a page
 * of it is there for the process to fault on.
 */
#define COLD_BYTES (8 << 20)

const volatile char stall_cold[COLD_BYTES] = {1};

static volatile unsigned long sink;

__attribute__((noinline)) void remote_work(long n)
{
	for (long i = 0; i < n; i++)
		sink += (unsigned long)i ^ (sink >> 3);
}

/*
 * The same work on registers alone: it runs where only this file's code is mapped (stall_app
 * maps a second copy of this file that way, with no data segment).
 */
__attribute__((noinline)) unsigned long remote_spin(long n)
{
	unsigned long x = 0;

	for (long i = 0; i < n; i++) {
		x += (unsigned long)i ^ (x >> 3);
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

const volatile char *stall_cold_page(void)
{
	return stall_cold + COLD_BYTES / 2;
}
