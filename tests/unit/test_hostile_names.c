// SPDX-License-Identifier: Apache-2.0
/*
 * Names no well-behaved program has, through every writer: a process whose comm and
 * executable path are not UTF-8 (a process names itself: prctl(PR_SET_NAME) takes any bytes,
 * and a path is any bytes but '/' and NUL), frames named with overlong forms, surrogates,
 * stray continuation bytes and truncated sequences. Every writer's output must be strict
 * UTF-8 (an OTLP backend refuses the whole request for one bad string; pprof's strings are
 * proto3 strings), each bad byte shown as U+FFFD, the rest of the name kept; pprof and OTLP
 * decode with protobuf-c (tests/fuzz/fuzz_common.h's checks, which abort on a finding: each
 * writer runs in a child of its own here, so that the test says which writer failed).
 * And the off-CPU profile's period type, where the formats carry one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "fuzz/fuzz_common.h"
#include "profile_fixture.h"
#include "shared/err.h"

/* Bytes that start no UTF-8 sequence, each kind once. */
static const char *const bad_names[] = {
    "ap\xffp",                  /* a byte UTF-8 never uses */
    "le\300\257af",            /* an overlong '/' */
    "sur\xed\xa0\x80rogate",    /* U+D800 */
    "big\xf4\x90\x80\x80",      /* above U+10FFFF */
    "stray\x80",                /* a continuation byte alone */
    "cut\xe2\x82",              /* a sequence cut short */
};

static uint32_t intern(struct ember_profile *p, const char *s)
{
	uint32_t id;

	ck_assert_int_eq(ember_profile_intern_cstr(p, s, &id), 0);
	return id;
}

/* The fixture, plus a process whose comm, executable and frames are the bad names. */
static void build_hostile(struct ember_profile *p, bool off_cpu)
{
	struct ember_mapping m = {.start = 0x600000, .limit = 0x700000};
	struct ember_sample_key key = {.pid = 30, .tid = 31, .cpu = 0};
	struct ember_process_attrs pa = {.pid = 30};
	uint32_t map, locs[ARRAY_SIZE(bad_names)], stack;
	size_t n = ARRAY_SIZE(bad_names);

	if (off_cpu)
		fixture_build_off_cpu(p);
	else
		fixture_build(p);
	m.filename = intern(p, "/opt/\xff\xfe/lib\xc3(.so");
	ck_assert_int_eq(ember_profile_add_mapping(p, &m, &map), 0);
	for (size_t i = 0; i < n; i++)
		locs[i] = fixture_loc(p, map, 0x600100 + 16 * i, bad_names[i]);
	ck_assert_int_eq(ember_profile_add_stack(p, locs, (uint32_t)n, &stack), 0);
	key.stack = stack;
	key.comm = intern(p, "w\xe9ird\xff");      /* Latin-1, then a byte UTF-8 never uses */
	key.thread_name = intern(p, "t\xed\xbf\xbf"); /* U+DFFF */
	ck_assert_int_eq(ember_profile_add_sample(p, &key, 7, p->start_ns + 1), 0);
	if (off_cpu) {
		key.wait = intern(p, "f\x80utex");
		ck_assert_int_eq(ember_profile_add_off_cpu(p, &key, 5000000000ull), 0);
	}
	pa.exe_path = intern(p, "/usr/bin/w\xe9ird\xff");
	pa.container_id = intern(p, "c0ffee\xff");
	ck_assert_int_eq(ember_profile_set_process(p, &pa), 0);
}

/* Encodes p as f in a child, which checks the output (fuzz_common.h) and exits 0 when it
 * holds, aborting otherwise; the output comes back through out. */
static bool encode_checked(const struct ember_profile *p, enum ember_format f, char **out,
                           size_t *out_len)
{
	char *buf;
	size_t len;
	int status;
	pid_t pid;

	ck_assert_int_eq(ember_format_encode(f, p, &buf, &len), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fuzz_check_format(f, buf, len);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	*out = buf;
	*out_len = len;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

START_TEST(every_writer_writes_utf8)
{
	/* Each U+FFFD (\357\277\275) where a bad byte was. */
	static const char *const kept[] = {"ap\357\277\275p", "le\357\277\275\357\277\275af",
	                                   "stray\357\277\275", "w\357\277\275ird\357\277\275"};
	const char *failed[EMBER_FORMAT_MAX] = {0};
	struct ember_profile p;
	int nfailed = 0;

	build_hostile(&p, _i == 1);
	for (int f = 0; f < EMBER_FORMAT_MAX; f++) {
		char *buf;
		size_t len;

		if (!encode_checked(&p, (enum ember_format)f, &buf, &len)) {
			failed[nfailed++] = ember_format_name((enum ember_format)f);
		} else if (f != EMBER_FORMAT_PPROF) {
			/* The names are still there, each bad byte one U+FFFD (pprof: gzip). */
			for (size_t k = 0; k < ARRAY_SIZE(kept); k++)
				ck_assert_msg(memmem(buf, len, kept[k], strlen(kept[k])) ||
				                  (f == EMBER_FORMAT_HTML &&
				                   memmem(buf, len, "\\ufffd", 6)),
				              "%s output lacks %s", ember_format_name(f), kept[k]);
		}
		free(buf);
	}
	ck_assert_msg(!nfailed, "not UTF-8 (or not decodable): %s%s%s%s", failed[0],
	              nfailed > 1 ? ", " : "", nfailed > 1 ? failed[1] : "",
	              nfailed > 2 ? ", ..." : "");
	ember_profile_free(&p);
}
END_TEST

/* The off-CPU profile's period: pprof holds one period type for all its sample types. */
START_TEST(off_cpu_period_type)
{
	struct ember_profile p;
	Ember__Pprof__Profile *pp;
	uint8_t *raw;
	char *buf;
	size_t len, n;

	fixture_build_off_cpu(&p);
	ck_assert_int_eq(ember_format_encode(EMBER_FORMAT_PPROF, &p, &buf, &len), 0);
	ck_assert_int_eq(ember_gunzip((uint8_t *)buf, len, 1 << 24, &raw, &n), 0);
	pp = ember__pprof__profile__unpack(NULL, n, raw);
	ck_assert_ptr_nonnull(pp);
	ck_assert_ptr_nonnull(pp->period_type);
	ck_assert_str_eq(pp->string_table[pp->period_type->type], "cpu");
	ck_assert_str_eq(pp->string_table[pp->period_type->unit], "nanoseconds");
	ck_assert_int_eq(pp->period, (int64_t)p.period_ns);
	ck_assert_uint_eq(pp->n_sample_type, 3);
	ck_assert_str_eq(pp->string_table[pp->sample_type[2]->type], "off_cpu");
	ember__pprof__profile__free_unpacked(pp, NULL);
	free(raw);
	free(buf);
	ember_profile_free(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hostile_names");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, every_writer_writes_utf8, 0, 2); /* CPU only; with off-CPU */
	tcase_add_test(tc, off_cpu_period_type);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
