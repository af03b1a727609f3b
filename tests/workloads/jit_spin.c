// SPDX-License-Identifier: Apache-2.0
/*
 * A "JIT" for the perf-map tests: it copies a spin loop into anonymous
 * executable memory, writes a perf map for it (/tmp/perf-PID.map) as MODE
 * says, and spins there for SECONDS, in a loop that calls nothing and keeps
 * the frame pointers of its caller (so the stack goes on to main).
 *
 *     jit_spin MODE SECONDS
 *
 * MODE: good (one line naming the loop jit_spin_loop), late (the line written
 * after a second), garbage (random bytes, no line), huge (the line, then a
 * sparse file 1 GiB long), long (a line of 1 MiB, then the line), fifo (a
 * FIFO where the map should be), link (a symbolic link to a good map
 * elsewhere), other (a good map owned by another user), sizes (absurd sizes
 * and addresses: wrapping, 0, 2^64-1; then the line).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 1: pause; dec rdi; jnz 1b; ret -- spins rdi times. */
static const unsigned char loop_code[] = {0xf3, 0x90, 0x48, 0xff, 0xcf, 0x75, 0xf9, 0xc3};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void write_map(const char *mode, const char *path, uintptr_t code)
{
	char line[128], other[64];

	snprintf(line, sizeof(line), "%lx %zx jit_spin_loop\n", (unsigned long)code,
	         sizeof(loop_code));
	if (!strcmp(mode, "good")) {
		write_file(path, line);
	} else if (!strcmp(mode, "garbage")) {
		FILE *f = fopen(path, "w");

		srand(7);
		for (int i = 0; f && i < (1 << 20); i++)
			fputc(rand() % 256 == '\n' ? 'x' : rand() % 256, f);
		if (!f || fclose(f))
			exit(1);
	} else if (!strcmp(mode, "huge")) {
		write_file(path, line);
		if (truncate(path, 1l << 30))
			exit(1);
	} else if (!strcmp(mode, "long")) {
		FILE *f = fopen(path, "w");

		fprintf(f, "%lx 10 ", (unsigned long)code);
		for (int i = 0; i < (1 << 20); i++)
			fputc('n', f);
		fprintf(f, "\n%s", line);
		if (fclose(f))
			exit(1);
	} else if (!strcmp(mode, "fifo")) {
		if (mkfifo(path, 0644))
			exit(1);
	} else if (!strcmp(mode, "link")) {
		snprintf(other, sizeof(other), "/tmp/jit-spin-%d.map", (int)getpid());
		write_file(other, line);
		if (symlink(other, path))
			exit(1);
	} else if (!strcmp(mode, "other")) {
		write_file(path, line);
		if (chown(path, 65534, 65534))
			exit(1);
	} else if (!strcmp(mode, "sizes")) {
		char text[512];

		snprintf(text, sizeof(text),
		         "ffffffffffffff00 1000 wraps\n0 ffffffffffffffff everything\n"
		         "%lx 0 nothing\n%lx ffffffffffffffffff too_many_digits\n%s",
		         (unsigned long)code, (unsigned long)code, line);
		write_file(path, text);
	} else if (strcmp(mode, "late")) {
		fprintf(stderr, "jit_spin: unknown mode %s\n", mode);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "good";
	double seconds = argc > 2 ? atof(argv[2]) : 10;
	char path[64];
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	                           -1, 0);
	void (*spin)(uint64_t);
	struct timespec start, now;

	if (code == MAP_FAILED)
		return 1;
	memcpy(code, loop_code, sizeof(loop_code));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return 1;
	spin = (void (*)(uint64_t))(uintptr_t)code;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	write_map(mode, path, (uintptr_t)code);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		spin(1000000);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!strcmp(mode, "late") && now.tv_sec - start.tv_sec >= 1 && access(path, F_OK))
			write_map("good", path, (uintptr_t)code);
	} while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 <
	         seconds);
	unlink(path);
	snprintf(path, sizeof(path), "/tmp/jit-spin-%d.map", (int)getpid());
	unlink(path); /* the link mode's */
	return 0;
}
