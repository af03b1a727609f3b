// SPDX-License-Identifier: Apache-2.0
/*
 * What ember reads from a HotSpot VM's file: files that are not ELF or hold
 * no VM, and the whole of Debian 12's OpenJDK 17 libjvm.so (and any other
 * JDK's under /usr/lib/jvm), whose variables must be where binutils' nm
 * finds them.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/interp/jvm_elf.h"

#define DEBIAN_LIBJVM "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
#define DEBIAN_LIBC   "/lib/x86_64-linux-gnu/libc.so.6"

static int read_path(const char *path, struct ember_jvm_elf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = ember_jvm_elf_read(fd, out);
	close(fd);
	return err;
}

START_TEST(files_without_a_vm)
{
	static const uint8_t junk[64] = {0x7f, 'E', 'L', 'F'};
	struct ember_jvm_elf out;

	ck_assert_int_lt(ember_jvm_elf_read_mem(junk, sizeof(junk), &out), 0);
	ck_assert_uint_eq(out.kind, EMBER_JVM_ELF_OTHER);
	ck_assert_int_eq(read_path(DEBIAN_LIBC, &out), 0);
	ck_assert_uint_eq(out.kind, EMBER_JVM_ELF_OTHER);
}
END_TEST

/* nm -D's values of the n symbols names in path into v (0: none). */
static void nm_values(const char *path, const char *const *names, size_t n, uint64_t *v)
{
	char cmd[512], line[512];
	FILE *p;

	memset(v, 0, n * sizeof(*v));
	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s'", path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long value;
		char type, sym[256];

		if (sscanf(line, "%llx %c %255[^@\n]", &value, &type, sym) != 3)
			continue;
		for (size_t i = 0; i < n; i++)
			if (names[i] && !strcmp(sym, names[i]))
				v[i] = value;
	}
	ck_assert_int_eq(pclose(p), 0);
}

static void check_libjvm(const char *path)
{
	static const char *const vars[3][6] = {
	    {"gHotSpotVMStructs", "gHotSpotVMStructEntryArrayStride",
	     "gHotSpotVMStructEntryTypeNameOffset", "gHotSpotVMStructEntryFieldNameOffset",
	     "gHotSpotVMStructEntryOffsetOffset", "gHotSpotVMStructEntryAddressOffset"},
	    {"gHotSpotVMTypes", "gHotSpotVMTypeEntryArrayStride",
	     "gHotSpotVMTypeEntryTypeNameOffset", NULL, "gHotSpotVMTypeEntrySizeOffset", NULL},
	    {"gHotSpotVMIntConstants", "gHotSpotVMIntConstantEntryArrayStride",
	     "gHotSpotVMIntConstantEntryNameOffset", NULL, "gHotSpotVMIntConstantEntryValueOffset",
	     NULL},
	};
	struct ember_jvm_elf out;
	uint64_t nm[18];

	ck_assert_int_eq(read_path(path, &out), 0);
	ck_assert_msg(out.kind == EMBER_JVM_ELF_HOTSPOT, "%s: %s", path, out.why ? out.why : "");
	ck_assert_uint_ge(out.nsegs, 2);
	nm_values(path, &vars[0][0], 18, nm);
	for (int t = 0; t < 3; t++) {
		const struct ember_jvm_table_vars *v = t == 0   ? &out.structs
		                                       : t == 1 ? &out.types
		                                                : &out.ints;
		const uint64_t got[6] = {v->base,       v->stride, v->type_name,
		                         v->field_name, v->value,  v->address};

		for (int i = 0; i < 6; i++) {
			ck_assert_msg(got[i] == nm[t * 6 + i], "%s: %s at %#llx, nm says %#llx",
			              path, vars[t][i] ? vars[t][i] : "(none)",
			              (unsigned long long)got[i],
			              (unsigned long long)nm[t * 6 + i]);
			ck_assert(!vars[t][i] || got[i]);
		}
	}
	/* In a process: each address moved by the bias, a missing one still 0. */
	struct ember_jvm_table_vars at = ember_jvm_vars_at(&out.types, 0x7f0000000000);
	ck_assert_uint_eq(at.base, out.types.base + 0x7f0000000000);
	ck_assert_uint_eq(at.field_name, 0);
}

START_TEST(debian_openjdk_17)
{
	if (access(DEBIAN_LIBJVM, R_OK))
		EMBER_SKIP("%s is not installed (scripts/install-deps.sh installs "
		           "openjdk-17-jdk-headless)",
		           DEBIAN_LIBJVM);
	check_libjvm(DEBIAN_LIBJVM);
}
END_TEST

/* Every other JDK on the machine (a Temurin 25 on some). */
START_TEST(other_jdks)
{
	DIR *d = opendir("/usr/lib/jvm");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[512];

		snprintf(path, sizeof(path), "/usr/lib/jvm/%s/lib/server/libjvm.so", e->d_name);
		if (e->d_name[0] != '.' && !access(path, R_OK))
			check_libjvm(path);
	}
	if (d)
		closedir(d);
}
END_TEST

static Suite *jvm_elf_suite(void)
{
	Suite *s = suite_create("jvm_elf");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, files_without_a_vm);
	tcase_add_test(tc, debian_openjdk_17);
	tcase_add_test(tc, other_jdks);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(jvm_elf_suite)
