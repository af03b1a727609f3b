// SPDX-License-Identifier: Apache-2.0
/*
 * A hostile fake HotSpot VM, for tests/integration/test_jvm.py: built with
 * -DFAKE_JVM_LIB as a shared library named libjvm.so, it exports the
 * variables HotSpot describes itself with (gHotSpotVMStructs and its entry
 * layout, gHotSpotVMTypes, gHotSpotVMIntConstants), which ember reads from
 * the process; built without, the program that links it:
 *
 *   fake_jvm MODE SECONDS
 *
 * sets the variables for MODE, then burns CPU in fake_spin until SECONDS
 * have passed. Modes: garbage (every variable and table random), oversized
 * (strides and offsets past any entry), endless (well-formed entries that
 * never end), incomplete (a well-formed description of a few classes only).
 * ember must refuse each (a log line, no row), keep the native frames, never
 * crash or stall.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef FAKE_JVM_LIB

#define EXPORT __attribute__((visibility("default")))
EXPORT uint64_t gHotSpotVMStructs, gHotSpotVMStructEntryArrayStride,
    gHotSpotVMStructEntryTypeNameOffset, gHotSpotVMStructEntryFieldNameOffset,
    gHotSpotVMStructEntryOffsetOffset, gHotSpotVMStructEntryAddressOffset;
EXPORT uint64_t gHotSpotVMTypes, gHotSpotVMTypeEntryArrayStride,
    gHotSpotVMTypeEntryTypeNameOffset, gHotSpotVMTypeEntrySizeOffset;
EXPORT uint64_t gHotSpotVMIntConstants, gHotSpotVMIntConstantEntryArrayStride,
    gHotSpotVMIntConstantEntryNameOffset, gHotSpotVMIntConstantEntryValueOffset;

#define ENTRIES (1 << 15) /* past ember's cap of 16,384 entries a table */
static uint64_t table[ENTRIES * 6];
static uint64_t types[64 * 5], ints[8 * 2];

static uint64_t rnd(void)
{
	static uint64_t s = 88172645463325252ull;

	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

/* JDK 17's entry layouts: structs 48 bytes, types 40, int constants 16. */
static void layout(void)
{
	gHotSpotVMStructEntryArrayStride = 48;
	gHotSpotVMStructEntryTypeNameOffset = 0;
	gHotSpotVMStructEntryFieldNameOffset = 8;
	gHotSpotVMStructEntryOffsetOffset = 32;
	gHotSpotVMStructEntryAddressOffset = 40;
	gHotSpotVMTypeEntryArrayStride = 40;
	gHotSpotVMTypeEntryTypeNameOffset = 0;
	gHotSpotVMTypeEntrySizeOffset = 32;
	gHotSpotVMIntConstantEntryArrayStride = 16;
	gHotSpotVMIntConstantEntryNameOffset = 0;
	gHotSpotVMIntConstantEntryValueOffset = 8;
	gHotSpotVMStructs = (uint64_t)table;
	gHotSpotVMTypes = (uint64_t)types;
	gHotSpotVMIntConstants = (uint64_t)ints;
}

/* A struct entry: type.field at offset. */
static void put_struct(size_t i, const char *type, const char *field, uint64_t offset)
{
	table[6 * i] = (uint64_t)type;
	table[6 * i + 1] = (uint64_t)field;
	table[6 * i + 4] = offset;
}

EXPORT void fake_jvm_setup(const char *mode)
{
	uint64_t *vars[] = {&gHotSpotVMStructs,
	                    &gHotSpotVMStructEntryArrayStride,
	                    &gHotSpotVMStructEntryTypeNameOffset,
	                    &gHotSpotVMStructEntryFieldNameOffset,
	                    &gHotSpotVMStructEntryOffsetOffset,
	                    &gHotSpotVMStructEntryAddressOffset,
	                    &gHotSpotVMTypes,
	                    &gHotSpotVMTypeEntryArrayStride,
	                    &gHotSpotVMTypeEntryTypeNameOffset,
	                    &gHotSpotVMTypeEntrySizeOffset,
	                    &gHotSpotVMIntConstants,
	                    &gHotSpotVMIntConstantEntryArrayStride,
	                    &gHotSpotVMIntConstantEntryNameOffset,
	                    &gHotSpotVMIntConstantEntryValueOffset};

	if (!strcmp(mode, "garbage")) {
		for (size_t i = 0; i < sizeof(table) / 8; i++)
			table[i] = rnd();
		for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
			*vars[i] = i % 6 ? rnd() % 64 : (uint64_t)table + (rnd() % 4096) * 8;
	} else if (!strcmp(mode, "oversized")) {
		layout();
		gHotSpotVMStructEntryArrayStride = 1ull << 40;
		gHotSpotVMTypeEntrySizeOffset = 1ull << 20;
	} else if (!strcmp(mode, "endless")) {
		layout();
		for (size_t i = 0; i < ENTRIES; i++)
			put_struct(i, "Nothing", "_at_all", 8);
	} else {
		/* incomplete: what a VM describing CodeBlob alone would say */
		layout();
		put_struct(0, "CodeBlob", "_name", 96);
		put_struct(1, "CodeBlob", "_frame_size", 28);
		types[0] = (uint64_t) "CodeBlob";
		types[4] = 104;
	}
}

#else

void fake_jvm_setup(const char *mode);

static volatile unsigned long sink;

__attribute__((noinline)) void fake_spin(double seconds)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i * i;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fake_jvm garbage|oversized|endless|incomplete SECONDS\n");
		return 2;
	}
	fake_jvm_setup(argv[1]);
	fake_spin(atof(argv[2]));
	return 0;
}

#endif
