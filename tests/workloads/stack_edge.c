// SPDX-License-Identifier: Apache-2.0
/*
 * Frames at the very top of a stack, for the unwinder's stack window: a
 * context (makecontext) runs on a stack of two pages with an inaccessible
 * page right above it, and burns CPU three frames down from its entry
 * (on_edge -> edge_mid -> edge_leaf). Every saved word the walk needs lies
 * within a few hundred bytes of that page, so a read of the stack that runs
 * past the words into it fails. Build with -O2 -fomit-frame-pointer.
 * Usage: stack_edge SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static volatile unsigned long sink;
static double seconds = 5;
static ucontext_t main_ctx, edge_ctx;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void edge_leaf(double end)
{
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i ^ (sink >> 3);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void edge_mid(double end)
{
	edge_leaf(end);
	__asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays */
}

__attribute__((noinline)) void on_edge(void)
{
	edge_mid(now() + seconds);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	char *stack = mmap(NULL, 3 * (size_t)page, PROT_READ | PROT_WRITE,
	                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (argc > 1)
		seconds = atof(argv[1]);
	if (stack == MAP_FAILED || mprotect(stack + 2 * page, (size_t)page, PROT_NONE))
		return perror("stack_edge: mmap"), 1;
	if (getcontext(&edge_ctx))
		return perror("stack_edge: getcontext"), 1;
	edge_ctx.uc_stack.ss_sp = stack;
	edge_ctx.uc_stack.ss_size = 2 * (size_t)page;
	edge_ctx.uc_link = &main_ctx;
	makecontext(&edge_ctx, on_edge, 0);
	if (swapcontext(&main_ctx, &edge_ctx))
		return perror("stack_edge: swapcontext"), 1;
	return 0;
}
