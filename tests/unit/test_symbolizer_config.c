// SPDX-License-Identifier: Apache-2.0
/* ember-symbolizer's configuration: every mode's needs, every field's bounds. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "bpf/interp.h"
#include "symbolizer/config.h"
#include "symbolizer/profile/top.h"

static struct ember_symbolizer_config good, c;
static int fds[3];

static void setup(void)
{
	for (size_t i = 0; i < 3; i++) {
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

		fds[i] = fcntl(fd, F_DUPFD_CLOEXEC, 20);
		close(fd);
		ck_assert_int_ge(fds[i], 20);
	}
	memset(&good, 0, sizeof(good));
	good.hdr = (struct ember_config_hdr){EMBER_CONFIG_MAGIC, EMBER_SYMBOLIZER_CONFIG_VERSION,
	                                     sizeof(good), EMBER_CONFIG_SYMBOLIZER};
	good.mode = EMBER_SYMBOLIZER_RECORD;
	good.log_level = 2;
	good.interpreters = 1u << 1;
	good.noutputs = 1;
	good.outputs[0] = (struct ember_symbolizer_file){fds[0], EMBER_FORMAT_HTML, "p.html"};
	c = good;
}

static void teardown(void)
{
	for (size_t i = 0; i < 3; i++)
		close(fds[i]);
}

static bool refused(const char *field)
{
	const char *why = NULL;
	int err = ember_symbolizer_config_check(&c, &why);

	c = good;
	ck_assert_ptr_nonnull(why);
	ck_assert_msg(err == -EINVAL && strstr(why, field), "'%s' for '%s' (%d)", why, field, err);
	return true;
}

START_TEST(each_mode_passes_with_what_it_needs)
{
	const char *why;

	ck_assert_int_eq(ember_symbolizer_config_check(&c, &why), 0);
	c.mode = EMBER_SYMBOLIZER_DAEMON;
	c.noutputs = 0;
	strcpy(c.connect, "/run/ember/collector.sock");
	c.output_dir_fd = fds[1];
	c.nformats = 1;
	c.interval_ms = 60000;
	ck_assert_int_eq(ember_symbolizer_config_check(&c, &why), 0);
	c = good;
	c.mode = EMBER_SYMBOLIZER_DIFF;
	c.ninputs = 2;
	c.inputs[0] = (struct ember_symbolizer_file){fds[1], 0, "a.pb.gz"};
	c.inputs[1] = (struct ember_symbolizer_file){fds[2], 0, "b.pb.gz"};
	ck_assert_int_eq(ember_symbolizer_config_check(&c, &why), 0);
	c.mode = EMBER_SYMBOLIZER_TOP;
	c.ninputs = 1;
	c.noutputs = 0;
	c.top_rows = 20;
	c.top_order = EMBER_TOP_BY_TOTAL;
	ck_assert_int_eq(ember_symbolizer_config_check(&c, &why), 0);
}
END_TEST

START_TEST(fields_out_of_bounds_are_refused)
{
	c.mode = EMBER_SYMBOLIZER_MODE_MAX;
	refused("mode");
	c.log_level = 9;
	refused("log_level");
	c.view = 3;
	refused("view");
	c.interpreters = 1; /* bit 0 is no runtime */
	refused("interpreters");
	c.interpreters = 1u << EMBER_RUNTIME_MAX; /* one past the last */
	refused("interpreters");
	c.memory_budget = 1u << 20;
	refused("memory_budget");
	c.cache_bytes = 1;
	refused("cache_bytes");
	c.outputs[0].format = EMBER_FORMAT_MAX;
	refused("outputs");
	c.outputs[0].fd = 2;
	refused("outputs");
	memset(c.outputs[0].path, 'x', sizeof(c.outputs[0].path));
	refused("outputs");
	c.progress = 2;
	refused("progress");
	memset(c.service_name, 'x', sizeof(c.service_name));
	refused("service_name");
	c.export = 1; /* an export configuration that was never filled in */
	refused("export_cfg");
}
END_TEST

START_TEST(modes_refuse_what_is_not_theirs)
{
	c.connect[0] = '/';
	refused("connect");
	c.keep = 2000000;
	refused("keep");
	c.interval_ms = 5000;
	refused("interval_ms");
	c.stats = 1;
	refused("stats");
	c.ninputs = 1;
	c.inputs[0] = (struct ember_symbolizer_file){fds[1], 0, "in"};
	refused("inputs");
	c.mode = EMBER_SYMBOLIZER_DIFF; /* one input, and its output not HTML */
	c.ninputs = 1;
	c.inputs[0] = (struct ember_symbolizer_file){fds[1], 0, "in"};
	refused("inputs");
	c.mode = EMBER_SYMBOLIZER_REPORT;
	c.ninputs = 1;
	c.inputs[0] = (struct ember_symbolizer_file){fds[1], 0, "in"};
	c.noutputs = 0;
	refused("outputs");
	c.mode = EMBER_SYMBOLIZER_TOP;
	c.ninputs = 1;
	c.inputs[0] = (struct ember_symbolizer_file){fds[1], 0, "in"};
	c.noutputs = 0;
	refused("top_rows");
	c.mode = EMBER_SYMBOLIZER_DAEMON;
	c.noutputs = 0;
	refused("connect");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("symbolizer_config");
	TCase *tc = tcase_create("symbolizer_config");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, each_mode_passes_with_what_it_needs);
	tcase_add_test(tc, fields_out_of_bounds_are_refused);
	tcase_add_test(tc, modes_refuse_what_is_not_theirs);
	suite_add_tcase(s, tc);
	return s;
}

EMBER_CHECK_MAIN(suite)
