/* The nbd member against an independent server: nbdkit's memory plugin.
 * Data round trips, zeroing, flush, and bounds; read-only: a member opened
 * read-only refuses writes through its ops (as the layers above call
 * them) and the server's data stays, and a writable open of a read-only
 * export (nbdkit -r) is refused.  Skipped without nbdkit. */
#include "check.h"
#include "core/log.h"
#include "member/member.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* nbdkit's memory plugin on sock (-r: read-only), up once sock exists. */
static pid_t start_nbdkit(const char *sock, bool ro)
{
	pid_t pid = fork();

	if (pid == 0) {
		char *rw[] = {"nbdkit", "-f", "-U", (char *)sock, "memory", "8M", NULL};
		char *rdonly[] = {"nbdkit", "-f", "-r", "-U", (char *)sock, "memory", "8M", NULL};
		execvp("nbdkit", ro ? rdonly : rw);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		struct stat st;
		if (stat(sock, &st) == 0)
			break;
		usleep(50000);
	}
	return pid;
}

int main(void)
{
	char dir[] = "/tmp/uraid-nbdmember-XXXXXX", sock[128], uri[200];
	char rosock[128], rouri[200];
	unsigned char a[65536], b[65536];
	unsigned long long seed = 7;
	struct vol *v;
	pid_t pid, ropid = -1;

	if (system("command -v nbdkit >/dev/null 2>&1") != 0) {
		fprintf(stderr, "skip: nbdkit not installed\n");
		return 77;
	}
	if (!mkdtemp(dir))
		return 1;
	snprintf(sock, sizeof(sock), "%s/s", dir);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s", sock);
	pid = start_nbdkit(sock, false);

	CHECK_EQ(member_open(uri, 0, &v), 0);
	if (check_failures)
		goto out;
	CHECK_EQ(v->size, 8 << 20);
	CHECK(v->caps & VOL_CAP_MULTI_CONN);
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (unsigned char)check_rand(&seed);
	CHECK_EQ(vol_write(v, a, sizeof(a), 1 << 20, VOL_FUA), 0);
	CHECK_EQ(vol_read(v, b, sizeof(b), 1 << 20), 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	CHECK_EQ(vol_write_zeroes(v, 4096, (1 << 20) + 4096, 0), 0);
	CHECK_EQ(vol_read(v, b, sizeof(b), 1 << 20), 0);
	CHECK(memcmp(a, b, 4096) == 0 && b[4096] == 0 && b[8191] == 0);
	CHECK(memcmp(a + 8192, b + 8192, sizeof(a) - 8192) == 0);
	CHECK_EQ(vol_flush(v), 0);
	CHECK_EQ(vol_read(v, b, 4096, (8 << 20) - 2048), -EINVAL);
	vol_close(v);

	/* Read-only over a writable export: no op writes, the data stays. */
	int r = member_open(uri, MEMBER_READONLY, &v);
	CHECK_EQ(r, 0);
	if (r < 0)
		goto out;
	CHECK(v->caps & VOL_CAP_READONLY);
	memset(b, 0xa5, sizeof(b));
	CHECK_EQ(v->ops->write(v, b, 4096, 1 << 20, 0), -EROFS);
	CHECK_EQ(v->ops->trim(v, 4096, (1 << 20) + 8192, 0), -EROFS);
	CHECK_EQ(v->ops->write_zeroes(v, 4096, (1 << 20) + 16384, 0), -EROFS);
	CHECK_EQ(vol_read(v, b, sizeof(b), 1 << 20), 0);
	CHECK(memcmp(a + 8192, b + 8192, sizeof(a) - 8192) == 0);
	CHECK(memcmp(a, b, 4096) == 0);
	vol_close(v);

	/* A read-only export opens read-only, and is refused writable. */
	snprintf(rosock, sizeof(rosock), "%s/ro", dir);
	snprintf(rouri, sizeof(rouri), "nbd+unix:///?socket=%s", rosock);
	ropid = start_nbdkit(rosock, true);
	err_clear();
	r = member_open(rouri, 0, &v);
	CHECK_EQ(r, -EROFS);
	CHECK(strstr(err_detail(-EROFS), "read-only") != NULL);
	if (r == 0)
		vol_close(v); /* nbdkit waits for its clients to go */
	r = member_open(rouri, MEMBER_READONLY, &v);
	CHECK_EQ(r, 0);
	if (r == 0) {
		CHECK(v->caps & VOL_CAP_READONLY);
		CHECK_EQ(vol_read(v, b, 4096, 0), 0);
		vol_close(v);
	}

	/* A URI naming no server is a clear error, not a hang. */
	char bad[256];
	snprintf(bad, sizeof(bad), "nbd+unix:///?socket=%s/none", dir);
	CHECK(member_open(bad, 0, &v) < 0);
out:
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	if (ropid > 0) {
		kill(ropid, SIGTERM);
		waitpid(ropid, NULL, 0);
		unlink(rosock);
	}
	unlink(sock);
	rmdir(dir);
	return check_done();
}
