// SPDX-License-Identifier: Apache-2.0
/*
 * node's files as the V8 reader reads them (symbolizer/interp/v8_elf.c,
 * elf_image.c's FDE gap), on every node live_node.h finds: the layout is
 * accepted with V8's own version; the builtins a build without their symbols
 * would be found by (the first stretch without unwind tables after the
 * snapshot) cover the builtins the symbols give, with at most 64 KiB of padding;
 * and a layout with one constant missing or impossible, or of V8 14, is
 * refused, naming it.
 */
#include <check.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/interp/v8_elf.h"
#include "tests/unit/live_node.h"

struct gap {
	uint64_t blob, size, start, end;
	int err;
};

static int read_gap(Elf *elf, void *out)
{
	static const char *const names[] = {"_ZN2v88internal8Snapshot19DefaultSnapshotBlobEv",
	                                    "v8_Default_embedded_blob_code_data_",
	                                    "v8_Default_embedded_blob_code_",
	                                    "v8_Default_embedded_blob_code_size_"};
	struct ember_elf_sym syms[4];
	struct ember_elf_segment segs[EMBER_ELF_IMAGE_MAX_SEGMENTS];
	struct ember_elf_image f;
	struct gap *g = out;
	uint32_t nsegs, size = 0;
	int err = ember_elf_image_start(elf, &f, segs, &nsegs, names, 4, syms);

	if (err)
		return err;
	g->blob = syms[1].addr ? syms[1].addr : syms[2].addr;
	if (syms[3].addr)
		ember_elf_image_read(&f, syms[3].addr, &size, sizeof(size));
	g->size = size;
	g->err = ember_elf_fde_gap(&f, syms[0].addr, 64 << 10, 512 << 10, &g->start, &g->end);
	return 0;
}

START_TEST(builtins_found_without_their_symbols)
{
	char nodes[8][PATH_MAX];
	int count = live_node_list(nodes, 8);

	if (!count)
		EMBER_SKIP("no node here (install nodejs, or set EMBER_NODES)");
	for (int i = 0; i < count; i++) {
		struct gap g = {0};
		int fd = open(nodes[i], O_RDONLY | O_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ember_elf_read_fd(fd, read_gap, &g), 0);
		close(fd);
		ck_assert_msg(g.blob && g.size, "%s: no builtins' symbols", nodes[i]);
		ck_assert_msg(!g.err, "%s: no stretch without unwind tables after the snapshot",
		              nodes[i]);
		ck_assert_msg(g.start <= g.blob && g.end >= g.blob + g.size &&
		                  g.end - g.start - g.size < (64 << 10),
		              "%s: stretch %#lx-%#lx, builtins %#lx + %lu", nodes[i],
		              (unsigned long)g.start, (unsigned long)g.end, (unsigned long)g.blob,
		              (unsigned long)g.size);
	}
}
END_TEST

START_TEST(layouts_missing_or_impossible_refused)
{
	char nodes[8][PATH_MAX], why[160];
	int count = live_node_list(nodes, 8);
	struct ember_v8_elf elf;
	struct ember_v8_layout l;
	int fd;

	if (!count)
		EMBER_SKIP("no node here (install nodejs, or set EMBER_NODES)");
	fd = open(nodes[0], O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ember_v8_elf_read(fd, &elf), 0);
	close(fd);
	ck_assert_int_eq(elf.kind, EMBER_V8_ELF_V8);
	ck_assert_int_ge(elf.layout.version[0], 9);
	l = elf.layout;
	ck_assert_int_eq(ember_v8_layout_finish(&l, why, sizeof(why)), 0);
	l = elf.layout;
	l.type_sfi = EMBER_V8_ABSENT;
	ck_assert_int_eq(ember_v8_layout_finish(&l, why, sizeof(why)), -ENOTSUP);
	ck_assert_msg(strstr(why, "SharedFunctionInfo"), "%s", why);
	l = elf.layout;
	l.fp_function = 8; /* above the frame pointer: no slot of a frame */
	ck_assert_int_eq(ember_v8_layout_finish(&l, why, sizeof(why)), -ENOTSUP);
	ck_assert_msg(strstr(why, "off_fp_function"), "%s", why);
	l = elf.layout;
	l.fn_shared = 4; /* not a pointer's place */
	ck_assert_int_eq(ember_v8_layout_finish(&l, why, sizeof(why)), -ENOTSUP);
	l = elf.layout;
	l.version[0] = 14;
	ck_assert_int_eq(ember_v8_layout_finish(&l, why, sizeof(why)), -ENOTSUP);
	ck_assert_msg(strstr(why, "9 to 13"), "%s", why);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("v8_elf");
	TCase *t = tcase_create("files");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, builtins_found_without_their_symbols);
	tcase_add_test(t, layouts_missing_or_impossible_refused);
	suite_add_tcase(s, t);
	return s;
}

EMBER_CHECK_MAIN(suite)
