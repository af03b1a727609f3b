// SPDX-License-Identifier: Apache-2.0
/*
 * The Perl frame reader on a fake memory laid out as perl 5.36 lays it out:
 * subs named through their GV and its stash, anonymous subs (their
 * package's __ANON__), lexical subs (a name HEK in the CV), a renamed stash
 * (several names), evals and the main program by their COP, the walker's
 * checksum, and refusals (wrong SV types, a stash without a name, names
 * and files past the cap, pointers nowhere).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "symbolizer/interp/perl_frames.h"
#include "tests/fuzz/fuzz_mem.h"

#define BASE FUZZ_MEM_BASE
#define SIZE 16384

static uint8_t mem[SIZE];
static struct fuzz_mem M = {mem, SIZE};
static struct ember_perl_layout L;

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - BASE), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(mem + (addr - BASE), &v, 4);
}

/* An SV head at addr: its body, a refcount and its flags (type in the low byte). */
static void put_sv(uint64_t addr, uint64_t body, uint32_t flags)
{
	put64(addr, body);
	put32(addr + 8, 1);
	put32(addr + 12, flags);
}

/* A HEK at addr: hash, len, bytes and a NUL. */
static void put_hek(uint64_t addr, const char *s)
{
	put32(addr, 0x1234);
	put32(addr + 4, (uint32_t)strlen(s));
	memcpy(mem + (addr - BASE) + 8, s, strlen(s) + 1);
}

/* A stash at addr (body at addr + 0x100) named by the HEK at hek. */
static void put_stash(uint64_t addr, uint64_t hek)
{
	put_sv(addr, addr + 0x100, 12 | 0x02000000);
	put64(addr + 0x100 + 0x20, hek);
	put32(addr + 0x100 + 0x3c, 0);
}

/* A GV at addr (body at addr + 0x100) named by hek, in stash. */
static void put_gv(uint64_t addr, uint64_t hek, uint64_t stash)
{
	put_sv(addr, addr + 0x100, 9 | 0x8000);
	put64(addr + 0x100 + 0x20, hek);
	put64(addr + 0x100 + 0x28, stash);
}

/* A CV at addr (body at addr + 0x100): its GV (or name HEK when flags has CVf_NAMED). */
static void put_cv(uint64_t addr, uint64_t gv_u, uint64_t stash, uint64_t file, uint32_t flags)
{
	put_sv(addr, addr + 0x100, 13);
	put64(addr + 0x100 + 0x20, stash);
	put64(addr + 0x100 + 0x38, gv_u);
	put64(addr + 0x100 + 0x40, file);
	put32(addr + 0x100 + 0x5c, flags);
}

#define FILE_STR  (BASE + 0x40)
#define HEK_PKG   (BASE + 0x80)
#define HEK_LEAF  (BASE + 0xc0)
#define HEK_ANON  (BASE + 0xe0)
#define STASH     (BASE + 0x200)
#define GV_LEAF   (BASE + 0x400)
#define GV_ANON   (BASE + 0x600)
#define CV_LEAF   (BASE + 0x800)
#define CV_ANON   (BASE + 0xa00)
#define CV_LEX    (BASE + 0xc00)
#define COP_EVAL  (BASE + 0xe00)
#define EVAL_FILE (BASE + 0xe80)

static void setup(void)
{
	memset(mem, 0, sizeof(mem));
	ck_assert_int_eq(ember_perl_layout_for(36, &L), 0);
	strcpy((char *)mem + (FILE_STR - BASE), "/srv/shop/Cart.pm");
	put_hek(HEK_PKG, "Shop::Cart");
	put_hek(HEK_LEAF, "leaf_a");
	put_hek(HEK_ANON, "__ANON__");
	put_stash(STASH, HEK_PKG);
	put_gv(GV_LEAF, HEK_LEAF, STASH);
	put_gv(GV_ANON, HEK_ANON, STASH);
	put_cv(CV_LEAF, GV_LEAF, STASH, FILE_STR, 0);
	put_cv(CV_ANON, GV_ANON, STASH, FILE_STR, 0x80 /* CVf_ANON */);
	put_cv(CV_LEX, HEK_LEAF, STASH, FILE_STR, 0x8000 /* CVf_NAMED */);
	strcpy((char *)mem + (EVAL_FILE - BASE), "(eval 12)");
	put32(COP_EVAL + 0x24, 3);
	put64(COP_EVAL + 0x28, 7);
	put64(COP_EVAL + 0x30, EVAL_FILE);
}

static struct ember_perl_sub read_ok(unsigned int kind, uint64_t addr, const char *name,
                                     const char *file)
{
	struct ember_perl_sub s;

	ck_assert_int_eq(ember_perl_read_frame(&L, fuzz_mem_read, &M, kind, addr, &s), 0);
	ck_assert_str_eq(s.name, name);
	if (file)
		ck_assert_str_eq(s.file, file);
	else
		ck_assert_ptr_null(s.file);
	return s;
}

START_TEST(test_subs)
{
	struct ember_perl_sub s;

	setup();
	s = read_ok(EMBER_PERL_FRAME_SUB, CV_LEAF, "Shop::Cart::leaf_a", "/srv/shop/Cart.pm");
	/* The walker's checksum: the CV's body, its GV, its file. */
	ck_assert_uint_eq(s.checksum, ember_interp_checksum(CV_LEAF + 0x100, GV_LEAF, FILE_STR));
	ember_perl_sub_free(&s);
	s = read_ok(EMBER_PERL_FRAME_SUB, CV_ANON, "Shop::Cart::__ANON__", "/srv/shop/Cart.pm");
	ember_perl_sub_free(&s);
	s = read_ok(EMBER_PERL_FRAME_FORMAT, CV_LEX, "Shop::Cart::leaf_a", "/srv/shop/Cart.pm");
	ember_perl_sub_free(&s);
	/* A sub without a file (an XSUB's CV, or one whose file is gone). */
	put64(CV_LEAF + 0x100 + 0x40, 0);
	s = read_ok(EMBER_PERL_FRAME_SUB, CV_LEAF, "Shop::Cart::leaf_a", NULL);
	ember_perl_sub_free(&s);
}
END_TEST

START_TEST(test_renamed_stash)
{
	struct ember_perl_sub s;

	setup();
	/* Two names: an array of HEKs, the first NULL (a negative count), the second the name. */
	put64(BASE + 0x1000, 0);
	put64(BASE + 0x1008, HEK_PKG);
	put64(STASH + 0x100 + 0x20, BASE + 0x1000);
	put32(STASH + 0x100 + 0x3c, (uint32_t)-2);
	s = read_ok(EMBER_PERL_FRAME_SUB, CV_LEAF, "Shop::Cart::leaf_a", "/srv/shop/Cart.pm");
	ember_perl_sub_free(&s);
}
END_TEST

START_TEST(test_eval_and_main)
{
	struct ember_perl_sub s;

	setup();
	s = read_ok(EMBER_PERL_FRAME_EVAL, COP_EVAL, "(eval)", "(eval 12)");
	ck_assert_uint_eq(s.checksum, ember_interp_checksum(EVAL_FILE, 7, EMBER_PERL_FRAME_EVAL));
	ember_perl_sub_free(&s);
	s = read_ok(EMBER_PERL_FRAME_MAIN, COP_EVAL, "main", "(eval 12)");
	ember_perl_sub_free(&s);
	/* No COP (the walker could not read PL_curcop): named, no file. */
	s = read_ok(EMBER_PERL_FRAME_MAIN, 0, "main", NULL);
	ck_assert_uint_eq(s.checksum, ember_interp_checksum(0, 0, EMBER_PERL_FRAME_MAIN));
	ember_perl_sub_free(&s);
}
END_TEST

static int read_err(unsigned int kind, uint64_t addr)
{
	struct ember_perl_sub s;
	int err = ember_perl_read_frame(&L, fuzz_mem_read, &M, kind, addr, &s);

	ck_assert_ptr_null(s.name);
	ck_assert_ptr_null(s.file);
	return err;
}

START_TEST(test_refusals)
{
	setup();
	ck_assert_int_eq(read_err(9, CV_LEAF), -EINVAL);                      /* unknown kind */
	ck_assert_int_eq(read_err(EMBER_PERL_FRAME_SUB, 0), -EFAULT);         /* nowhere */
	ck_assert_int_eq(read_err(EMBER_PERL_FRAME_SUB, 0x7f0000), -EFAULT);  /* unmapped */
	ck_assert_int_eq(read_err(EMBER_PERL_FRAME_SUB, GV_LEAF), -EBADMSG);  /* a GV, not a CV */
	ck_assert_int_eq(read_err(EMBER_PERL_FRAME_EVAL, 0x7f0000), -EFAULT); /* a COP nowhere */
	/* A CV whose GV is no GV with a GP. */
	put_sv(GV_LEAF, GV_LEAF + 0x100, 9 | 0x4000 | 0x8000);
	ck_assert_int_eq(read_err(EMBER_PERL_FRAME_SUB, CV_LEAF), -EBADMSG);
	put_sv(GV_LEAF, GV_LEAF + 0x100, 13);
	ck_assert_int_eq(read_err(EMBER_PERL_FRAME_SUB, CV_LEAF), -EBADMSG);
	setup();
	/* A stash without its aux part has no name. */
	put_sv(STASH, STASH + 0x100, 12);
	ck_assert_int_eq(read_err(EMBER_PERL_FRAME_SUB, CV_LEAF), -EBADMSG);
	setup();
	/* A name past the cap, a negative length. */
	put32(HEK_LEAF + 4, EMBER_PERL_MAX_STRING + 1);
	ck_assert_int_eq(read_err(EMBER_PERL_FRAME_SUB, CV_LEAF), -EBADMSG);
	put32(HEK_LEAF + 4, (uint32_t)-1);
	ck_assert_int_eq(read_err(EMBER_PERL_FRAME_SUB, CV_LEAF), -EBADMSG);
	setup();
	/* A file without a NUL before the cap, or running off the mapped memory. */
	memset(mem + 0x2000, 'x', EMBER_PERL_MAX_STRING + 8);
	put64(CV_LEAF + 0x100 + 0x40, BASE + 0x2000);
	ck_assert_int_eq(read_err(EMBER_PERL_FRAME_SUB, CV_LEAF), -EBADMSG);
	memset(mem + SIZE - 64, 'y', 64);
	put64(CV_LEAF + 0x100 + 0x40, BASE + SIZE - 64);
	ck_assert_int_eq(read_err(EMBER_PERL_FRAME_SUB, CV_LEAF), -EFAULT);
}
END_TEST

START_TEST(test_cstring_pages)
{
	char *s;

	setup();
	/* A string ending 3 bytes before the end of memory (a page boundary) is read whole. */
	strcpy((char *)mem + SIZE - 3, "ab");
	ck_assert_int_eq(ember_perl_read_cstring(fuzz_mem_read, &M, BASE + SIZE - 3, 100, &s), 0);
	ck_assert_str_eq(s, "ab");
	free(s);
	ck_assert_int_eq(ember_perl_read_cstring(fuzz_mem_read, &M, FILE_STR, 5, &s), -EBADMSG);
	ck_assert_int_eq(
	    ember_perl_read_cstring(fuzz_mem_read, &M, FILE_STR, EMBER_PERL_MAX_STRING + 1, &s),
	    -EINVAL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("perl_frames");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_subs);
	tcase_add_test(tc, test_renamed_stash);
	tcase_add_test(tc, test_eval_and_main);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_cstring_pages);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
