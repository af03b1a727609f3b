// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/memory/counting_malloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolizer/memory/mem_owners.h"

#ifdef EMBER_SANITIZERS
/*
 * A sanitized build: AddressSanitizer's allocator, under the names its runtime gives the
 * functions behind its own (weak) malloc and the rest, so that each block, header included,
 * is still checked: redzones around it, freed blocks held back to catch their use, double
 * frees. (glibc's blocks would be invisible to it.)
 */
#include <sanitizer/allocator_interface.h>
#define ALLOCATOR(name) __interceptor_##name
#else
/* glibc's own allocator, under the names it exports for this purpose. */
#define ALLOCATOR(name) __libc_##name
#endif
extern void *ALLOCATOR(malloc)(size_t size);
extern void ALLOCATOR(free)(void *ptr);
extern void *ALLOCATOR(calloc)(size_t n, size_t size);
extern void *ALLOCATOR(realloc)(void *ptr, size_t size);
extern void *ALLOCATOR(memalign)(size_t alignment, size_t size);

#define MAGIC      0xe3b7u
#define HDR        16u /* keeps glibc's 16-byte alignment */
#define CHUNK_HDR  8u  /* glibc's size field before each chunk */
#define PAGE_ALIGN 4096u

struct header {
	uint64_t charged; /* bytes charged to the owner */
	uint32_t offset;  /* from glibc's block to the caller's pointer */
	uint16_t magic;
	uint8_t owner;
	uint8_t reserved;
};

_Static_assert(sizeof(struct header) == HDR, "the header keeps blocks 16-byte aligned");

/* glibc's malloc_usable_size, found once the dynamic linker can tell us (before: estimated). */
static size_t (*libc_usable)(void *);

static struct header *header_of(void *ptr)
{
	struct header *h = (struct header *)((char *)ptr - HDR);

	if (h->magic != MAGIC) {
		static const char msg[] =
		    "ember-symbolizer: free() of a block the allocator did not "
		    "give out: the heap is corrupt\n";

		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
			abort();
		abort();
	}
	return h;
}

static uint64_t cost(void *base, size_t asked)
{
	if (libc_usable)
		return libc_usable(base) + CHUNK_HDR;
	/* glibc's chunk size: asked + its size field, rounded to 16, at least 32. */
	return asked + CHUNK_HDR + 15 < 32 ? 32 : (asked + CHUNK_HDR + 15) & ~(uint64_t)15;
}

/* Writes the header of a block glibc gave out at base and charges its owner. */
static void *hand_out(void *base, size_t asked, uint32_t offset, unsigned int owner)
{
	struct header *h;

	if (!base)
		return NULL;
	h = (struct header *)((char *)base + offset - HDR);
	h->charged = cost(base, asked);
	h->offset = offset;
	h->magic = MAGIC;
	h->owner = (uint8_t)owner;
	ember_mem_account(owner, (long)h->charged, 1);
	return (char *)base + offset;
}

static bool too_big(size_t size, size_t extra)
{
	return size > SIZE_MAX - extra;
}

void *malloc(size_t size)
{
	if (too_big(size, HDR)) {
		errno = ENOMEM;
		return NULL;
	}
	return hand_out(ALLOCATOR(malloc)(size + HDR), size + HDR, HDR, ember_mem_tag);
}

void free(void *ptr)
{
	struct header *h;

	if (!ptr)
		return;
	h = header_of(ptr);
	ember_mem_account(h->owner, -(long)h->charged, -1);
	h->magic = 0;
	ALLOCATOR(free)((char *)ptr - h->offset);
}

void *calloc(size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total) || too_big(total, HDR)) {
		errno = ENOMEM;
		return NULL;
	}
	return hand_out(ALLOCATOR(calloc)(1, total + HDR), total + HDR, HDR, ember_mem_tag);
}

static size_t user_size(void *ptr, const struct header *h)
{
	char *base = (char *)ptr - h->offset;

	return libc_usable ? libc_usable(base) - h->offset : h->charged - CHUNK_HDR - h->offset;
}

void *realloc(void *ptr, size_t size)
{
	struct header *h;
	unsigned int owner;
	uint64_t charged;
	void *base, *moved;

	if (!ptr)
		return malloc(size);
	if (!size) {
		free(ptr);
		return NULL;
	}
	h = header_of(ptr);
	if (h->offset != HDR || too_big(size, HDR)) {
		/* An aligned block: glibc would not keep its alignment. */
		size_t old = user_size(ptr, h);

		moved = too_big(size, HDR) ? NULL : malloc(size);
		if (moved) {
			memcpy(moved, ptr, old < size ? old : size);
			free(ptr);
		} else {
			errno = ENOMEM;
		}
		return moved;
	}
	/* The block keeps its owner: whoever grows it, it is the same data. */
	owner = h->owner;
	charged = h->charged;
	base = ALLOCATOR(realloc)((char *)ptr - HDR, size + HDR);
	if (!base)
		return NULL; /* the old block is untouched, header included */
	ember_mem_account(owner, -(long)charged, -1);
	return hand_out(base, size + HDR, HDR, owner);
}

void *reallocarray(void *ptr, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(ptr, total);
}

static void *aligned(size_t alignment, size_t size)
{
	if (alignment <= HDR)
		return malloc(size);
	/* The header sits in the alignment's padding before the caller's block. */
	if (alignment > UINT32_MAX || too_big(size, alignment)) {
		errno = ENOMEM;
		return NULL;
	}
	return hand_out(ALLOCATOR(memalign)(alignment, size + alignment), size + alignment,
	                (uint32_t)alignment, ember_mem_tag);
}

static bool power_of_two(size_t v)
{
	return v && !(v & (v - 1));
}

void *memalign(size_t alignment, size_t size)
{
	if (!power_of_two(alignment)) {
		errno = EINVAL;
		return NULL;
	}
	return aligned(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size)
{
	return memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size)
{
	void *p;

	if (!power_of_two(alignment) || alignment % sizeof(void *))
		return EINVAL;
	p = aligned(alignment, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *valloc(size_t size)
{
	return aligned(PAGE_ALIGN, size);
}

void *pvalloc(size_t size)
{
	if (too_big(size, PAGE_ALIGN)) {
		errno = ENOMEM;
		return NULL;
	}
	return aligned(PAGE_ALIGN, (size + PAGE_ALIGN - 1) & ~(size_t)(PAGE_ALIGN - 1));
}

size_t malloc_usable_size(void *ptr)
{
	return ptr ? user_size(ptr, header_of(ptr)) : 0;
}

static void give(void *ptr, enum ember_mem_owner to)
{
	struct header *h = header_of(ptr);

	ember_mem_account(h->owner, -(long)h->charged, -1);
	h->owner = (uint8_t)to;
	ember_mem_account(to, (long)h->charged, 1);
}

#ifdef EMBER_SANITIZERS
/* What ASan handed out for the block: the size asked (its chunks have no slack to count). */
static size_t sanitizer_usable(void *ptr)
{
	return __sanitizer_get_allocated_size(ptr);
}

/*
 * ASan's own versions of these allocate from its allocator directly (not through malloc),
 * and the caller frees the block: through this file's free, which would find no header.
 * They allocate here instead; ASan still checks what they read (memcpy, its realpath).
 */
extern char *__interceptor_realpath(const char *path, char *resolved);

static char *copy_string(const char *s, size_t n)
{
	char *out = malloc(n + 1);

	if (out) {
		memcpy(out, s, n);
		out[n] = '\0';
	}
	return out;
}

char *strdup(const char *s)
{
	return copy_string(s, strlen(s));
}

char *__strdup(const char *s)
{
	return strdup(s);
}

char *strndup(const char *s, size_t n)
{
	return copy_string(s, strnlen(s, n));
}

char *__strndup(const char *s, size_t n)
{
	return strndup(s, n);
}

char *realpath(const char *restrict path, char *restrict resolved)
{
	char *buf = resolved ? resolved : malloc(PATH_MAX);
	char *r = buf ? __interceptor_realpath(path, buf) : NULL;

	if (!r && !resolved)
		free(buf);
	return r;
}
#endif

__attribute__((constructor)) static void counting_malloc_start(void)
{
#ifdef EMBER_SANITIZERS
	libc_usable = sanitizer_usable;
#else
	libc_usable = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
#endif
	ember_mem_set_give(give);
}
