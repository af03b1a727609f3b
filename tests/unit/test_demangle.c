// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "check_main.h"
#include "symbolizer/symbols/demangle.h"

static void expect(const char *mangled, const char *want)
{
	char out[1024];

	ck_assert_msg(ember_demangle(mangled, out, sizeof(out)) == 1, "%s not demangled", mangled);
	ck_assert_str_eq(out, want);
}

static void refuse(const char *name)
{
	char out[256];

	ck_assert_int_eq(ember_demangle(name, out, sizeof(out)), 0);
}

START_TEST(cxx_names)
{
	expect("_ZN3foo3barEv", "foo::bar()");
	expect("_ZNSt6vectorIiSaIiEE9push_backERKi",
	       "std::vector<int, std::allocator<int> >::push_back(int const&)");
	expect("_ZN9__gnu_cxx13new_allocatorIcE8allocateEmPKv",
	       "__gnu_cxx::new_allocator<char>::allocate(unsigned long, void const*)");
}
END_TEST

START_TEST(rust_legacy_names_lose_their_hash)
{
	expect("_ZN4core3fmt9Formatter3pad17h0123456789abcdefE", "core::fmt::Formatter::pad");
	expect(
	    "_ZN80_$LT$std..io..Write..write_fmt..Adapter$LT$T$GT$$u20$as$u20$core..fmt..Write$GT$"
	    "9write_str17h1234567890abcdefE",
	    "<std::io::Write::write_fmt::Adapter<T> as core::fmt::Write>::write_str");
}
END_TEST

START_TEST(rust_v0_names)
{
	expect("_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar");
	expect("_RNvMCs1234_7mycrateNtB2_3Foo3new", "<mycrate::Foo>::new");
	expect("_RNvXs_Cs1234_7mycrateNtB4_3FooNtNtCs5678_4core3fmt7Display3fmt",
	       "<mycrate::Foo as core::fmt::Display>::fmt");
	expect("_RINvCs1234_7mycrate3fooKj2a_E", "mycrate::foo::<42>");
	expect("_RINvCs1234_7mycrate3barRShE", "mycrate::bar::<&[u8]>");
}
END_TEST

/* The PLT entries ember names target@plt, as objdump -C prints them. */
START_TEST(plt_entries_are_demangled_before_their_suffix)
{
	char small[16];

	expect("_ZSt9terminatev@plt", "std::terminate()@plt");
	expect("_ZN4core3fmt9Formatter3pad17h0123456789abcdefE@plt",
	       "core::fmt::Formatter::pad@plt");
	expect("_RNvNtCs1234_7mycrate3foo3bar@plt", "mycrate::foo::bar@plt");
	refuse("memcpy@plt");
	refuse("@plt");
	refuse("_Z@plt");
	refuse("_ZSt9terminatev@plt@plt");
	/* Room for the name but not for the suffix. */
	ck_assert_int_eq(ember_demangle("_ZN3foo3barEv@plt", small, 13), -ENOSPC);
	ck_assert_int_eq(ember_demangle("_ZN3foo3barEv@plt", small, 15), 1);
	ck_assert_str_eq(small, "foo::bar()@plt");
}
END_TEST

START_TEST(plain_and_hostile_names_are_left_alone)
{
	char small[4];
	char big[EMBER_DEMANGLE_MAX_INPUT + 16];

	refuse("main");
	refuse("leaf_a");
	refuse("_start");
	refuse("_Z");
	refuse("_ZN3foo");           /* cut short */
	refuse("_RNvB9999999_3foo"); /* back reference forward */
	refuse("_RNvNtCs1234_7mycrate9999999999foo");
	memset(big, 'N', sizeof(big) - 1);
	big[0] = '_', big[1] = 'R';
	big[sizeof(big) - 1] = '\0';
	refuse(big);
	/* Deep nesting stops at the depth cap instead of the stack's end. */
	memset(big, 'R', 2000);
	memcpy(big, "_RINvC3foo3bar", 14);
	big[2000] = 'h', big[2001] = 'E', big[2002] = '\0';
	refuse(big);
	ck_assert_int_eq(ember_demangle("_ZN3foo3barEv", small, sizeof(small)), -ENOSPC);
}
END_TEST

/* The base-62 number of a Rust v0 back reference to position n. */
static void v0_ref(char *out, size_t n)
{
	static const char digits[] =
	    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	char tmp[16];
	size_t k = 0;

	if (!n) {
		strcat(out, "_");
		return;
	}
	for (n--; k == 0 || n; n /= 62)
		tmp[k++] = digits[n % 62];
	while (k)
		strncat(out, &tmp[--k], 1);
	strcat(out, "_");
}

/*
 * Rust v0: generic arguments that are back references to the path before
 * them, nested 22 deep: each level decodes the one below three times
 * (149 bytes at 18 levels took 11 s, 22 levels minutes).
 */
START_TEST(rust_v0_back_references_are_bounded)
{
	char name[4096] = "_R", out[512];
	enum { LEVELS = 22 };

	for (int i = 0; i < LEVELS; i++)
		strcat(name, "I");
	strcat(name, "C1a");
	for (int j = 1; j <= LEVELS; j++) {
		for (int k = 0; k < 2; k++) {
			strcat(name, "B");
			v0_ref(name, LEVELS - (j - 1));
		}
		strcat(name, "E");
	}
	ck_assert_int_le(ember_demangle(name, out, sizeof(out)), 0);
}
END_TEST

/*
 * C++: each template argument list names the type before it twice, so the
 * printed name doubles per level: 26 levels (278 bytes) printed 835 MB.
 */
START_TEST(cxx_back_references_are_bounded)
{
	char name[4096] = "_Z1f1a", out[512];
	struct rusage ru;

	for (int i = 0; i < 26; i++) {
		static const char b36[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
		char seq[16] = "S_";
		int id = 2 * i - 1; /* each level adds the name a and the new type */

		if (id >= 36)
			snprintf(seq, sizeof(seq), "S%c%c_", b36[id / 36], b36[id % 36]);
		else if (id >= 0)
			snprintf(seq, sizeof(seq), "S%c_", b36[id]);
		strcat(name, "1aI");
		strcat(name, seq);
		strcat(name, seq);
		strcat(name, "E");
	}
	ck_assert_int_le(ember_demangle(name, out, sizeof(out)), 0);
	ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
	ck_assert_int_lt(ru.ru_maxrss, 100 * 1024);
	/* Fewer levels still demangle, as a C++ runtime would print them. */
	strcpy(name, "_Z1f1a1aIS_S_E1aIS1_S1_E");
	ck_assert_int_eq(ember_demangle(name, out, sizeof(out)), 1);
	ck_assert_str_eq(out, "f(a, a<a, a>, a<a<a, a>, a<a, a> >)");
}
END_TEST

static Suite *demangle_suite(void)
{
	Suite *s = suite_create("demangle");
	TCase *tc = tcase_create("demangle");

	tcase_add_test(tc, cxx_names);
	tcase_add_test(tc, rust_legacy_names_lose_their_hash);
	tcase_add_test(tc, rust_v0_names);
	tcase_add_test(tc, plt_entries_are_demangled_before_their_suffix);
	tcase_add_test(tc, plain_and_hostile_names_are_left_alone);
	suite_add_tcase(s, tc);
	/* Hostile names that once took minutes or gigabytes: a tight CPU clock. */
	tc = tcase_create("bounded");
	ember_tcase_cpu_bound(tc);
	tcase_add_test(tc, rust_v0_back_references_are_bounded);
	tcase_add_test(tc, cxx_back_references_are_bounded);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(demangle_suite)
