/* random.c — see random.h. */
#include "random.h"

#include "log.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

int random_fill(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return err_set(-errno, "getrandom: %s", strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
