/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading V8's heap in another process, as the layout (v8_elf.h) describes
 * it: tagged values, objects' instance types, Smis, FixedArrays and strings.
 * Every read goes through the caller's read function; every length, offset
 * and pointer read is hostile and checked before use.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_V8_HEAP_H
#define EMBER_SYMBOLIZER_INTERP_V8_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/v8_elf.h"

/* Reads len bytes at addr of the process: 0, or a negative errno. */
typedef int (*ember_v8_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

#define EMBER_V8_USER_LIMIT   (1ull << 47) /* no object of a user process lies higher */
#define EMBER_V8_MAX_STRING   4096         /* bytes of a name or a path kept */
#define EMBER_V8_STRING_DEPTH 32           /* cons, thin and sliced strings followed */

/* A process's heap as the readers see it. */
struct ember_v8_heap {
	const struct ember_v8_layout *l;
	ember_v8_read_fn read;
	void *ctx;
};

static inline bool ember_v8_is_object(uint64_t tagged)
{
	return (tagged & 3) == 1 && tagged < EMBER_V8_USER_LIMIT && tagged > 0x10000;
}

static inline bool ember_v8_is_smi(uint64_t tagged)
{
	return !(tagged & 1);
}

static inline int32_t ember_v8_smi(uint64_t tagged)
{
	return (int32_t)(tagged >> 32);
}

/* The word (a tagged field) at off of the object at tagged: 0 or a negative errno. */
int ember_v8_field(const struct ember_v8_heap *h, uint64_t tagged, int32_t off, uint64_t *out);

/* The instance type of the object at tagged: 0, or -EINVAL (not an object), -EFAULT. */
int ember_v8_type(const struct ember_v8_heap *h, uint64_t tagged, uint32_t *type);

/* The length of the array at tagged (any of V8's array kinds: its length a Smi after its
 * map), at most max: 0, or -EINVAL (a length that is no Smi or above max), -EFAULT. */
int ember_v8_length(const struct ember_v8_heap *h, uint64_t tagged, uint32_t max, uint32_t *len);

/* The length of the FixedArray (or ByteArray) at tagged, of one of the two types: 0, or
 * -EINVAL for another object or a length above max. */
int ember_v8_array_length(const struct ember_v8_heap *h, uint64_t tagged, uint32_t type1,
                          uint32_t type2, uint32_t max, uint32_t *len);

/* The string at tagged as UTF-8 (at most size - 1 bytes, NUL-terminated; longer ones are
 * cut at a character): 0, or -EINVAL when it is no string, -EFAULT, -ELOOP. */
int ember_v8_string(const struct ember_v8_heap *h, uint64_t tagged, char *out, size_t size);

/* The string at tagged's characters from first on, at most max of them, as UTF-16 code
 * units (one-byte strings widened) into out: how many, or a negative errno. */
int ember_v8_string_units(const struct ember_v8_heap *h, uint64_t tagged, uint32_t first,
                          uint32_t max, uint16_t *out);

/* Whether the string at tagged is a string at all (its type below the first non-string). */
bool ember_v8_is_string_type(const struct ember_v8_layout *l, uint32_t type);

#endif
