// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>

#include "check_main.h"
#include "symbolizer/symbols/kallsyms.h"

static const char text[] = "ffffffff81000000 T _stext\n"
			   "ffffffff81000100 t helper_a\n"
			   "ffffffff81000200 D some_data\n"
			   "ffffffff81000300 T do_syscall_64\n"
			   "ffffffffc0a01000 t xfs_iread\t[xfs]\n"
			   "ffffffffc0a02000 t xfs_iwrite\t[xfs]\n"
			   "ffffffffc0b00000 t bpf_prog_6deef7357e7b4530_ember_sample\t[bpf]\n";

START_TEST(resolves_text_symbols_with_modules)
{
	struct ember_kallsyms k;
	const struct ember_ksym *s;

	ck_assert_int_eq(ember_kallsyms_parse(text, strlen(text), &k), 0);
	ck_assert(!k.addresses_hidden);
	ck_assert_uint_eq(k.nsyms, 6); /* D is data */
	s = ember_kallsyms_lookup(&k, 0xffffffff81000150);
	ck_assert_str_eq(ember_ksym_name(&k, s), "helper_a");
	ck_assert_str_eq(ember_ksym_module(&k, s), "");
	/* Data symbols are not code: the address belongs to helper_a still. */
	s = ember_kallsyms_lookup(&k, 0xffffffff81000250);
	ck_assert_str_eq(ember_ksym_name(&k, s), "helper_a");
	s = ember_kallsyms_lookup(&k, 0xffffffffc0a01010);
	ck_assert_str_eq(ember_ksym_name(&k, s), "xfs_iread");
	ck_assert_str_eq(ember_ksym_module(&k, s), "xfs");
	s = ember_kallsyms_lookup(&k, 0xffffffffc0b00010);
	ck_assert_str_eq(ember_ksym_module(&k, s), "bpf");
	ck_assert_ptr_null(ember_kallsyms_lookup(&k, 0x1000));
	ember_kallsyms_free(&k);
}
END_TEST

START_TEST(hidden_addresses_resolve_nothing)
{
	static const char hidden[] = "0000000000000000 T _stext\n0000000000000000 t a\n";
	struct ember_kallsyms k;

	ck_assert_int_eq(ember_kallsyms_parse(hidden, strlen(hidden), &k), 0);
	ck_assert(k.addresses_hidden);
	ck_assert_ptr_null(ember_kallsyms_lookup(&k, 0));
	ember_kallsyms_free(&k);
}
END_TEST

START_TEST(bad_lines_are_counted)
{
	static const char bad[] = "xyz T foo\n"
				  "ffffffff81000000\n"
				  "ffffffff81000000 T\n"
				  "ffffffff81000000 T good\n"
				  "ffffffff81000010 t unterminated\t[mod\n"
				  "11111111111111111 T too_long\n";
	struct ember_kallsyms k;

	ck_assert_int_eq(ember_kallsyms_parse(bad, strlen(bad), &k), 0);
	ck_assert_uint_eq(k.nsyms, 1);
	ck_assert_uint_eq(k.bad_lines, 5);
	ember_kallsyms_free(&k);
}
END_TEST

static Suite *kallsyms_suite(void)
{
	Suite *s = suite_create("kallsyms");
	TCase *tc = tcase_create("kallsyms");

	tcase_add_test(tc, resolves_text_symbols_with_modules);
	tcase_add_test(tc, hidden_addresses_resolve_nothing);
	tcase_add_test(tc, bad_lines_are_counted);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(kallsyms_suite)
