// SPDX-License-Identifier: Apache-2.0
#include "shared/log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * The logger is the one piece of process-wide state: every module logs, and
 * threading a logger through every call would obscure the code more than it
 * helps. It is configured once at start-up.
 */
static struct {
	char tag[32];
	enum ember_log_level max_level;
	void (*before)(void);
} logger = {"ember", EMBER_LOG_INFO, NULL};

void ember_log_init(const char *tag, enum ember_log_level max_level)
{
	snprintf(logger.tag, sizeof(logger.tag), "%s", tag);
	logger.max_level = max_level;
}

static const char *const level_names[] = {"error", "warning", "info", "debug"};

void ember_log_set_level(enum ember_log_level max_level)
{
	logger.max_level = max_level;
}

enum ember_log_level ember_log_get_level(void)
{
	return logger.max_level;
}

void ember_log_set_before_hook(void (*hook)(void))
{
	logger.before = hook;
}

/* One line; err (a negative errno, or 0) is what %m in fmt prints. */
static void log_line(enum ember_log_level level, int err, const char *fmt, va_list ap)
{
	char line[1024];
	int n;

	if (logger.before)
		logger.before();
	n = snprintf(line, sizeof(line), "%s: %s%s", logger.tag,
	             level == EMBER_LOG_INFO ? "" : level_names[level],
	             level == EMBER_LOG_INFO ? "" : ": ");
	if (n < 0)
		return;
	if (err)
		errno = -err;
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	n = (int)strnlen(line, sizeof(line) - 2);
	line[n++] = '\n';
	/* One write per line so that lines of two processes do not interleave. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

void ember_log(enum ember_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > logger.max_level)
		return;
	va_start(ap, fmt);
	log_line(level, 0, fmt, ap);
	va_end(ap);
}

int ember_log_errno(enum ember_log_level level, int err, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	err = err < 0 ? err : err > 0 ? -err : -EIO;
	if (level > logger.max_level)
		return err;
	va_start(ap, fmt);
	log_line(level, err, fmt, ap);
	va_end(ap);
	errno = saved;
	return err;
}
