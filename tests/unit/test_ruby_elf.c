// SPDX-License-Identifier: Apache-2.0
/*
 * What ember reads from a Ruby interpreter's files: the decoders on the
 * machine code of Debian 12's glibc 2.36 and libruby 3.1.2 (bytes copied from
 * objdump, the addresses they were at), and the whole of that libruby when
 * it is installed (scripts/install-deps.sh installs it for the tests).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/interp/ruby_elf.h"

#define DEBIAN_LIBRUBY "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2"
#define DEBIAN_LD      "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"

START_TEST(test_decode_dtv)
{
	/* __tls_get_addr, glibc 2.36: mov %fs:0x8,%rdx; ...; shl $4,%rax; mov (%rdx,%rax),%rax */
	static const uint8_t glibc[] = {0x64, 0x48, 0x8b, 0x14, 0x25, 0x08, 0x00, 0x00, 0x00, 0x48,
	                                0x8b, 0x05, 0xf8, 0xfb, 0x01, 0x00, 0x48, 0x39, 0x02, 0x75,
	                                0x16, 0x48, 0x8b, 0x07, 0x48, 0xc1, 0xe0, 0x04, 0x48, 0x8b,
	                                0x04, 0x02, 0x48, 0x83, 0xf8, 0xff, 0x74, 0x05, 0xc3};
	uint8_t code[sizeof(glibc)];
	uint16_t off = 0;
	uint8_t shift = 0;

	ck_assert_int_eq(ember_elf_decode_dtv(glibc, sizeof(glibc), &off, &shift), 0);
	ck_assert_uint_eq(off, 8);
	ck_assert_uint_eq(shift, 4);
	/* The shift must come after the vector's load; the load must be near the thread pointer. */
	ck_assert_int_eq(ember_elf_decode_dtv(glibc + 9, sizeof(glibc) - 9, &off, &shift), -ENOENT);
	memcpy(code, glibc, sizeof(code));
	code[7] = 0x10; /* %fs:0x100008: no thread control block is that large */
	ck_assert_int_eq(ember_elf_decode_dtv(code, sizeof(code), &off, &shift), -ENOENT);
	memcpy(code, glibc, sizeof(code));
	code[27] = 0; /* shl $0 */
	ck_assert_int_eq(ember_elf_decode_dtv(code, sizeof(code), &off, &shift), -ENOENT);
}
END_TEST

START_TEST(test_decode_symbols)
{
	/* libruby 3.1.2 at 0x206c36, rb_id2str's target: cmp %edi,0x1a8571(%rip) (the symbol
	 * table's last id, 0x3af1c0); mov 0x1a8578(%rip),%rdi (its ids, 0x3af1d0). */
	static const uint8_t ruby[] = {0x4c, 0x8b, 0x65, 0x00, 0x4d, 0x85, 0xe4, 0x0f, 0x84,
	                               0x9d, 0x00, 0x00, 0x00, 0x31, 0xed, 0x85, 0xff, 0x74,
	                               0x67, 0x39, 0x3d, 0x71, 0x85, 0x1a, 0x00, 0x72, 0x5f,
	                               0x48, 0x8b, 0x3d, 0x78, 0x85, 0x1a, 0x00, 0x89, 0xde};
	uint64_t symbols = 0;

	ck_assert_int_eq(ember_rb_decode_symbols(ruby, sizeof(ruby), 0x206c36, 0x10, &symbols), 0);
	ck_assert_uint_eq(symbols, 0x3af1c0);
	/* A layout whose ids lie elsewhere in the table refuses the match. */
	ck_assert_int_eq(ember_rb_decode_symbols(ruby, sizeof(ruby), 0x206c36, 0x18, &symbols),
	                 -ENOENT);
	ck_assert_int_eq(ember_rb_decode_symbols(ruby, 25, 0x206c36, 0x10, &symbols), -ENOENT);
}
END_TEST

/*
 * Debian 12's two libruby 3.1.2 builds, by build id: vm_exec_core (objdump: the target of
 * rb_vm_exec's first call; readelf: its .eh_frame FDE), rb_vm_exec (its symbol),
 * ruby_current_ec's DTPMOD64 slot (readelf -r) and the symbol table (rb_id2str's target).
 */
static const struct debian_build {
	const char *package, *build_id;
	uint64_t core[2], exec[2], slot, symbols;
} debian_builds[] = {
    {"3.1.7+really3.1.2-0+deb12u1, bookworm-security",
     "862794fba1ac9d77263f555b39818ec3baacbeb8",
     {0x24ebd0, 0x253047},
     {0x253060, 0x253bca},
     0x3aea48,
     0x3af1c0},
    {"3.1.2-7+deb12u1, bookworm",
     "803542d97ea70c8f19d5fb7f9fd3b828e3e9ada4",
     {0x24e160, 0x2525d7},
     {0x2525f0, 0x25315a},
     0x3ada48,
     0x3ae1c0},
};

/* The GNU build id of the file at path, as hex, into out (41 bytes); 0 or -ENOENT. */
static int build_id_of(const char *path, char *out)
{
	char cmd[512], line[256];
	FILE *f;
	int found = -ENOENT;

	snprintf(cmd, sizeof(cmd), "readelf -n %s 2>/dev/null", path);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, " Build ID: %40s", out) == 1)
			found = 0;
	if (f)
		pclose(f);
	return found;
}

START_TEST(test_debian_libruby)
{
	const struct debian_build *b = NULL;
	struct ember_rb_elf e;
	char id[41] = "";
	int fd = open(DEBIAN_LIBRUBY, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		EMBER_SKIP("%s is not installed (scripts/install-deps.sh installs ruby3.1)",
		           DEBIAN_LIBRUBY);
	ck_assert_int_eq(ember_rb_elf_read(fd, &e), 0);
	close(fd);
	ck_assert_msg(e.kind == EMBER_RB_ELF_RUBY, "libruby not readable: %s", e.why);
	ck_assert_uint_eq(e.layout.major, 3);
	ck_assert_uint_eq(e.layout.minor, 1);
	ck_assert_uint_eq(e.tls_offset, 8);
	build_id_of(DEBIAN_LIBRUBY, id);
	for (size_t i = 0; i < sizeof(debian_builds) / sizeof(debian_builds[0]); i++)
		if (!strcmp(id, debian_builds[i].build_id))
			b = &debian_builds[i];
	if (b) {
		ck_assert_uint_eq(e.loop[0][0], b->core[0]);
		ck_assert_uint_eq(e.loop[0][1], b->core[1]);
		ck_assert_uint_eq(e.loop[1][0], b->exec[0]);
		ck_assert_uint_eq(e.loop[1][1], b->exec[1]);
		ck_assert_uint_eq(e.modid_slot, b->slot);
		ck_assert_uint_eq(e.global_symbols, b->symbols);
	} else {
		/* Another build: what holds for any (the walker's integration test checks it). */
		fprintf(stderr, "test_ruby_elf: libruby build %s is not one of the known ones\n",
		        id);
		ck_assert_uint_gt(e.loop[0][1] - e.loop[0][0], 4096);
		ck_assert(e.loop[0][1] <= e.loop[1][0] || e.loop[0][0] >= e.loop[1][1]);
		ck_assert_uint_ne(e.modid_slot, 0);
		ck_assert_uint_ne(e.global_symbols, 0);
	}
	ck_assert(!e.has_dtv);
	fd = open(DEBIAN_LD, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ember_rb_elf_read(fd, &e), 0);
	close(fd);
	ck_assert_uint_eq(e.kind, EMBER_RB_ELF_OTHER);
	ck_assert(e.has_dtv);
	ck_assert_uint_eq(e.dtv_offset, 8);
	ck_assert_uint_eq(e.dtv_shift, 4);
}
END_TEST

START_TEST(test_not_elf)
{
	static const uint8_t junk[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
	struct ember_rb_elf e;

	ck_assert_int_eq(ember_rb_elf_read_mem(junk, sizeof(junk), &e), -ENOEXEC);
	ck_assert_int_eq(ember_rb_elf_read_mem(junk, 3, &e), -ENOEXEC);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ruby_elf");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_decode_dtv);
	tcase_add_test(tc, test_decode_symbols);
	tcase_add_test(tc, test_debian_libruby);
	tcase_add_test(tc, test_not_elf);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
