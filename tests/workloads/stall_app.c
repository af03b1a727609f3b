// SPDX-License-Identifier: Apache-2.0
/*
 * A process running code from a file system that stops answering, for
 * test_stall.py.
 *
 *   stall_app LIB SECONDS [LATE]
 *
 * dlopens LIB (stall_lib.c, served by the test's FUSE file system), makes
 * its code resident, prints "ready", then spins until SECONDS have passed:
 * about half its CPU time in local_work() (this executable, on a local file
 * system), half in LIB's remote_work().
 *
 * LATE is another copy of LIB on the same file system: opened at the start
 * (its code read into the page cache then), mapped only on SIGUSR2, from that
 * descriptor (no open, no read of the file system): from then on the second
 * half runs LATE's remote_spin(). A profiler that runs all along meets LATE's
 * file first once the test has made the file system stall.
 *
 * SIGUSR1 starts the lock case: one thread reads this process's own memory
 * at a page of LIB nobody has touched, through /proc/self/mem (the kernel
 * reads the page from the file system while it holds the process's
 * memory-map lock, and the file system does not answer), and another thread
 * calls mmap in a loop (it waits for that lock, and so does everything that
 * reads the process's map after it: /proc/PID/maps on older kernels,
 * /proc/PID/map_files, /proc/PID/mem). The spinning thread needs no lock and
 * keeps running.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t lock_case, late_now;
static const volatile char *cold_page;

__attribute__((noinline)) void local_work(long n)
{
	for (long i = 0; i < n; i++)
		sink += (unsigned long)i ^ (sink >> 3);
}

/* Touches every page of LIB's executable segments: they stay in the page cache. */
static int touch_code(struct dl_phdr_info *info, size_t size, void *lib)
{
	(void)size;
	if (!strstr(info->dlpi_name, (const char *)lib))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		for (uintptr_t a = (info->dlpi_addr + ph->p_vaddr) & ~4095ul;
		     a < info->dlpi_addr + ph->p_vaddr + ph->p_memsz; a += 4096)
			sink += *(volatile const char *)a;
	}
	return 1;
}

static void *read_own_memory(void *arg)
{
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	char c;

	(void)arg;
	/* Blocks in the file system with the memory-map lock held. */
	if (fd >= 0 && pread(fd, &c, 1, (off_t)(uintptr_t)cold_page) == 1)
		sink += (unsigned char)c;
	return NULL;
}

static void *map_in_a_loop(void *arg)
{
	(void)arg;
	usleep(200000); /* the reader holds the lock by then */
	for (;;) {
		void *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m != MAP_FAILED)
			munmap(m, 4096);
		usleep(1000);
	}
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	lock_case = 1;
}

static void on_usr2(int sig)
{
	(void)sig;
	late_now = 1;
}

/* LIB's executable segment and where remote_spin is in the file, for LATE's copy. */
struct late {
	int fd;
	off_t map_off;
	size_t map_len;
	off_t spin_off;
	uintptr_t spin_addr;
};

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct late *l = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || l->spin_addr < start ||
		    l->spin_addr >= start + ph->p_filesz)
			continue;
		l->spin_off = (off_t)(l->spin_addr - start + ph->p_offset);
		l->map_off = (off_t)(ph->p_offset & ~4095ul);
		l->map_len = (size_t)(ph->p_offset + ph->p_filesz - (uint64_t)l->map_off);
		return 1;
	}
	return 0;
}

/* Opens LATE and reads its code into the page cache: mapping it later needs nothing more. */
static int late_open(struct late *l, void *lib, const char *path)
{
	char buf[4096];

	l->spin_addr = (uintptr_t)dlsym(lib, "remote_spin");
	l->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!l->spin_addr || l->fd < 0 || !dl_iterate_phdr(find_text, l))
		return -1;
	for (size_t done = 0; done < l->map_len; done += sizeof(buf))
		if (pread(l->fd, buf, sizeof(buf), l->map_off + (off_t)done) <= 0)
			return -1;
	return 0;
}

static unsigned long (*late_map(const struct late *l))(long)
{
	char *m = mmap(NULL, l->map_len, PROT_READ | PROT_EXEC, MAP_PRIVATE, l->fd, l->map_off);

	if (m == MAP_FAILED)
		return NULL;
	return (unsigned long (*)(long))(m + (l->spin_off - l->map_off));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	void (*remote_work)(long);
	unsigned long (*late_spin)(long) = NULL;
	struct late late = {.fd = -1};
	const volatile char *(*cold)(void);
	const char *base;
	double end;
	void *lib;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: stall_app LIB SECONDS [LATE]\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib || !(remote_work = (void (*)(long))dlsym(lib, "remote_work")) ||
	    !(cold = (const volatile char *(*)(void))dlsym(lib, "stall_cold_page"))) {
		fprintf(stderr, "stall_app: %s\n", dlerror());
		return 1;
	}
	cold_page = cold();
	base = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
	dl_iterate_phdr(touch_code, (void *)base);
	if (argc == 4 && late_open(&late, lib, argv[3])) {
		fprintf(stderr, "stall_app: cannot prepare %s\n", argv[3]);
		return 1;
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("ready\n");
	fflush(stdout);
	end = now() + atof(argv[2]);
	while (now() < end) {
		pthread_t t;

		/* Both threads exist (their stacks are mapped) before the lock is taken. */
		if (lock_case == 1) {
			lock_case = 2;
			pthread_create(&t, NULL, map_in_a_loop, NULL);
			pthread_create(&t, NULL, read_own_memory, NULL);
		}
		local_work(2000000);
		if (late_now && !late_spin && !(late_spin = late_map(&late))) {
			fprintf(stderr, "stall_app: cannot map %s\n", argv[3]);
			return 1;
		}
		if (late_spin)
			sink += late_spin(2000000);
		else
			remote_work(2000000);
	}
	return 0;
}
