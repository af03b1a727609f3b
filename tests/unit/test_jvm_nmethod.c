// SPDX-License-Identifier: Apache-2.0
/*
 * Compiled Java methods and their inlining, read from a live HotSpot VM
 * (symbolizer/interp/jvm_nmethod.c) on every JDK under /usr/lib/jvm, against
 * the JDK's own tools: Inline.hot, compiled by C1 and C2 with leaf()
 * inlined, found through `jcmd Compiler.codelist` (compile id, code
 * start); every PcDesc's chain of scopes ends in Inline.hot, and leaf()'s
 * scopes are called from the bytecode index `javap -c` gives for its
 * invokestatic in hot(), at a line javap lists for leaf(). Then debug
 * information that does not decode, made by hand.
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
#include "symbolizer/interp/jvm_nmethod.h"
#include "tests/unit/live_jvm.h"

static const char inline_java[] = "public class Inline {\n"
				  "  static int leaf(int x) {\n"
				  "    int y = x * 31;\n"
				  "    return y + 7;\n"
				  "  }\n"
				  "  static long hot(int n) {\n"
				  "    long s = 0;\n"
				  "    for (int i = 0; i < n; i++) {\n"
				  "      s += leaf(i);\n"
				  "    }\n"
				  "    return s;\n"
				  "  }\n"
				  "  public static void main(String[] a) throws Exception {\n"
				  "    long t = 0;\n"
				  "    for (int k = 0; k < 30000; k++)\n"
				  "      t += hot(500);\n"
				  "    System.out.println(\"ready \" + t);\n"
				  "    Thread.sleep(60000);\n"
				  "  }\n"
				  "}\n";

/* From javap -c -l: the bci of hot()'s invokestatic of leaf, and leaf()'s lines. */
struct javap {
	int call_bci;
	int leaf_lines[16];
	unsigned int nleaf_lines;
};

static void run_javap(const char *jdk, const char *dir, struct javap *out)
{
	char cmd[PATH_MAX + 64], line[512];
	enum { NONE, LEAF, HOT } in = NONE;
	FILE *p;

	memset(out, 0, sizeof(*out));
	out->call_bci = -1;
	snprintf(cmd, sizeof(cmd), "'%s/bin/javap' -c -l -cp '%s' Inline", jdk, dir);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned int a, b;

		/* A method's header: two spaces in, then its declaration. */
		if (!strncmp(line, "  ", 2) && line[2] != ' ' && strstr(line, "("))
			in = strstr(line, " leaf(int)")  ? LEAF
			     : strstr(line, " hot(int)") ? HOT
			                                 : NONE;
		if (in == HOT && strstr(line, "invokestatic") && strstr(line, "Method leaf:") &&
		    sscanf(line, " %u:", &a) == 1)
			out->call_bci = (int)a;
		if (in == LEAF && sscanf(line, " line %u: %u", &a, &b) == 2 &&
		    out->nleaf_lines < 16)
			out->leaf_lines[out->nleaf_lines++] = (int)a;
	}
	pclose(p);
	ck_assert_int_ge(out->call_bci, 0);
	ck_assert_uint_ge(out->nleaf_lines, 2);
}

/* The blob of each compilation of Inline.hot jcmd lists (at most n): how many. */
static unsigned int hot_blobs(struct live_jvm *j, const char *jdk, uint64_t *blob, uint32_t *id,
                              unsigned int n)
{
	char cmd[PATH_MAX + 64], line[2048];
	unsigned int found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s/bin/jcmd' %d Compiler.codelist", jdk, (int)j->pid);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long b, begin, end;
		unsigned int cid, level, state;
		char name[1024];

		if (sscanf(line, "%u %u %u %1023s [%llx, %llx - %llx]", &cid, &level, &state, name,
		           &b, &begin, &end) == 7 &&
		    !strcmp(name, "Inline.hot(I)J") && found < n) {
			blob[found] = b;
			id[found++] = cid;
		}
	}
	pclose(p);
	return found;
}

static bool named(const struct ember_jvm_vm *vm, struct live_jvm *j, uint64_t method,
                  const char *want, struct ember_jvm_method *m)
{
	char got[512];

	ck_assert_int_eq(ember_jvm_method_read(vm, live_jvm_read, j, method, m), 0);
	snprintf(got, sizeof(got), "%s.%s", m->klass, m->name);
	return !strcmp(got, want);
}

/* Every PcDesc of one compilation of hot(): chains out to hot(); leaf() inlined as javap
 * says. Returns the number of chains with leaf() in them. */
static unsigned int check_chains(const struct ember_jvm_vm *vm, struct live_jvm *j,
                                 const struct ember_jvm_nmethod *nm, const struct javap *jp)
{
	unsigned int inlined = 0;

	for (size_t i = 0; i < nm->npcs; i++) {
		int32_t pc =
		    (int32_t)ember_le_in(nm->pcs + i * nm->pc_size, nm->pc_size, nm->pc_offset, 4);
		struct ember_jvm_scope s[EMBER_JVM_MAX_SCOPES];
		struct ember_jvm_method outer, inner;
		int n;

		if (pc < 0)
			continue; /* the sentinel before the code */
		n = ember_jvm_nmethod_scopes(nm, (uint64_t)pc, s, EMBER_JVM_MAX_SCOPES);
		if (n == -ENOENT)
			continue;
		ck_assert_int_gt(n, 0);
		ck_assert(named(vm, j, s[n - 1].method, "Inline.hot", &outer));
		ck_assert_int_lt(s[n - 1].bci, (int32_t)outer.code_size);
		if (n >= 2 && named(vm, j, s[n - 2].method, "Inline.leaf", &inner)) {
			int32_t line;

			inlined++;
			ck_assert_int_eq(s[n - 1].bci, jp->call_bci);
			if (s[n - 2].bci >= 0 &&
			    !ember_jvm_method_line(vm, &inner, (uint32_t)s[n - 2].bci, &line)) {
				bool listed = false;

				for (unsigned int k = 0; k < jp->nleaf_lines; k++)
					listed |= jp->leaf_lines[k] == line;
				ck_assert_msg(listed, "leaf() at bci %d: line %d", s[n - 2].bci,
				              line);
			}
		}
		if (n >= 2)
			ember_jvm_method_free(&inner);
		ember_jvm_method_free(&outer);
	}
	return inlined;
}

static void check_jdk(const char *jdk)
{
	struct live_jvm j;
	struct ember_jvm_vm vm;
	struct javap jp;
	char why[EMBER_JVM_WHY];
	uint64_t blob[8];
	uint32_t id[8];
	unsigned int n, inlined = 0;

	live_jvm_start(&j, jdk, "Inline", inline_java, true,
	               "-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints");
	ck_assert_msg(!strncmp(j.line, "ready ", 6), "%s: %s", jdk, j.line);
	live_jvm_find_libjvm(&j);
	ck_assert_msg(!live_jvm_read_vm(&j, &vm, why), "%s: %s", jdk, why);
	run_javap(jdk, j.dir, &jp);
	n = hot_blobs(&j, jdk, blob, id, 8);
	ck_assert_msg(n >= 1, "%s: Inline.hot was not compiled", jdk);
	for (unsigned int i = 0; i < n; i++) {
		struct ember_jvm_nmethod nm;
		struct ember_jvm_method m;

		ck_assert_int_eq(ember_jvm_nmethod_read(&vm, live_jvm_read, &j, blob[i], &nm), 0);
		ck_assert_uint_eq(nm.compile_id, id[i]);
		ck_assert(named(&vm, &j, nm.method, "Inline.hot", &m));
		ember_jvm_method_free(&m);
		ck_assert_uint_gt(nm.npcs, 2);
		ck_assert_uint_gt(nm.nmetadata, 0);
		inlined += check_chains(&vm, &j, &nm, &jp);
		ember_jvm_nmethod_free(&nm);
	}
	ck_assert_msg(inlined > 0, "%s: no scope of leaf() inlined in hot()", jdk);
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

/* Debug information made by hand: two PcDescs (16 bytes: pc, scope, objects, flags) and a
 * scopes stream, with numbers written as JDK 17 writes them (x = 0). */
START_TEST(debug_information_that_does_not_decode)
{
	uint8_t pcs[32] = {0}, scopes[16] = {0};
	uint64_t metadata[2] = {0x7000, 0x8000};
	struct ember_jvm_nmethod nm = {.method = 0x7000,
	                               .pc_size = 16,
	                               .pc_offset = 0,
	                               .pc_scope = 4,
	                               .pcs = pcs,
	                               .npcs = 2,
	                               .scopes = scopes,
	                               .scopes_len = sizeof(scopes),
	                               .metadata = metadata,
	                               .nmetadata = 2};
	struct ember_jvm_scope s[4];

	/* PcDesc 0: pc 10, scope at 1; PcDesc 1: pc 20, scope at 4. */
	pcs[0] = 10, pcs[4] = 1, pcs[16] = 20, pcs[20] = 4;
	/* Scope at 1: outermost (sender 0), method 1, bci 5 (+1). Scope at 4: sender 1, method
	 * 2, bci -1 (0). */
	scopes[1] = 0, scopes[2] = 1, scopes[3] = 6;
	scopes[4] = 1, scopes[5] = 2, scopes[6] = 0;
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 10, s, 4), 1);
	ck_assert_uint_eq(s[0].method, 0x7000);
	ck_assert_int_eq(s[0].bci, 5);
	/* At a PcDesc (a call's return address): its whole chain. */
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 20, s, 4), 2);
	ck_assert_uint_eq(s[0].method, 0x8000);
	ck_assert_int_eq(s[0].bci, -1);
	ck_assert_uint_eq(s[1].method, 0x7000);
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 20, s, 1), 1); /* cut at max */
	/* Between PcDescs (a loop of the method, before a call inlined from 0x8000): the next
	 * one's chain, less the callee it records at its entry (not running yet). */
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 11, s, 4), 1);
	ck_assert_uint_eq(s[0].method, 0x7000);
	ck_assert_int_eq(s[0].bci, 5);
	/* Past the last PcDesc, or before the first: the method compiled, at its bci there. */
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 21, s, 4), 1);
	ck_assert_uint_eq(s[0].method, 0x7000);
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 3, s, 4), 1);
	ck_assert_uint_eq(s[0].method, 0x7000);
	ck_assert_int_eq(s[0].bci, 5); /* where the method is next recorded */
	/* A sender that does not go outward (a cycle). */
	scopes[4] = 4;
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 20, s, 4), -EBADMSG);
	scopes[4] = 1;
	/* A method index without metadata, and index 0. */
	scopes[5] = 3;
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 20, s, 4), -EBADMSG);
	scopes[5] = 0;
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 20, s, 4), -EBADMSG);
	scopes[5] = 2;
	/* A scope outside the scopes data, and one cut short. */
	pcs[20] = 16;
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 20, s, 4), -EBADMSG);
	pcs[20] = 15;
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 20, s, 4), -EBADMSG);
	/* Serialized null: no scope. */
	pcs[20] = 0;
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 20, s, 4), -ENOENT);
}
END_TEST

/* A loop in one inlined method, then another inlined method's code: a pc between their
 * PcDescs is the next one's, as HotSpot's AsyncGetCallTrace takes it. Four PcDescs: pc 10
 * the method 0x7000 at bci 5; pc 20 0x8000 inlined at its entry; pc 30 0x9000 inlined, at
 * bci 2; pc 40 0x8000 at bci 4. */
START_TEST(between_two_inlined_methods)
{
	uint8_t pcs[64] = {0}, scopes[16] = {0};
	uint64_t metadata[3] = {0x7000, 0x8000, 0x9000};
	struct ember_jvm_nmethod nm = {.method = 0x7000,
	                               .pc_size = 16,
	                               .pc_offset = 0,
	                               .pc_scope = 4,
	                               .pcs = pcs,
	                               .npcs = 4,
	                               .scopes = scopes,
	                               .scopes_len = sizeof(scopes),
	                               .metadata = metadata,
	                               .nmetadata = 3};
	struct ember_jvm_scope s[4];

	pcs[0] = 10, pcs[4] = 1, pcs[16] = 20, pcs[20] = 4;
	pcs[32] = 30, pcs[36] = 7, pcs[48] = 40, pcs[52] = 10;
	scopes[1] = 0, scopes[2] = 1, scopes[3] = 6;    /* 0x7000 at 5, outermost */
	scopes[4] = 1, scopes[5] = 2, scopes[6] = 0;    /* 0x8000 at its entry */
	scopes[7] = 1, scopes[8] = 3, scopes[9] = 3;    /* 0x9000 at 2 */
	scopes[10] = 1, scopes[11] = 2, scopes[12] = 5; /* 0x8000 at 4 */
	/* Inside 0x9000's loop, the one before 0x8000's entry: 0x9000. */
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 25, s, 4), 2);
	ck_assert_uint_eq(s[0].method, 0x9000);
	ck_assert_int_eq(s[0].bci, 2);
	ck_assert_uint_eq(s[1].method, 0x7000);
	ck_assert_int_eq(s[1].bci, 5);
	/* Past 0x9000's last record, before 0x8000's next: 0x8000 (what both record, 0x7000
	 * alone, would lose the running method). */
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 35, s, 4), 2);
	ck_assert_uint_eq(s[0].method, 0x8000);
	ck_assert_int_eq(s[0].bci, 4);
	/* Before 0x8000's entry: it has not started; 0x7000 runs, at its bci. */
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 15, s, 4), 1);
	ck_assert_uint_eq(s[0].method, 0x7000);
	ck_assert_int_eq(s[0].bci, 5);
	/* Cut at max: the innermost kept, as at a PcDesc. */
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 35, s, 1), 1);
	ck_assert_uint_eq(s[0].method, 0x8000);
	/* The next one's chain from another method compiled: not one nmethod's. */
	scopes[11] = 3, scopes[10] = 0;
	ck_assert_int_eq(ember_jvm_nmethod_scopes(&nm, 35, s, 4), -EBADMSG);
}
END_TEST

static Suite *jvm_nmethod_suite(void)
{
	Suite *s = suite_create("jvm_nmethod");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, debian_openjdk_17);
	tcase_add_test(tc, other_jdks);
	tcase_add_test(tc, debug_information_that_does_not_decode);
	tcase_add_test(tc, between_two_inlined_methods);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(jvm_nmethod_suite)
