/* log.c — stderr messages with a level, and the per-thread error detail. */
#include "log.h"

#include <stdio.h>
#include <string.h>

int log_verbosity = LOG_INFO;

static _Thread_local char err_buf[512];

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const char *const prefix[] = { "error: ", "warning: ", "", "debug: " };
	char line[1024];
	va_list ap;

	if ((int)lvl > log_verbosity)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One fprintf per message so that lines from threads do not interleave. */
	fprintf(stderr, "uraid: %s%s\n", prefix[lvl], line);
}

int err_set(int err, const char *fmt, ...)
{
	char msg[sizeof(err_buf)];
	va_list ap;

	/* Formatted apart first: the arguments may include err_detail(),
	 * which is err_buf itself ("%s: %s", name, err_detail(r)). */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(err_buf, msg, sizeof(msg));
	return err;
}

const char *err_detail(int err)
{
	if (err_buf[0])
		return err_buf;
	return strerror(err < 0 ? -err : err);
}

void err_clear(void)
{
	err_buf[0] = '\0';
}
