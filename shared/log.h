/* SPDX-License-Identifier: Apache-2.0 */
/* Logging to stderr with a program tag and a level filter. */
#ifndef EMBER_SHARED_LOG_H
#define EMBER_SHARED_LOG_H

#include <stdarg.h>

enum ember_log_level {
	EMBER_LOG_ERROR = 0,
	EMBER_LOG_WARN,
	EMBER_LOG_INFO,
	EMBER_LOG_DEBUG,
};

/* Sets the tag printed before every line ("ember", "ember-symbolizer") and
 * the most verbose level that is printed. */
void ember_log_init(const char *tag, enum ember_log_level max_level);
void ember_log_set_level(enum ember_log_level max_level);
enum ember_log_level ember_log_get_level(void);

/* Called before a line is written, e.g. to clear a progress line. */
void ember_log_set_before_hook(void (*hook)(void));

void ember_log(enum ember_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Logs a line about a failure and returns it: err is a negative errno (a
 * positive one is taken as its negative), and %m in fmt stands for its
 * message. Returns the negative errno, so that one line reports and passes
 * a failure on:
 *
 *	if (err)
 *		return log_error_errno(err, "cannot write %s: %m", path);
 */
int ember_log_errno(enum ember_log_level level, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_error(...) ember_log(EMBER_LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  ember_log(EMBER_LOG_WARN, __VA_ARGS__)
#define log_info(...)  ember_log(EMBER_LOG_INFO, __VA_ARGS__)
#define log_debug(...) ember_log(EMBER_LOG_DEBUG, __VA_ARGS__)

#define log_error_errno(err, ...) ember_log_errno(EMBER_LOG_ERROR, (err), __VA_ARGS__)
#define log_warn_errno(err, ...)  ember_log_errno(EMBER_LOG_WARN, (err), __VA_ARGS__)
#define log_info_errno(err, ...)  ember_log_errno(EMBER_LOG_INFO, (err), __VA_ARGS__)
#define log_debug_errno(err, ...) ember_log_errno(EMBER_LOG_DEBUG, (err), __VA_ARGS__)

#endif
