// SPDX-License-Identifier: Apache-2.0
/*
 * Java methods read from a live HotSpot VM (symbolizer/interp/jvm_method.c),
 * on every JDK under /usr/lib/jvm (Debian 12's OpenJDK 17 at least),
 * against the JDK's own tools: every compiled method `jcmd PID
 * Compiler.codelist` lists (its compile id, its code's start, its class,
 * name and signature) read from its nmethod, and a method's lines against
 * `javap -l`'s line number table for each of its bytecode indexes.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "shared/bytes.h"
#include "symbolizer/interp/jvm_method.h"
#include "tests/unit/live_jvm.h"

/* spin() runs hot enough to be compiled by C1 and C2 before "ready". */
static const char hot_java[] = "public class Hot {\n"
			       "  static long spin(int n) {\n"
			       "    long s = 0;\n"
			       "    for (int i = 0; i < n; i++) {\n"
			       "      s += i % 7;\n"
			       "    }\n"
			       "    return s;\n"
			       "  }\n"
			       "  public static void main(String[] a) throws Exception {\n"
			       "    long t = 0;\n"
			       "    for (int k = 0; k < 20000; k++)\n"
			       "      t += spin(1000);\n"
			       "    System.out.println(\"ready \" + t);\n"
			       "    Thread.sleep(60000);\n"
			       "  }\n"
			       "}\n";

static uint64_t read_u(struct live_jvm *j, uint64_t addr, unsigned int width)
{
	uint8_t b[8];

	ck_assert_int_eq(live_jvm_read(j, addr, b, width), 0);
	return ember_le_in(b, width, 0, width);
}

/* The start of a blob's code, as the VM describes its blobs. */
static uint64_t code_begin(struct live_jvm *j, const struct ember_jvm_vm *vm, uint64_t blob)
{
	if (vm->blob_code_offset != EMBER_JVM_ABSENT)
		return blob + (uint64_t)(int64_t)(int32_t)read_u(j, blob + vm->blob_code_offset, 4);
	return read_u(j, blob + vm->blob_code_begin, 8);
}

/* Each method jcmd lists: its nmethod read as the reader reads it. Returns the Method of
 * Hot.spin. */
static uint64_t check_codelist(struct live_jvm *j, const char *jdk, const struct ember_jvm_vm *vm)
{
	char cmd[PATH_MAX + 64], line[2048];
	unsigned int listed = 0, named = 0;
	uint64_t spin = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s/bin/jcmd' %d Compiler.codelist", jdk, (int)j->pid);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long blob, begin, end;
		unsigned int id, level, state;
		struct ember_jvm_method m;
		char name[1024], mine[2048];

		if (sscanf(line, "%u %u %u %1023s [%llx, %llx - %llx]", &id, &level, &state, name,
		           &blob, &begin, &end) != 7)
			continue;
		listed++;
		ck_assert_uint_eq(read_u(j, blob + vm->nm_compile_id, 4), id);
		ck_assert_uint_eq(code_begin(j, vm, blob), begin);
		ck_assert_int_eq(ember_jvm_method_read(vm, live_jvm_read, j,
		                                       read_u(j, blob + vm->nm_method, 8), &m),
		                 0);
		snprintf(mine, sizeof(mine), "%s.%s%s", m.klass, m.name, m.signature);
		ck_assert_msg(!strcmp(mine, name), "%s: compile id %u: jcmd says %s, read %s", jdk,
		              id, name, mine);
		named++;
		if (!strcmp(name, "Hot.spin(I)J")) {
			ck_assert_str_eq(m.file, "Hot.java");
			spin = read_u(j, blob + vm->nm_method, 8);
		}
		ember_jvm_method_free(&m);
	}
	pclose(p);
	ck_assert_msg(listed >= 5, "%s: jcmd listed %u compiled methods", jdk, listed);
	ck_assert_uint_eq(named, listed);
	ck_assert_msg(spin, "%s: Hot.spin was not compiled", jdk);
	return spin;
}

/* Each (bci, line) javap lists for Hot.spin, looked up in the table read from the VM. */
static void check_lines(struct live_jvm *j, const char *jdk, const struct ember_jvm_vm *vm,
                        uint64_t method)
{
	char cmd[PATH_MAX + 64], line[512];
	bool in_spin = false;
	unsigned int pairs = 0;
	struct ember_jvm_method m;
	FILE *p;

	ck_assert_int_eq(ember_jvm_method_read(vm, live_jvm_read, j, method, &m), 0);
	ck_assert_ptr_nonnull(m.lines);
	snprintf(cmd, sizeof(cmd), "'%s/bin/javap' -c -l -cp '%s' Hot", jdk, j->dir);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned int at, bci;
		int32_t got;

		/* A method's header: two spaces in, then its declaration. */
		if (!strncmp(line, "  ", 2) && line[2] != ' ' && strstr(line, "("))
			in_spin = strstr(line, " spin(int)") != NULL;
		if (!in_spin || sscanf(line, " line %u: %u", &at, &bci) != 2)
			continue;
		pairs++;
		ck_assert_int_eq(ember_jvm_method_line(vm, &m, bci, &got), 0);
		ck_assert_msg(got == (int32_t)at, "%s: bci %u: line %d, javap says %u", jdk, bci,
		              got, at);
	}
	pclose(p);
	ck_assert_uint_ge(pairs, 3);
	/* Past the bytecode: no line. */
	ck_assert_int_eq(ember_jvm_method_line(vm, &m, m.code_size, &(int32_t){0}), -ENOENT);
	ember_jvm_method_free(&m);
}

static void check_jdk(const char *jdk)
{
	struct live_jvm j;
	struct ember_jvm_vm vm;
	char why[EMBER_JVM_WHY];
	int err;

	live_jvm_start(&j, jdk, "Hot", hot_java, true, "-Xmx64m");
	ck_assert_msg(!strncmp(j.line, "ready ", 6), "%s: %s", jdk, j.line);
	live_jvm_find_libjvm(&j);
	err = live_jvm_read_vm(&j, &vm, why);
	ck_assert_msg(!err, "%s: %d %s", jdk, err, why);
	check_lines(&j, jdk, &vm, check_codelist(&j, jdk, &vm));
	live_jvm_stop(&j);
}

START_TEST(debian_openjdk_17)
{
	if (access(DEBIAN_JDK "/bin/javac", X_OK))
		EMBER_SKIP("%s is not installed (scripts/install-deps.sh installs "
		           "openjdk-17-jdk-headless)",
		           DEBIAN_JDK);
	check_jdk(DEBIAN_JDK);
}
END_TEST

/* Every other JDK on the machine (Temurin 25 on some), once per real directory. */
START_TEST(other_jdks)
{
	live_jvm_other_jdks("javac", check_jdk);
}
END_TEST

/* A Method pointer that leads nowhere, or to bytes that are no method. */
START_TEST(pointers_that_lead_nowhere)
{
	struct live_jvm j;
	struct ember_jvm_vm vm;
	struct ember_jvm_method m;
	char why[EMBER_JVM_WHY];

	if (access(DEBIAN_JDK "/bin/javac", X_OK))
		EMBER_SKIP("%s is not installed", DEBIAN_JDK);
	live_jvm_start(&j, DEBIAN_JDK, "Hot", hot_java, false, "-Xint");
	live_jvm_find_libjvm(&j);
	ck_assert_int_eq(live_jvm_read_vm(&j, &vm, why), 0);
	ck_assert_int_eq(ember_jvm_method_read(&vm, live_jvm_read, &j, 0x1000, &m), -EFAULT);
	ck_assert_ptr_null(m.name);
	/* libjvm's own ELF header read as a Method: its "ConstMethod" is no readable one. */
	ck_assert_int_lt(ember_jvm_method_read(&vm, live_jvm_read, &j, j.bias, &m), 0);
	ck_assert_ptr_null(m.klass);
	live_jvm_stop(&j);
}
END_TEST

/* Descriptors as javac writes them, turned into Java's parameter lists (--signatures). */
START_TEST(descriptors_as_java_writes_them)
{
	static const struct {
		const char *descriptor, *params;
	} good[] = {
	    {"()V", "()"},
	    {"(J)J", "(long)"},
	    {"(IJ[J)J", "(int, long, long[])"},
	    {"(BCDFSZ)V", "(byte, char, double, float, short, boolean)"},
	    {"(Ljava/lang/Object;)Ljava/lang/Object;", "(java.lang.Object)"},
	    {"([[Ljava/lang/String;I)[I", "(java.lang.String[][], int)"},
	    {"(LJvmSplit$Inner;)V", "(JvmSplit$Inner)"},
	};
	static const char *const bad[] = {
	    "",     "V",    "(",    "(J", "(J)", "(X)V", "(L;)V", "(Ljava/lang/Object)V",
	    "([)V", "(V)V", "(a)V",
	};
	char out[64], big[600], wide[1024];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_int_eq(ember_jvm_signature_params(good[i].descriptor, out, sizeof(out)),
		                 0);
		ck_assert_str_eq(out, good[i].params);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ember_jvm_signature_params(bad[i], out, sizeof(out)) == -EBADMSG,
		              "%s", bad[i]);
	/* 255 dimensions are Java's most; 256 are not a descriptor. */
	big[0] = '(';
	memset(big + 1, '[', 255);
	strcpy(big + 256, "I)V");
	ck_assert_int_eq(ember_jvm_signature_params(big, wide, sizeof(wide)), 0);
	ck_assert_uint_eq(strlen(wide), 2 + 3 + 2 * 255);
	memset(big + 1, '[', 256);
	strcpy(big + 257, "I)V");
	ck_assert_int_eq(ember_jvm_signature_params(big, wide, sizeof(wide)), -EBADMSG);
	/* Cut short: refused whole, never half a name. */
	ck_assert_int_eq(ember_jvm_signature_params("(Ljava/lang/Object;)V", out, 10),
	                 -ENAMETOOLONG);
	ck_assert_int_eq(ember_jvm_signature_params("(J)J", out, 0), -ENAMETOOLONG);
}
END_TEST

static Suite *jvm_method_suite(void)
{
	Suite *s = suite_create("jvm_method");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, debian_openjdk_17);
	tcase_add_test(tc, other_jdks);
	tcase_add_test(tc, pointers_that_lead_nowhere);
	tcase_add_test(tc, descriptors_as_java_writes_them);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(jvm_method_suite)
