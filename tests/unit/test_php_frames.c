// SPDX-License-Identifier: Apache-2.0
/*
 * The PHP frame reader on a fake memory laid out as PHP 8.2 lays it out:
 * methods, functions, closures, internal functions and file-scope code named
 * as PHP names them, the walker's checksum, and refusals (wrong function,
 * class and string types, strings past the cap, pointers nowhere).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "symbolizer/interp/php_frames.h"

#define BASE 0x10000ull
#define SIZE 8192

static uint8_t mem[SIZE];

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE > SIZE || len > SIZE - (addr - BASE))
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - BASE), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(mem + (addr - BASE), &v, 4);
}

/* A zend_string at addr: refcount, type_info (IS_STRING), hash, len, bytes. */
static void put_string(uint64_t addr, const char *s)
{
	put32(addr, 1);
	put32(addr + 4, 6 | 0x10 << 4);
	put64(addr + 0x10, strlen(s));
	memcpy(mem + (addr - BASE) + 0x18, s, strlen(s) + 1);
}

/* A function at addr of type, name (0: none), scope (0: none). */
static void put_func(uint64_t addr, uint8_t type, uint64_t name, uint64_t scope)
{
	mem[addr - BASE] = type;
	put64(addr + 8, name);
	put64(addr + 0x10, scope);
	put64(addr + 0x48, 0x5555deadbeefull); /* handler (internal) or cache_size... */
	put64(addr + 0x58, 0x7000);            /* opcodes */
	put64(addr + 0x98, BASE + 0x200);      /* filename */
	put32(addr + 0xa0, 47);                /* line_start */
	put32(addr + 0xa4, 57);                /* line_end */
}

static struct ember_php_layout layout(void)
{
	struct ember_php_layout l;

	ck_assert_int_eq(ember_php_layout_for(8, 2, &l), 0);
	return l;
}

static void setup(void)
{
	memset(mem, 0, sizeof(mem));
	put_string(BASE + 0x100, "leaf_a");
	put_string(BASE + 0x200, "/srv/app/Cart.php");
	put_string(BASE + 0x300, "Shop\\Cart");
	put_string(BASE + 0x400, "{closure}");
	put_string(BASE + 0x500, "array_map");
	mem[0x600] = 2; /* a user class */
	put64(BASE + 0x608, BASE + 0x300);
}

START_TEST(test_names)
{
	struct ember_php_layout l = layout();
	struct ember_php_func f;

	put_func(BASE + 0x1000, EMBER_PHP_FUNC_USER, BASE + 0x100, BASE + 0x600);
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, BASE + 0x1000, &f), 0);
	ck_assert_str_eq(f.name, "Shop\\Cart::leaf_a");
	ck_assert_str_eq(f.file, "/srv/app/Cart.php");
	ck_assert_int_eq(f.line_start, 47);
	ck_assert_uint_eq(f.checksum,
	                  ember_interp_checksum(0x7000, BASE + 0x200, 57ull << 32 | 47));
	ember_php_func_free(&f);
	/* The file name's text hash (h) is in it: another script of the same shape, its name at
	 * the same address (php-fpm's next request), is another function. */
	put64(BASE + 0x208, 0x9e3779b97f4a7c15ull);
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, BASE + 0x1000, &f), 0);
	ck_assert_uint_eq(f.checksum,
	                  ember_interp_checksum(0x7000, (BASE + 0x200) ^ 0x9e3779b97f4a7c15ull,
	                                        57ull << 32 | 47));
	ember_php_func_free(&f);
	put64(BASE + 0x208, 0);
	/* A closure made outside a class, and file-scope code (named by its file). */
	put_func(BASE + 0x1000, EMBER_PHP_FUNC_USER, BASE + 0x400, 0);
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, BASE + 0x1000, &f), 0);
	ck_assert_str_eq(f.name, "{closure}");
	ember_php_func_free(&f);
	put_func(BASE + 0x1000, EMBER_PHP_FUNC_EVAL, 0, 0);
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, BASE + 0x1000, &f), 0);
	ck_assert_str_eq(f.name, "/srv/app/Cart.php");
	ember_php_func_free(&f);
	/* An internal function: no file, its checksum from name, scope and handler. */
	put_func(BASE + 0x1000, EMBER_PHP_FUNC_INTERNAL, BASE + 0x500, 0);
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, BASE + 0x1000, &f), 0);
	ck_assert_str_eq(f.name, "array_map");
	ck_assert_ptr_null(f.file);
	ck_assert_uint_eq(f.checksum, ember_interp_checksum(BASE + 0x500, 0, 0x5555deadbeefull));
	ember_php_func_free(&f);
}
END_TEST

START_TEST(test_refusals)
{
	struct ember_php_layout l = layout();
	struct ember_php_func f;
	char *s;

	put_func(BASE + 0x1000, 3, BASE + 0x100, 0); /* no such function type */
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, BASE + 0x1000, &f), -EBADMSG);
	put_func(BASE + 0x1000, EMBER_PHP_FUNC_USER, BASE + 0x100, BASE + 0x600);
	mem[0x600] = 7; /* not a class */
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, BASE + 0x1000, &f), -EBADMSG);
	mem[0x600] = 2;
	put32(BASE + 0x104, 7); /* the name is not a string (an array's type) */
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, BASE + 0x1000, &f), -EBADMSG);
	put_string(BASE + 0x100, "leaf_a");
	put64(BASE + 0x110, EMBER_PHP_MAX_STRING + 1); /* longer than the cap */
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, BASE + 0x1000, &f), -EBADMSG);
	put64(BASE + 0x110, SIZE); /* within the cap, past readable memory */
	ck_assert_int_eq(ember_php_read_string(&l, fake_read, NULL, BASE + 0x100, SIZE, &s),
	                 -EINVAL);
	put64(BASE + 0x110, 4000);
	ck_assert_int_eq(
	    ember_php_read_string(&l, fake_read, NULL, BASE + 0x1f00, EMBER_PHP_MAX_STRING, &s),
	    -EBADMSG);
	put_string(BASE + 0x1f00, "x");
	put64(BASE + 0x1f10, 4000);
	ck_assert_int_eq(
	    ember_php_read_string(&l, fake_read, NULL, BASE + 0x1f00, EMBER_PHP_MAX_STRING, &s),
	    -EFAULT);
	/* Pointers nowhere. */
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, 0, &f), -EFAULT);
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, 0x10, &f), -EFAULT);
	put_func(BASE + 0x1000, EMBER_PHP_FUNC_USER, 0x99, 0);
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, BASE + 0x1000, &f), -EFAULT);
	ck_assert_ptr_null(f.name);
	ck_assert_ptr_null(f.file);
	/* A layout whose windows do not fit. */
	l.fn_read = 255;
	ck_assert_int_eq(ember_php_read_func(&l, fake_read, NULL, BASE + 0x1000, &f), -EINVAL);
}
END_TEST

START_TEST(test_nul_bytes)
{
	struct ember_php_layout l = layout();
	char *s;

	put_string(BASE + 0x700, "a");
	memcpy(mem + 0x718, "a\0b", 4);
	put64(BASE + 0x710, 3);
	ck_assert_int_eq(
	    ember_php_read_string(&l, fake_read, NULL, BASE + 0x700, EMBER_PHP_MAX_STRING, &s), 0);
	ck_assert_str_eq(s, "a?b");
	free(s);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("php_frames");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_nul_bytes);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
