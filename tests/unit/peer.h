/* peer.h — for the unit tests that boot the Linux kernel in the linux-peer
 * VM (tests/linux-peer): whether they run, by tests/sh/peer-check.sh's
 * rule (the one rule; asked of that script, not copied here). */
#ifndef URAID_TEST_PEER_H
#define URAID_TEST_PEER_H

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

/* peer-check.sh's verdict for the source tree srcdir: 0 with the harness's
 * directory in peer ($LINUX_PEER, or srcdir's tests/linux-peer), 77 with
 * the reason to skip in why ("skip: ..."), or 1 when the script fails. */
static inline int peer_check(const char *srcdir, char *peer, size_t n, char *why, size_t wn)
{
	char cmd[1024], line[512] = "";
	FILE *p;
	int rc;

	snprintf(cmd, sizeof(cmd),
	         "SRCDIR='%s' sh -c '. \"$SRCDIR/tests/sh/peer-check.sh\"; echo \"$PEER\"'",
	         srcdir);
	p = popen(cmd, "r");
	if (!p)
		return 1;
	snprintf(why, wn, "skip: peer-check.sh said nothing");
	while (fgets(line, sizeof(line), p))
		line[strcspn(line, "\n")] = '\0', snprintf(why, wn, "%s", line);
	rc = pclose(p);
	rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
	if (rc == 0)
		snprintf(peer, n, "%s", why);
	return rc;
}

#endif
