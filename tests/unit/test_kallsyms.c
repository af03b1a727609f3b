// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
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

/* Appends one ELF note (sizes, type, name and description padded to 4 bytes) at *at. */
static void put_note(uint8_t *buf, size_t *at, uint32_t type, const char *name, size_t namesz,
                     const uint8_t *desc, uint32_t descsz)
{
	uint32_t hdr[3] = {(uint32_t)namesz, descsz, type};

	memcpy(buf + *at, hdr, sizeof(hdr));
	*at += sizeof(hdr);
	memset(buf + *at, 0, (namesz + 3) & ~3u);
	memcpy(buf + *at, name, namesz);
	*at += (namesz + 3) & ~3u;
	memset(buf + *at, 0, (descsz + 3) & ~3u);
	memcpy(buf + *at, desc, descsz);
	*at += (descsz + 3) & ~3u;
}

START_TEST(kernel_build_id_from_its_notes)
{
	/* As /sys/kernel/notes holds them: Xen's and Linux's notes beside the GNU build id. */
	static const uint8_t id[20] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
	                               7,    8,    9,    10,   11, 12, 13, 14, 15, 16};
	static const uint8_t other[6] = {1, 2, 3, 4, 5, 6};
	_Alignas(4) uint8_t buf[256];
	char hex[129];
	size_t len = 0, id_at;

	put_note(buf, &len, 6, "Linux", 6, other, 6);
	put_note(buf, &len, 3, "Xen", 4, other, 4); /* an NT 3 of another owner */
	id_at = len;
	put_note(buf, &len, 3, "GNU", 4, id, sizeof(id));
	ck_assert_int_eq(ember_kernel_build_id(buf, len, hex, sizeof(hex)), 0);
	ck_assert_str_eq(hex, "deadbeef0102030405060708090a0b0c0d0e0f10");
	/* Not there, cut short, or a size past the end: no id, and nothing read past len. */
	ck_assert_int_eq(ember_kernel_build_id(buf, id_at, hex, sizeof(hex)), -ENOENT);
	ck_assert_int_eq(ember_kernel_build_id(buf, len - 4, hex, sizeof(hex)), -EINVAL);
	ck_assert_int_eq(ember_kernel_build_id(buf, 0, hex, sizeof(hex)), -ENOENT);
	((uint32_t *)(buf + id_at))[1] = 0xfffffff0u;
	ck_assert_int_eq(ember_kernel_build_id(buf, len, hex, sizeof(hex)), -EINVAL);
	((uint32_t *)(buf + id_at))[1] = sizeof(id);
	((uint32_t *)(buf + id_at))[0] = 0xffffffffu;
	ck_assert_int_eq(ember_kernel_build_id(buf, len, hex, sizeof(hex)), -EINVAL);
	/* An id longer than the room for its hex. */
	((uint32_t *)(buf + id_at))[0] = 4;
	ck_assert_int_eq(ember_kernel_build_id(buf, len, hex, 40), -EINVAL);
}
END_TEST

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
	tcase_add_test(tc, kernel_build_id_from_its_notes);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(kallsyms_suite)
