// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/sigbus_guard.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static _Atomic uint64_t fault_count;
static _Atomic uintptr_t fault_pages[EMBER_SIGBUS_GUARD_PAGES];

static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
	uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t page = (uintptr_t)si->si_addr & ~(page_size - 1);
	uint64_t n;

	(void)uctx;
	/* A private, read-only page of zeros: what was there is gone from the file. */
	if (si->si_code != BUS_ADRERR || !page ||
	    mmap((void *)page, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
	         0) == MAP_FAILED) {
		/* Not a file's page: nothing to mend. rt_sigaction is not allowed in
		 * the sandbox, so the handler cannot step aside for the default. */
		static const char msg[] =
		    "ember-symbolizer: SIGBUS not from a mapped file's page\n";

		(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
		_exit(128 + sig);
	}
	n = atomic_load(&fault_count);
	atomic_store(&fault_pages[n % EMBER_SIGBUS_GUARD_PAGES], page);
	atomic_store(&fault_count, n + 1);
}

int ember_sigbus_guard_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL) ? -errno : 0;
}

uint64_t ember_sigbus_guard_count(void)
{
	return atomic_load(&fault_count);
}

size_t ember_sigbus_guard_faults(uint64_t *seen, uintptr_t *pages, size_t n)
{
	uint64_t now = atomic_load(&fault_count), from = *seen;
	size_t got = 0;

	*seen = now;
	if (now - from > EMBER_SIGBUS_GUARD_PAGES)
		return SIZE_MAX;
	for (uint64_t i = from; i < now && got < n; i++)
		pages[got++] = atomic_load(&fault_pages[i % EMBER_SIGBUS_GUARD_PAGES]);
	return got;
}
