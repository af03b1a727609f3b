// SPDX-License-Identifier: Apache-2.0
/*
 * HotSpot's self-description tables (symbolizer/interp/jvm_structs.c) on a
 * fake memory laid out as JDK 17 lays them out (VMStructEntry: 48 bytes,
 * VMTypeEntry: 40): the entry layout read from the exported variables, a
 * not yet started JVM (-EAGAIN), fields, statics and sizes found, pairs not
 * listed left unfound, the first of a pair listed twice kept, entries whose
 * names cannot be read skipped, a table that never ends (-E2BIG), a table
 * whose last chunk crosses the end of memory, and layouts no table has.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "check_main.h"
#include "symbolizer/interp/jvm_structs.h"
#include "tests/fuzz/fuzz_mem.h"

#define BASE    FUZZ_MEM_BASE
#define SIZE    (1u << 20)
#define VARS    (BASE + 0x100)
#define STRUCTS (BASE + 0x1000)
#define TYPES   (BASE + 0x8000)
#define INTS    (BASE + 0xc000)
#define NAMES   (BASE + 0x10000)

static uint8_t mem[SIZE];
static struct fuzz_mem M = {mem, SIZE};
static uint64_t next_name;

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - BASE), &v, 8);
}

/* A copy of s among the names: its address. */
static uint64_t name(const char *s)
{
	uint64_t at = next_name;

	memcpy(mem + (at - BASE), s, strlen(s) + 1);
	next_name += strlen(s) + 1;
	return at;
}

/* VMStructEntry i: {typeName, fieldName, typeString, isStatic, offset, address}. */
static void put_struct(unsigned int i, const char *type, const char *field, uint64_t offset,
                       uint64_t address)
{
	uint64_t e = STRUCTS + 48ull * i;

	put64(e, type ? name(type) : 0);
	put64(e + 8, field ? name(field) : 0);
	put64(e + 16, name("int"));
	put64(e + 24, address != 0);
	put64(e + 32, offset);
	put64(e + 40, address);
}

/* VMTypeEntry i: {typeName, superclassName, isOop/isInteger/isUnsigned, size}. */
static void put_type(unsigned int i, const char *type, uint64_t size)
{
	uint64_t e = TYPES + 40ull * i;

	put64(e, type ? name(type) : 0);
	put64(e + 8, 0);
	put64(e + 16, 0);
	put64(e + 24, 0);
	put64(e + 32, size);
}

/* The variables: gHotSpotVMStructs and its entries' layout, then the types', then the int
 * constants'. */
static const struct ember_jvm_table_vars SV = {VARS,      VARS + 8,  VARS + 16,
                                               VARS + 24, VARS + 32, VARS + 40};
static const struct ember_jvm_table_vars TV = {VARS + 48, VARS + 56, VARS + 64, 0, VARS + 72, 0};
static const struct ember_jvm_table_vars IV = {VARS + 80, VARS + 88, VARS + 96, 0, VARS + 104, 0};

/* VMIntConstantEntry i: {name, int32 value}. */
static void put_int(unsigned int i, const char *constant, int32_t value)
{
	uint64_t e = INTS + 16ull * i;

	put64(e, constant ? name(constant) : 0);
	put64(e + 8, 0xabcd000000000000ull | (uint32_t)value); /* the padding is not the value */
}

static void setup(void)
{
	static const uint64_t vars[] = {STRUCTS, 48, 0,  8,    32, 40, TYPES,
	                                40,      0,  32, INTS, 16, 0,  8};

	memset(mem, 0, sizeof(mem));
	next_name = NAMES;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		put64(VARS + 8 * i, vars[i]);
	put_struct(0, "CodeBlob", "_name", 24, 0);
	put_struct(1, "CodeBlob", "_frame_size", 40, 0);
	put_struct(2, "CodeCache", "_heaps", 0, 0x7f0000001230);
	put_struct(3, "nmethod", "_compile_id", 200, 0);
	put_struct(4, "CodeBlob", "_name", 999, 0); /* listed twice: the first counts */
	put_struct(5, NULL, NULL, 0, 0);
	put_type(0, "CodeBlob", 112);
	put_type(1, "nmethod", 264);
	put_type(2, NULL, 0);
	put_int(0, "frame::interpreter_frame_method_offset", -3);
	put_int(1, "Method::_caller_sensitive", 1 << 20);
	put_int(2, NULL, 0);
}

static int locate_both(struct ember_jvm_table *s, struct ember_jvm_table *t)
{
	int err = ember_jvm_table_locate(&SV, 8, fuzz_mem_read, &M, s);

	return err ? err : ember_jvm_table_locate(&TV, 8, fuzz_mem_read, &M, t);
}

static void locate(struct ember_jvm_table *s, struct ember_jvm_table *t)
{
	ck_assert_int_eq(locate_both(s, t), 0);
}

START_TEST(the_entry_layout_is_read_from_the_variables)
{
	struct ember_jvm_table s, t;

	locate(&s, &t);
	ck_assert_uint_eq(s.base, STRUCTS);
	ck_assert_uint_eq(s.stride, 48);
	ck_assert_uint_eq(s.field_name, 8);
	ck_assert_uint_eq(s.value, 32);
	ck_assert_uint_eq(s.address, 40);
	ck_assert_uint_eq(t.base, TYPES);
	ck_assert_uint_eq(t.stride, 40);
	ck_assert_uint_eq(t.value, 32);
	ck_assert_uint_eq(t.field_name, EMBER_JVM_NONE);
	ck_assert_uint_eq(t.address, EMBER_JVM_NONE);
	ck_assert_uint_eq(s.value_width, 8);
}
END_TEST

/* The variables are in .bss, zero until the JVM sets them at start-up. */
START_TEST(a_jvm_not_started_yet_is_tried_again)
{
	struct ember_jvm_table s, t;

	put64(SV.stride, 0);
	ck_assert_int_eq(locate_both(&s, &t), -EAGAIN);
	put64(SV.stride, 48);
	put64(SV.base, 0);
	ck_assert_int_eq(locate_both(&s, &t), -EAGAIN);
}
END_TEST

START_TEST(layouts_no_table_has_are_refused)
{
	struct ember_jvm_table s, t;
	struct ember_jvm_table_vars nowhere = TV;

	put64(SV.stride, EMBER_JVM_MAX_STRIDE + 8);
	ck_assert_int_eq(locate_both(&s, &t), -EBADMSG);
	put64(SV.stride, 48);
	put64(SV.value, 44); /* 8 bytes from 44 end past the entry */
	ck_assert_int_eq(locate_both(&s, &t), -EBADMSG);
	put64(SV.value, 32);
	put64(SV.field_name, UINT64_MAX); /* the value that stands for "no such field" */
	ck_assert_int_eq(locate_both(&s, &t), -EBADMSG);
	put64(SV.field_name, 8);
	put64(TV.type_name, UINT64_MAX - 3);
	ck_assert_int_eq(locate_both(&s, &t), -EBADMSG);
	put64(TV.type_name, 0);
	nowhere.value = 0x10; /* below the fake memory */
	ck_assert_int_eq(ember_jvm_table_locate(&nowhere, 8, fuzz_mem_read, &M, &t), -EFAULT);
}
END_TEST

START_TEST(fields_statics_and_sizes_are_found)
{
	static const struct ember_jvm_want want[] = {
	    {"CodeBlob", "_name"},      {"CodeBlob", "_frame_size"}, {"CodeCache", "_heaps"},
	    {"nmethod", "_compile_id"}, {"nmethod", "_method"},      {"Method", "_constMethod"},
	    {"CodeBlob", NULL},
	};
	static const struct ember_jvm_want sizes[] = {
	    {"nmethod", NULL}, {"CodeBlob", NULL}, {"Method", NULL}, {"CodeBlob", "_name"}};
	struct ember_jvm_found f[7], z[4];
	struct ember_jvm_table s, t;

	locate(&s, &t);
	ck_assert_int_eq(ember_jvm_table_read(&s, fuzz_mem_read, &M, want, 7, f), 0);
	ck_assert(f[0].found && !f[0].is_address);
	ck_assert_uint_eq(f[0].value, 24); /* not the later 999 */
	ck_assert(f[1].found);
	ck_assert_uint_eq(f[1].value, 40);
	ck_assert(f[2].found && f[2].is_address);
	ck_assert_uint_eq(f[2].value, 0x7f0000001230);
	ck_assert(f[3].found);
	ck_assert_uint_eq(f[3].value, 200);
	ck_assert(!f[4].found && !f[5].found);
	ck_assert(!f[6].found); /* a size is no struct entry */

	ck_assert_int_eq(ember_jvm_table_read(&t, fuzz_mem_read, &M, sizes, 4, z), 0);
	ck_assert(z[0].found && z[1].found && !z[2].found && !z[3].found);
	ck_assert_uint_eq(z[0].value, 264);
	ck_assert_uint_eq(z[1].value, 112);
}
END_TEST

/* Int constants are 4 bytes, signed (frame slots below fp are negative). */
START_TEST(int_constants_are_sign_extended)
{
	static const struct ember_jvm_want want[] = {
	    {"frame::interpreter_frame_method_offset", NULL},
	    {"Method::_caller_sensitive", NULL},
	    {"frame::sender_sp_offset", NULL}};
	struct ember_jvm_found f[3];
	struct ember_jvm_table t;

	ck_assert_int_eq(ember_jvm_table_locate(&IV, 4, fuzz_mem_read, &M, &t), 0);
	ck_assert_int_eq(ember_jvm_table_read(&t, fuzz_mem_read, &M, want, 3, f), 0);
	ck_assert(f[0].found && f[1].found && !f[2].found);
	ck_assert_int_eq((int64_t)f[0].value, -3);
	ck_assert_uint_eq(f[1].value, 1 << 20);
	/* A 4-byte value whose last byte ends its entry fits; one byte further does not. */
	put64(IV.value, 12);
	ck_assert_int_eq(ember_jvm_table_locate(&IV, 4, fuzz_mem_read, &M, &t), 0);
	put64(IV.value, 13);
	ck_assert_int_eq(ember_jvm_table_locate(&IV, 4, fuzz_mem_read, &M, &t), -EBADMSG);
	put64(IV.value, 8);
	ck_assert_int_eq(ember_jvm_table_locate(&IV, 3, fuzz_mem_read, &M, &t), -EBADMSG);
}
END_TEST

START_TEST(entries_with_unreadable_names_are_skipped)
{
	static const struct ember_jvm_want want[] = {{"CodeBlob", "_frame_size"},
	                                             {"nmethod", "_compile_id"}};
	struct ember_jvm_found f[2];
	struct ember_jvm_table s, t;
	char endless[EMBER_JVM_MAX_NAME + 8];

	/* Entry 1's field name points nowhere; entry 3's type name never ends. */
	put64(STRUCTS + 48 + 8, 0x20);
	memset(endless, 'x', sizeof(endless) - 1);
	endless[sizeof(endless) - 1] = '\0';
	put64(STRUCTS + 3 * 48, name(endless));
	locate(&s, &t);
	ck_assert_int_eq(ember_jvm_table_read(&s, fuzz_mem_read, &M, want, 2, f), 0);
	ck_assert(!f[0].found && !f[1].found);
	/* A name across a page boundary is read from both pages. */
	next_name = NAMES + 0x3000 - 3;
	put64(STRUCTS + 3 * 48, name("nmethod"));
	ck_assert_int_eq(ember_jvm_table_read(&s, fuzz_mem_read, &M, want, 2, f), 0);
	ck_assert(f[1].found);
}
END_TEST

START_TEST(a_table_that_never_ends_is_refused)
{
	static const struct ember_jvm_want want[] = {{"CodeBlob", "_name"}};
	struct ember_jvm_found f[1];
	struct ember_jvm_table s, t;
	uint64_t type = name("Unrelated"), field = name("_x");

	locate(&s, &t);
	for (unsigned int i = 5; i < EMBER_JVM_MAX_ENTRIES + 8; i++) {
		put64(STRUCTS + 48ull * i, type);
		put64(STRUCTS + 48ull * i + 8, field);
	}
	ck_assert_int_eq(ember_jvm_table_read(&s, fuzz_mem_read, &M, want, 1, f), -E2BIG);
}
END_TEST

/* The last entries lie at the very end of readable memory: a whole chunk cannot be read
 * there, entry by entry can. */
START_TEST(a_table_at_the_end_of_memory_is_read_entry_by_entry)
{
	static const struct ember_jvm_want want[] = {{"nmethod", "_compile_id"}};
	struct ember_jvm_found f[1];
	struct ember_jvm_table s, t;
	uint64_t end = BASE + SIZE, at = end - 3 * 48;

	locate(&s, &t);
	memcpy(mem + (at - BASE), mem + (STRUCTS - BASE) + 2 * 48, 3 * 48);
	put64(SV.base, at);
	put64(at + 2 * 48, 0);
	locate(&s, &t);
	ck_assert_int_eq(ember_jvm_table_read(&s, fuzz_mem_read, &M, want, 1, f), 0);
	ck_assert(f[0].found);
	ck_assert_uint_eq(f[0].value, 200);
	/* Without the ending entry the table runs past memory. */
	put64(at + 2 * 48, name("nmethod"));
	ck_assert_int_eq(ember_jvm_table_read(&s, fuzz_mem_read, &M, want, 1, f), -EFAULT);
}
END_TEST

static Suite *jvm_structs_suite(void)
{
	Suite *s = suite_create("jvm_structs");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, the_entry_layout_is_read_from_the_variables);
	tcase_add_test(tc, a_jvm_not_started_yet_is_tried_again);
	tcase_add_test(tc, layouts_no_table_has_are_refused);
	tcase_add_test(tc, fields_statics_and_sizes_are_found);
	tcase_add_test(tc, int_constants_are_sign_extended);
	tcase_add_test(tc, entries_with_unreadable_names_are_skipped);
	tcase_add_test(tc, a_table_that_never_ends_is_refused);
	tcase_add_test(tc, a_table_at_the_end_of_memory_is_read_entry_by_entry);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(jvm_structs_suite)
