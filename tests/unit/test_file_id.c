// SPDX-License-Identifier: Apache-2.0
/* The OTel htlhash. Expected values come from Python's hashlib:
 * sha256(first 4096 + last 4096 + be64(len))[:16]. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolizer/symbols/file_id.h"

static int temp_file(const unsigned char *data, size_t len)
{
	char path[] = "/tmp/ember-file-id-XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	return fd;
}

START_TEST(htlhash_matches_reference)
{
	unsigned char big[10000], small[100];
	struct ember_file_id id;
	int fd;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i & 0xff);
	for (size_t i = 0; i < sizeof(small); i++)
		small[i] = (unsigned char)((i * 7) & 0xff);
	fd = temp_file(big, sizeof(big));
	ck_assert_int_eq(ember_file_id_fd(fd, &id), 0);
	ck_assert_str_eq(id.hash_hex, "978d635ecf2bdf15d106915edbfcbc6f");
	ck_assert_uint_eq(id.size, sizeof(big));
	close(fd);
	ck_assert_int_eq(ember_file_id_mem(big, sizeof(big), &id), 0);
	ck_assert_str_eq(id.hash_hex, "978d635ecf2bdf15d106915edbfcbc6f");
	/* Smaller than one chunk: the whole file twice. */
	fd = temp_file(small, sizeof(small));
	ck_assert_int_eq(ember_file_id_fd(fd, &id), 0);
	ck_assert_str_eq(id.hash_hex, "ff9061fbd8a92dc691e14343e5fc1bd2");
	close(fd);
}
END_TEST

START_TEST(not_a_regular_file)
{
	struct ember_file_id id;
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_lt(ember_file_id_fd(p[0], &id), 0);
	close(p[0]);
	close(p[1]);
}
END_TEST

static Suite *file_id_suite(void)
{
	Suite *s = suite_create("file_id");
	TCase *tc = tcase_create("file_id");

	tcase_add_test(tc, htlhash_matches_reference);
	tcase_add_test(tc, not_a_regular_file);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(file_id_suite)
