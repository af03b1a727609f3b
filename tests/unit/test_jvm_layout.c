// SPDX-License-Identifier: Apache-2.0
/*
 * A running HotSpot VM read as the JVM reader reads it (jvm_layout.c), for
 * every JDK under /usr/lib/jvm (Debian 12's OpenJDK 17 at least): its
 * version against the JDK's own `release` file, its code heaps against the
 * code cache size and segmentation the VM was started with and against
 * /proc/PID/maps, and the offsets against the class sizes the VM gives.
 * Then the refusals: a libjvm that does not describe itself, and a VM whose
 * tables point nowhere.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "tests/unit/live_jvm.h"

static const char idle_java[] = "public class Idle {\n"
				"  public static void main(String[] a) throws Exception {\n"
				"    System.out.println(\"ready\");\n"
				"    Thread.sleep(60000);\n"
				"  }\n"
				"}\n";

static void start(struct live_jvm *j, const char *jdk, const char *opts)
{
	live_jvm_start(j, jdk, "Idle", idle_java, false, opts);
	ck_assert_str_eq(j->line, "ready\n");
}

/* The value of KEY="..." in the JDK's release file. */
static void release_value(const char *jdk, const char *key, char *out, size_t len)
{
	char path[PATH_MAX], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/release", jdk);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	out[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == '=')
			sscanf(line + strlen(key) + 1, "\"%[^\"]\"", out);
	fclose(f);
	ck_assert_msg(out[0], "%s: no %s", path, key);
	(void)len;
}

/* Whether [low, high) lies in the process's mappings (one or several adjacent). */
static bool mapped(pid_t pid, uint64_t low, uint64_t high)
{
	char path[64], line[1024];
	uint64_t covered = low;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "r");
	ck_assert_ptr_nonnull(maps);
	while (covered < high && fgets(line, sizeof(line), maps)) {
		unsigned long long start, end;

		if (sscanf(line, "%llx-%llx", &start, &end) == 2 && start <= covered &&
		    covered < end)
			covered = end;
	}
	fclose(maps);
	return covered >= high;
}

static void check_offsets(const struct ember_jvm_vm *vm)
{
	const uint64_t in_blob[] = {vm->blob_name, vm->blob_size, vm->blob_frame_complete,
	                            vm->blob_frame_size, vm->blob_data_offset};
	const uint64_t in_nm[] = {vm->nm_compile_id, vm->nm_method, vm->nm_orig_pc_offset,
	                          vm->nm_scopes_pcs_offset, vm->nm_scopes_data};
	const uint64_t in_cm[] = {vm->cm_constants, vm->cm_flags, vm->cm_code_size,
	                          vm->cm_name_index, vm->cm_signature_index};

	for (size_t i = 0; i < 5; i++) {
		ck_assert_uint_lt(in_blob[i], vm->blob_size_of);
		ck_assert_uint_lt(in_nm[i], vm->nm_size_of);
		ck_assert_uint_lt(in_cm[i], vm->cm_size_of);
	}
	/* An nmethod is a CodeBlob: its own fields come after the blob's. */
	ck_assert_uint_ge(vm->nm_compile_id, vm->blob_size_of);
	ck_assert_uint_lt(vm->cp_pool_holder, vm->cp_size_of);
	ck_assert_uint_lt(vm->pc_scope_decode_offset, vm->pc_size_of);
	ck_assert_int_lt(vm->frame_sender_sp, 0);
}

/* One JDK, started twice: a 300 MiB code cache in three heaps, then 48 MiB in one. */
static void check_jdk(const char *jdk)
{
	static const struct {
		const char *opt;
		uint32_t heaps;
		uint64_t bytes;
	} runs[] = {{"-XX:+SegmentedCodeCache -XX:ReservedCodeCacheSize=300m", 3, 300ull << 20},
	            {"-XX:-SegmentedCodeCache -XX:ReservedCodeCacheSize=48m", 1, 48ull << 20}};
	char version[64], runtime[128], why[EMBER_JVM_WHY];

	release_value(jdk, "JAVA_VERSION", version, sizeof(version));
	release_value(jdk, "JAVA_RUNTIME_VERSION", runtime, sizeof(runtime));
	for (size_t r = 0; r < 2; r++) {
		struct live_jvm j;
		struct ember_jvm_vm vm;
		uint64_t total = 0;
		int err;

		start(&j, jdk, runs[r].opt);
		live_jvm_find_libjvm(&j);
		err = live_jvm_read_vm(&j, &vm, why);
		ck_assert_msg(!err, "%s: %d %s", jdk, err, why);
		ck_assert_uint_eq(vm.version[0], (unsigned int)atoi(version));
		ck_assert_msg(!strncmp(runtime, vm.release, strlen(vm.release)) && vm.release[0],
		              "%s: release %s, the JDK says %s", jdk, vm.release, runtime);
		ck_assert_uint_eq(vm.nheaps, runs[r].heaps);
		for (uint32_t i = 0; i < vm.nheaps; i++) {
			ck_assert(mapped(j.pid, vm.heaps[i].low, vm.heaps[i].high));
			ck_assert(mapped(j.pid, vm.heaps[i].segmap, vm.heaps[i].segmap + 1));
			total += vm.heaps[i].high - vm.heaps[i].low;
		}
		ck_assert_msg(total == runs[r].bytes, "%s %s: heaps of %llu bytes", jdk,
		              runs[r].opt, (unsigned long long)total);
		check_offsets(&vm);
		live_jvm_stop(&j);
	}
}

START_TEST(debian_openjdk_17)
{
	if (access(DEBIAN_JDK "/bin/java", X_OK))
		EMBER_SKIP("%s is not installed (scripts/install-deps.sh installs "
		           "openjdk-17-jdk-headless)",
		           DEBIAN_JDK);
	check_jdk(DEBIAN_JDK);
}
END_TEST

/* Every other JDK on the machine (Temurin 25 on some), once per real directory. */
START_TEST(other_jdks)
{
	live_jvm_other_jdks("java", check_jdk);
}
END_TEST

/* The tables' base points nowhere in the process: a fault, never a crash. */
START_TEST(tables_that_point_nowhere)
{
	struct live_jvm j;
	struct ember_jvm_vm vm;
	char why[EMBER_JVM_WHY];

	if (access(DEBIAN_JDK "/bin/java", X_OK))
		EMBER_SKIP("%s is not installed", DEBIAN_JDK);
	start(&j, DEBIAN_JDK, "-Xint");
	live_jvm_find_libjvm(&j);
	ck_assert_int_eq(live_jvm_read_vm(&j, &vm, why), 0);
	j.elf.structs.base = 0x1000 - j.bias; /* gHotSpotVMStructs at 0x1000: unmapped */
	ck_assert_int_eq(ember_jvm_vm_read(&j.elf, j.bias, live_jvm_read, &j, &vm, why), -EFAULT);
	j.elf.kind = EMBER_JVM_ELF_UNSUPPORTED;
	ck_assert_int_eq(ember_jvm_vm_read(&j.elf, j.bias, live_jvm_read, &j, &vm, why), -EINVAL);
	live_jvm_stop(&j);
}
END_TEST

static Suite *jvm_layout_suite(void)
{
	Suite *s = suite_create("jvm_layout");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, debian_openjdk_17);
	tcase_add_test(tc, other_jdks);
	tcase_add_test(tc, tables_that_point_nowhere);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(jvm_layout_suite)
