// SPDX-License-Identifier: Apache-2.0
/*
 * CPython layouts: the built-in table (every walk field inside the windows
 * the collector allows), _Py_DebugOffsets as 3.13.0 and 3.14 describe
 * themselves and as a hostile file could, and the x86-64 decoders on the
 * machine code of real interpreters and glibc.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check_main.h"
#include "symbolizer/interp/python_elf.h"
#include "symbolizer/interp/python_layout.h"

static void assert_walkable(const struct ember_py_layout *l)
{
	unsigned int instr = l->instr == EMBER_PY_INSTR_LASTI ? 4 : 8;

	ck_assert_uint_le(l->frame_read, EMBER_PY_WINDOW);
	ck_assert_uint_le(l->code_read, EMBER_PY_WINDOW);
	ck_assert_uint_le(l->frame_code + 8u, l->frame_read);
	ck_assert_uint_le(l->frame_back + 8u, l->frame_read);
	ck_assert_uint_le(l->frame_instr + instr, l->frame_read);
	ck_assert_uint_le(l->frame_entry + 1u, l->frame_read);
	ck_assert_uint_le(l->code_argcount + 4u, l->code_read);
	ck_assert_uint_le(l->code_firstlineno + 4u, l->code_read);
	ck_assert_uint_le(l->code_name + 8u, l->code_read);
	ck_assert_uint_le(l->code_filename + 8u, l->code_read);
	ck_assert_uint_le(l->code_read, l->code_size);
	ck_assert_uint_le(l->code_linetable + 8u, l->code_size);
	ck_assert_uint_le(l->code_size, EMBER_PY_MAX_CODE);
	ck_assert(l->chain && l->chain < EMBER_PY_CHAIN_MAX);
	ck_assert(l->entry && l->entry < EMBER_PY_ENTRY_MAX);
	ck_assert(l->lines >= EMBER_PY_LINES_LNOTAB && l->lines <= EMBER_PY_LINES_LOCATIONS);
}

START_TEST(test_table_versions)
{
	struct ember_py_layout l;

	for (unsigned int minor = 6; minor <= 12; minor++) {
		ck_assert_int_eq(ember_py_layout_for(3, minor, &l), 0);
		ck_assert_uint_eq(l.minor, minor);
		assert_walkable(&l);
		/* 3.7-3.12 find the thread state through _PyRuntime's key; 3.6 through autoTLSkey.
		 */
		ck_assert(minor == 6 ? !l.runtime_tss : l.runtime_tss > 0);
	}
	ck_assert_int_eq(ember_py_layout_for(3, 5, &l), -ENOTSUP);
	ck_assert_int_eq(ember_py_layout_for(3, 13, &l), -ENOTSUP); /* it describes itself */
	ck_assert_int_eq(ember_py_layout_for(2, 7, &l), -ENOTSUP);
	ck_assert_int_eq(ember_py_layout_for(3, 11, &l), 0);
	ck_assert_uint_eq(l.chain, EMBER_PY_CHAIN_CFRAME);
	ck_assert_uint_eq(l.entry, EMBER_PY_ENTRY_FLAG);
	ck_assert_uint_eq(l.runtime_tss, 592);
}
END_TEST

/* _Py_DebugOffsets as CPython 3.13.0 fills it in (printed from its _PyRuntime). */
static size_t debug_313(uint8_t *buf)
{
	static const struct {
		uint16_t at;
		uint64_t v;
	} f[] = {
	    {8, 0x030d00f0}, {16, 0},   {152, 304}, {184, 72},  {224, 80},  {232, 8},   {240, 0},
	    {248, 56},       {256, 72}, {264, 70},  {272, 208}, {280, 112}, {288, 120}, {296, 128},
	    {304, 136},      {312, 68}, {320, 52},  {344, 200}, {352, 16},  {360, 8},   {512, 40},
	    {520, 16},       {528, 32}, {536, 64},  {544, 32},  {552, 16},  {560, 40},
	};

	memset(buf, 0, EMBER_PY_DEBUG_OFFSETS_BYTES);
	memcpy(buf, "xdebugpy", 8);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		memcpy(buf + f[i].at, &f[i].v, 8);
	return 584;
}

static void put(uint8_t *buf, size_t at, uint64_t v)
{
	memcpy(buf + at, &v, 8);
}

START_TEST(test_debug_offsets_313)
{
	uint8_t buf[EMBER_PY_DEBUG_OFFSETS_BYTES];
	struct ember_py_layout l;
	size_t len = debug_313(buf);

	ck_assert_int_eq(ember_py_layout_from_debug(buf, len, &l), 0);
	assert_walkable(&l);
	ck_assert_uint_eq(l.minor, 13);
	ck_assert_uint_eq(l.chain, EMBER_PY_CHAIN_DIRECT);
	ck_assert_uint_eq(l.tstate_frame, 72);
	ck_assert_uint_eq(l.frame_code, 0);
	ck_assert_uint_eq(l.frame_back, 8);
	ck_assert_uint_eq(l.frame_instr, 56);
	ck_assert_uint_eq(l.frame_entry, 70);
	ck_assert_uint_eq(l.entry_owner, 3);
	ck_assert_uint_eq(l.code_argcount, 52);
	ck_assert_uint_eq(l.code_firstlineno, 68);
	ck_assert_uint_eq(l.code_qualname, 128);
	ck_assert_uint_eq(l.code_linetable, 136);
	ck_assert_uint_eq(l.code_units, 200);
	ck_assert_uint_eq(l.code_size, 208);
	ck_assert_uint_eq(l.str_ascii_data, 40);
	ck_assert_uint_eq(l.str_compact_data, 56);
	ck_assert_uint_eq(l.bytes_data, 32);
	/* The same as the table would say for 3.12 where 3.12 and 3.13 agree. */
	ck_assert_int_eq(ember_py_layout_for(3, 12, &(struct ember_py_layout){0}), 0);
}
END_TEST

START_TEST(test_debug_offsets_314)
{
	uint8_t buf[EMBER_PY_DEBUG_OFFSETS_BYTES] = "xdebugpy";
	struct ember_py_layout l;

	/* The 3.14 description: the same values at their new places. */
	put(buf, 8, 0x030e00f0);
	put(buf, 208, 72);                                          /* current_frame */
	put(buf, 248, 80), put(buf, 256, 8), put(buf, 264, 0);      /* frame size, previous, exec */
	put(buf, 272, 56), put(buf, 288, 74);                       /* instr_ptr, owner */
	put(buf, 312, 216), put(buf, 320, 112), put(buf, 328, 120); /* code size, filename, name */
	put(buf, 336, 128), put(buf, 344, 136), put(buf, 352, 68);  /* qualname, linetable, first */
	put(buf, 360, 52), put(buf, 384, 208);                      /* argcount, adaptive */
	put(buf, 400, 16), put(buf, 408, 8);                        /* PyObject */
	put(buf, 600, 16), put(buf, 608, 32);                       /* bytes */
	put(buf, 624, 32), put(buf, 632, 16), put(buf, 640, 40);    /* str */
	ck_assert_int_eq(ember_py_layout_from_debug(buf, 760, &l), 0);
	assert_walkable(&l);
	ck_assert_uint_eq(l.minor, 14);
	ck_assert_uint_eq(l.frame_entry, 74);
	ck_assert_uint_eq(l.code_units, 208);
	/* A later version describing itself the same way is read the same way. */
	put(buf, 8, 0x030f00a1);
	ck_assert_int_eq(ember_py_layout_from_debug(buf, 760, &l), 0);
	ck_assert_uint_eq(l.minor, 15);
	ck_assert_uint_eq(l.frame_entry, 74);
	/* Too short for its description. */
	ck_assert_int_eq(ember_py_layout_from_debug(buf, 700, &l), -EBADMSG);
}
END_TEST

START_TEST(test_debug_offsets_hostile)
{
	uint8_t buf[EMBER_PY_DEBUG_OFFSETS_BYTES];
	struct ember_py_layout l;
	size_t len = debug_313(buf);

	buf[0] = 'X';
	ck_assert_int_eq(ember_py_layout_from_debug(buf, len, &l), -ENOENT);
	debug_313(buf);
	ck_assert_int_eq(ember_py_layout_from_debug(buf, 16, &l), -ENOENT);
	ck_assert_int_eq(ember_py_layout_from_debug(buf, 500, &l), -EBADMSG);
	put(buf, 16, 1); /* free-threaded */
	ck_assert_int_eq(ember_py_layout_from_debug(buf, len, &l), -ENOTSUP);
	debug_313(buf);
	put(buf, 8, 0x030c00f0); /* 3.12 has no description */
	ck_assert_int_eq(ember_py_layout_from_debug(buf, len, &l), -ENOTSUP);
	debug_313(buf);
	put(buf, 184, 1u << 20); /* an offset no struct has */
	ck_assert_int_eq(ember_py_layout_from_debug(buf, len, &l), -EBADMSG);
	debug_313(buf);
	put(buf, 288, 124); /* co_name beyond the walker's window */
	ck_assert_int_eq(ember_py_layout_from_debug(buf, len, &l), -ENOTSUP);
	debug_313(buf);
	put(buf, 264, 4000); /* owner beyond the frame window */
	ck_assert_int_eq(ember_py_layout_from_debug(buf, len, &l), -ENOTSUP);
	debug_313(buf);
	put(buf, 272, 100); /* a code object smaller than its own fields */
	ck_assert_int_eq(ember_py_layout_from_debug(buf, len, &l), -EBADMSG);
	debug_313(buf);
	put(buf, 560, 8); /* a str header smaller than its fields */
	ck_assert_int_eq(ember_py_layout_from_debug(buf, len, &l), -EBADMSG);
}
END_TEST

/* PyGILState_GetThisThreadState as compiled in real interpreters. */
START_TEST(test_decode_tss_key)
{
	/* pyenv 3.7 (shared library): _PyRuntime through the GOT, lea 0x5e0(%rax), %rdi. */
	static const uint8_t py37[] = {0x48, 0x8b, 0x05, 0xe1, 0xee, 0x11, 0x00, 0x48, 0x83, 0xb8,
	                               0xd8, 0x05, 0x00, 0x00, 0x00, 0x74, 0x0f, 0x48, 0x8d, 0xb8,
	                               0xe0, 0x05, 0x00, 0x00, 0xe9, 0x73, 0xee, 0xed, 0xff};
	/* pyenv 3.12: lea 0x608(%rax), %rbx. */
	static const uint8_t py312[] = {0x48, 0x8b, 0x05, 0xc9, 0xc0, 0x26, 0x00, 0x53,
	                                0x48, 0x8d, 0x98, 0x08, 0x06, 0x00, 0x00, 0x48,
	                                0x89, 0xdf, 0xe8, 0xd9, 0x21, 0xe3, 0xff};
	/* Debian's static 3.11: cmpq $0, _PyRuntime+0x248(%rip); mov _PyRuntime+0x254(%rip), %edi.
	 */
	static const uint8_t deb311[] = {0x48, 0x83, 0x3d, 0x50, 0x3d, 0x56, 0x00, 0x00, 0x0f,
	                                 0x84, 0x1f, 0xc8, 0xf2, 0xff, 0x8b, 0x3d, 0x50, 0x3d,
	                                 0x56, 0x00, 0xe9, 0xa7, 0x8a, 0xf2, 0xff};
	/* pyenv 3.6: mov autoTLSkey(%rip), %edi. */
	static const uint8_t py36[] = {0x48, 0x83, 0x3d, 0x70, 0xa1, 0x18, 0x00, 0x00, 0x74,
	                               0x0e, 0x8b, 0x3d, 0x80, 0x81, 0x13, 0x00, 0xe9};
	uint64_t key = 0;

	ck_assert_int_eq(
	    ember_py_decode_tss_key(py37, sizeof(py37), 0x187d90, 0x32fe20, 1520, &key), 0);
	ck_assert_uint_eq(key, 0x32fe20 + 1504 + 4);
	ck_assert_int_eq(
	    ember_py_decode_tss_key(py312, sizeof(py312), 0x2d7c30, 0x643340, 0x704a8, &key), 0);
	ck_assert_uint_eq(key, 0x643340 + 1544 + 4);
	ck_assert_int_eq(
	    ember_py_decode_tss_key(deb311, sizeof(deb311), 0x4f7c30, 0xa5b740, 0x28b20, &key), 0);
	ck_assert_uint_eq(key, 0xa5b740 + 592 + 4);
	ck_assert_int_eq(ember_py_decode_tss_key(py36, sizeof(py36), 0x174d70, 0, 0, &key), 0);
	ck_assert_uint_eq(key, 0x2acf00);
	/* A key outside _PyRuntime is no key: a small _PyRuntime refuses 3.12's offset. */
	ck_assert_int_eq(
	    ember_py_decode_tss_key(py312, sizeof(py312), 0x2d7c30, 0x643340, 0x600, &key),
	    -ENOENT);
	ck_assert_int_eq(ember_py_decode_tss_key(py312, 10, 0x2d7c30, 0x643340, 0x704a8, &key),
	                 -ENOENT);
}
END_TEST

START_TEST(test_decode_tsd)
{
	/* glibc 2.36's pthread_getspecific. */
	static const uint8_t glibc[] = {0x83, 0xff, 0x1f, 0x77, 0x3b, 0x89, 0xf8, 0x48, 0x83, 0xc0,
	                                0x31, 0x48, 0xc1, 0xe0, 0x04, 0x64, 0x48, 0x03, 0x04, 0x25,
	                                0x10, 0x00, 0x00, 0x00, 0x48, 0x8b, 0x50, 0x08, 0x48, 0x85};
	uint8_t other[sizeof(glibc)];
	uint16_t off = 0;

	ck_assert_int_eq(ember_elf_glibc_tsd(glibc, sizeof(glibc), &off), 0);
	ck_assert_uint_eq(off, 0x318);
	memcpy(other, glibc, sizeof(other));
	other[17] = 0x2b; /* sub instead of add: not glibc's sequence */
	ck_assert_int_eq(ember_elf_glibc_tsd(other, sizeof(other), &off), -ENOENT);
	ck_assert_int_eq(ember_elf_glibc_tsd(glibc, 20, &off), -ENOENT);
}
END_TEST

START_TEST(test_version_from_path)
{
	unsigned int major = 0, minor = 0;

	ck_assert_int_eq(ember_py_version_from_path("/usr/lib/libpython3.9.so.1.0", &major, &minor),
	                 0);
	ck_assert_uint_eq(major, 3);
	ck_assert_uint_eq(minor, 9);
	ck_assert_int_eq(ember_py_version_from_path("/opt/bin/python3.12", &major, &minor), 0);
	ck_assert_uint_eq(minor, 12);
	ck_assert_int_eq(ember_py_version_from_path("/usr/bin/python3", &major, &minor), -ENOENT);
	ck_assert_int_eq(ember_py_version_from_path("/python3.9/bin/app", &major, &minor), -ENOENT);
	ck_assert_int_eq(ember_py_version_from_path(NULL, &major, &minor), -ENOENT);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("python_layout");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_table_versions);
	tcase_add_test(tc, test_debug_offsets_313);
	tcase_add_test(tc, test_debug_offsets_314);
	tcase_add_test(tc, test_debug_offsets_hostile);
	tcase_add_test(tc, test_decode_tss_key);
	tcase_add_test(tc, test_decode_tsd);
	tcase_add_test(tc, test_version_from_path);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
