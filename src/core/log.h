/* log.h — messages for the user, and the error detail that travels with a
 * negative errno up to the edge where it is printed.
 *
 * Internal functions return 0 or -errno.  Where the errno alone would not
 * tell the user what went wrong ("a.img: md superblock checksum mismatch"),
 * the function that knows records the detail with err_set() and returns its
 * value; the command-line edge prints err_detail() once, with context. */
#ifndef URAID_LOG_H
#define URAID_LOG_H

#include <stdarg.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern int log_verbosity; /* messages above this level are dropped */

void log_msg(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/* Record a detail for this thread's current error and return err (a
 * negative errno), so that `return err_set(-EINVAL, "...")` reads well. */
int err_set(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The last detail recorded on this thread, or strerror(-err) if none was
 * recorded since err_clear(). */
const char *err_detail(int err);
void err_clear(void);

#endif
